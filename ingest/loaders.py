"""Parsed records -> rows. Samples go by binary COPY, events by batched upserts.

Callers run these inside one transaction per artifact (ingest.services.artifact_ingest).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Iterable, Sequence

import numpy as np
from django.db import IntegrityError, connection, transaction

from ingest.parsers.types import (
    KIND_CONFIG_CHANGE,
    LANE_CONFIG,
    ConfigChangeRecord,
    EventRecord,
    SampleBlock,
)
from timeline.models import Artifact, ConfigChange, Event, Incident, Series
from timeline.rollups import rollups_rebuild, rollups_write

EVENT_BATCH = 2000
PG_EPOCH_MS = 946_684_800_000  # 2000-01-01T00:00:00Z, the zero of Postgres binary timestamps
COPY_CHUNK_ROWS = 500_000

# One binary COPY tuple: field count, then (length, value) for series_id, ts, value.
_COPY_ROW = np.dtype(
    [
        ("nfields", ">i2"),
        ("l1", ">i4"),
        ("series", ">i8"),
        ("l2", ">i4"),
        ("ts", ">i8"),
        ("l3", ">i4"),
        ("value", ">f8"),
    ]
)
COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
COPY_TRAILER = b"\xff\xff"


def fingerprint(kind: str, key: str) -> str:
    return hashlib.sha256(f"{kind}\x00{key}".encode()).hexdigest()


def config_change_event(rec: ConfigChangeRecord) -> EventRecord:
    """The timeline event that carries a config change."""
    old = "(unset)" if rec.old is None else rec.old
    new = "(unset)" if rec.new is None else rec.new
    if rec.old is None:
        title = f"{rec.key}={new} introduced"
    elif rec.new is None:
        title = f"{rec.key} removed (was {old})"
    else:
        title = f"{rec.key}: {old} -> {new}"
    body_lines = [f"`{rec.key}`: `{old}` → `{new}`", "", f"Recorded by {rec.source} `{rec.ref}`"]
    if rec.where:
        body_lines.append(f"at `{rec.where}`")
    if rec.condition:
        body_lines.append(f"under condition `{rec.condition}`")
    if rec.note:
        body_lines += ["", rec.note]
    key = "\x1f".join(
        [
            rec.source,
            rec.ref,
            rec.scope,
            rec.key,
            rec.condition,
            str(rec.old),
            str(rec.new),
            rec.at.isoformat(),
        ]
    )
    return EventRecord(
        kind=KIND_CONFIG_CHANGE,
        lane=LANE_CONFIG,
        at=rec.at,
        key=key,
        title=title[:500],
        body="\n".join(body_lines),
        attrs={
            "key": rec.key,
            "old": rec.old,
            "new": rec.new,
            "scope": rec.scope,
            "source": rec.source,
            "ref": rec.ref,
            "where": rec.where,
            "condition": rec.condition,
        },
    )


def load_events(
    incident: Incident, artifact: Artifact | None, records: Sequence[EventRecord]
) -> dict[str, int]:
    """Upsert events on (incident, fingerprint); returns fingerprint -> id for all of them."""
    rows = []
    seen: set[str] = set()
    for rec in records:
        fp = fingerprint(rec.kind, rec.key)
        if fp in seen:
            continue
        seen.add(fp)
        rows.append(
            Event(
                incident=incident,
                artifact=artifact,
                at=rec.at,
                ends_at=rec.ends_at,
                kind=rec.kind,
                lane=rec.lane,
                title=rec.title[:500],
                body=rec.body,
                attrs=_jsonable(rec.attrs),
                key=rec.key[:500],
                fingerprint=fp,
            )
        )
    ids: dict[str, int] = {}
    for start in range(0, len(rows), EVENT_BATCH):
        batch = rows[start : start + EVENT_BATCH]
        Event.objects.bulk_create(batch, ignore_conflicts=True)
        fps = [e.fingerprint for e in batch]
        ids.update(
            Event.objects.filter(incident=incident, fingerprint__in=fps).values_list(
                "fingerprint", "id"
            )
        )
    return ids


def load_config_changes(
    incident: Incident, artifact: Artifact | None, records: Sequence[ConfigChangeRecord]
) -> int:
    """Each change becomes a config_change event plus its ConfigChange row; returns new rows."""
    events = [config_change_event(r) for r in records]
    ids = load_events(incident, artifact, events)
    existing = set(
        ConfigChange.objects.filter(event_id__in=list(ids.values())).values_list(
            "event_id", flat=True
        )
    )
    rows = []
    for rec, ev in zip(records, events, strict=True):
        event_id = ids[fingerprint(ev.kind, ev.key)]
        if event_id in existing:
            continue
        existing.add(event_id)
        rows.append(
            ConfigChange(
                event_id=event_id,
                incident=incident,
                key=rec.key[:300],
                old_value=rec.old,
                new_value=rec.new,
                scope=rec.scope,
                source=rec.source,
                ref=rec.ref[:300],
                where=rec.where[:500],
                condition=rec.condition[:500],
            )
        )
    ConfigChange.objects.bulk_create(rows, batch_size=EVENT_BATCH)
    return len(rows)


def load_samples(
    incident: Incident, artifact: Artifact | None, blocks: Iterable[SampleBlock]
) -> int:
    """Create missing series, then COPY every sample in binary. Returns samples written.

    One COPY carries every series (no round trip or savepoint per series); the series rows are
    looked up and created in bulk, and their counts and time ranges updated in one statement."""
    blocks = [b for b in blocks if len(b.ts_ms)]
    if not blocks:
        return 0
    series_ids = series_ids_for(incident, artifact, blocks)
    columns = [
        (sid, np.frombuffer(b.ts_ms, dtype=np.int64), np.frombuffer(b.values, dtype=np.float64))
        for sid, b in zip(series_ids, blocks, strict=True)
    ]
    try:
        with transaction.atomic():
            _copy_into("timeline_sample", columns)
        written = {sid: len(ts) for sid, ts, _ in columns}
    except IntegrityError:
        # Rows for some of these times exist already (an overlapping export of the same
        # series): load through a staging table and keep the values already stored.
        written = _copy_merging(columns)
        # Some samples were already stored: recount those series' rollups from the table.
        rollups_rebuild([sid for sid, _, _ in columns])
    else:
        rollups_write(columns)
    _update_series_stats(columns, written)
    return sum(written.values())


def _series_key(name: str, labels: dict[str, str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    return name, tuple(sorted((str(k), str(v)) for k, v in labels.items()))


def series_ids_for(
    incident: Incident, artifact: Artifact | None, blocks: list[SampleBlock]
) -> list[int]:
    """The Series id of each block, creating the missing rows in one INSERT."""
    wanted = [_series_key(b.key.name[:300], dict(b.key.labels)) for b in blocks]

    def existing() -> dict[tuple[str, tuple[tuple[str, str], ...]], int]:
        rows = Series.objects.filter(
            incident=incident, name__in={name for name, _ in wanted}
        ).values_list("id", "name", "labels")
        return {_series_key(name, labels or {}): pk for pk, name, labels in rows}

    found = existing()
    missing: dict[tuple[str, tuple[tuple[str, str], ...]], SampleBlock] = {}
    for key, block in zip(wanted, blocks, strict=True):
        if key not in found:
            missing.setdefault(key, block)
    if missing:
        Series.objects.bulk_create(
            [
                Series(
                    incident=incident,
                    artifact=artifact,
                    name=name,
                    labels=dict(labels),
                    type=block.type[:20],
                    unit=block.unit[:40],
                    help=block.help,
                )
                for (name, labels), block in missing.items()
            ],
            ignore_conflicts=True,
        )
        found = existing()
    return [found[key] for key in wanted]


def _update_series_stats(
    columns: list[tuple[int, np.ndarray, np.ndarray]], written: dict[int, int]
) -> None:
    """Add what was written to each series' count and widen its time range."""
    stats: dict[int, list[int]] = {}
    for sid, ts, _ in columns:
        lo, hi = int(ts.min()), int(ts.max())
        if sid in stats:
            stats[sid][1] = min(stats[sid][1], lo)
            stats[sid][2] = max(stats[sid][2], hi)
        else:
            stats[sid] = [written.get(sid, 0), lo, hi]
    update_series_stats(stats)


def update_series_stats(stats: dict[int, list[int]]) -> None:
    """``stats``: series id -> [samples written, first ms, last ms]; one UPDATE for all."""
    if not stats:
        return
    ids = list(stats)
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE timeline_series AS s SET sample_count = s.sample_count + u.n, "
            "first_ts = LEAST(COALESCE(s.first_ts, u.lo), u.lo), "
            "last_ts = GREATEST(COALESCE(s.last_ts, u.hi), u.hi) "
            "FROM (SELECT unnest(%s::int8[]) AS id, unnest(%s::int8[]) AS n, "
            "to_timestamp(unnest(%s::int8[]) / 1000.0) AS lo, "
            "to_timestamp(unnest(%s::int8[]) / 1000.0) AS hi) AS u WHERE s.id = u.id",
            [
                ids,
                [stats[sid][0] for sid in ids],
                [stats[sid][1] for sid in ids],
                [stats[sid][2] for sid in ids],
            ],
        )


def copy_payload(series_id: int, ts_ms: np.ndarray, values: np.ndarray) -> bytes:
    """The rows of one series as Postgres binary COPY tuples (no header or trailer)."""
    return copy_rows(series_id, ts_ms, values)


def copy_rows(series: np.ndarray | int, ts_ms: np.ndarray, values: np.ndarray) -> bytes:
    """Rows as Postgres binary COPY tuples; ``series`` is one id or an id per row."""
    rows = np.empty(len(ts_ms), dtype=_COPY_ROW)
    rows["nfields"] = 3
    rows["l1"] = 8
    rows["series"] = series
    rows["l2"] = 8
    rows["ts"] = (ts_ms - PG_EPOCH_MS) * 1000
    rows["l3"] = 8
    rows["value"] = values
    return rows.tobytes()


def _copy_merging(columns: list[tuple[int, np.ndarray, np.ndarray]]) -> dict[int, int]:
    """COPY into a staging table, then insert what is not stored yet; returns rows written
    per series."""
    with connection.cursor() as cur:
        cur.execute(
            "CREATE TEMP TABLE IF NOT EXISTS sample_staging "
            "(LIKE timeline_sample INCLUDING DEFAULTS) ON COMMIT DROP"
        )
        cur.execute("TRUNCATE sample_staging")
    _copy_into("sample_staging", columns)
    with connection.cursor() as cur:
        cur.execute(
            "WITH ins AS (INSERT INTO timeline_sample (series_id, ts, value) "
            "SELECT DISTINCT ON (series_id, ts) series_id, ts, value FROM sample_staging "
            "ORDER BY series_id, ts ON CONFLICT (series_id, ts) DO NOTHING RETURNING series_id) "
            "SELECT series_id, count(*) FROM ins GROUP BY series_id"
        )
        return dict(cur.fetchall())


def _copy_into(table: str, columns: list[tuple[int, np.ndarray, np.ndarray]]) -> None:
    # The psycopg cursor under Django's wrapper; its errors are mapped to Django's own (so
    # that load_samples sees an IntegrityError on overlapping rows).
    sql = f"COPY {table} (series_id, ts, value) FROM STDIN (FORMAT BINARY)"
    with connection.cursor() as cur, connection.wrap_database_errors, cur.cursor.copy(sql) as copy:
        copy.write(COPY_HEADER)
        for series_id, ts_ms, values in columns:
            for start in range(0, len(ts_ms), COPY_CHUNK_ROWS):
                end = start + COPY_CHUNK_ROWS
                copy.write(copy_payload(series_id, ts_ms[start:end], values[start:end]))
        copy.write(COPY_TRAILER)


def _jsonable(value: object) -> object:
    """attrs must survive jsonb: datetimes become ISO strings, NaN and infinities None."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
