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
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
_COPY_TRAILER = b"\xff\xff"


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
    """Create missing series, then COPY every sample in binary. Returns samples written."""
    total = 0
    for block in blocks:
        n = len(block.ts_ms)
        if n == 0:
            continue
        series = _series_for(incident, artifact, block)
        ts = np.frombuffer(block.ts_ms, dtype=np.int64) if n else np.empty(0, np.int64)
        values = np.frombuffer(block.values, dtype=np.float64)
        _copy_samples(series.pk, ts, values)
        first = dt.datetime.fromtimestamp(int(ts.min()) / 1000, tz=dt.UTC)
        last = dt.datetime.fromtimestamp(int(ts.max()) / 1000, tz=dt.UTC)
        with connection.cursor() as cur:
            cur.execute(
                "UPDATE timeline_series SET sample_count = sample_count + %s, "
                "first_ts = LEAST(COALESCE(first_ts, %s), %s), "
                "last_ts = GREATEST(COALESCE(last_ts, %s), %s) WHERE id = %s",
                [n, first, first, last, last, series.pk],
            )
        total += n
    return total


def _series_for(incident: Incident, artifact: Artifact | None, block: SampleBlock) -> Series:
    labels = dict(block.key.labels)
    series, created = Series.objects.get_or_create(
        incident=incident,
        name=block.key.name[:300],
        labels=labels,
        defaults={
            "artifact": artifact,
            "type": block.type[:20],
            "unit": block.unit[:40],
            "help": block.help,
        },
    )
    return series


def copy_payload(series_id: int, ts_ms: np.ndarray, values: np.ndarray) -> bytes:
    """The rows of one series as Postgres binary COPY tuples (no header or trailer)."""
    rows = np.empty(len(ts_ms), dtype=_COPY_ROW)
    rows["nfields"] = 3
    rows["l1"] = 8
    rows["series"] = series_id
    rows["l2"] = 8
    rows["ts"] = (ts_ms - PG_EPOCH_MS) * 1000
    rows["l3"] = 8
    rows["value"] = values
    return rows.tobytes()


def _copy_samples(series_id: int, ts_ms: np.ndarray, values: np.ndarray) -> None:
    """COPY straight into the table; if rows for these times exist already (an overlapping
    export of the same series), load through a staging table and keep the first value."""
    try:
        with transaction.atomic():
            _copy_into("timeline_sample", series_id, ts_ms, values)
    except IntegrityError:
        with connection.cursor() as cur:
            cur.execute(
                "CREATE TEMP TABLE IF NOT EXISTS sample_staging "
                "(LIKE timeline_sample INCLUDING DEFAULTS) ON COMMIT DROP"
            )
            cur.execute("TRUNCATE sample_staging")
        _copy_into("sample_staging", series_id, ts_ms, values)
        with connection.cursor() as cur:
            cur.execute(
                "INSERT INTO timeline_sample (series_id, ts, value) "
                "SELECT DISTINCT ON (series_id, ts) series_id, ts, value FROM sample_staging "
                "ON CONFLICT (series_id, ts) DO NOTHING"
            )


def _copy_into(table: str, series_id: int, ts_ms: np.ndarray, values: np.ndarray) -> None:
    with connection.cursor() as cur:
        pg = cur.cursor  # the psycopg cursor under Django's wrapper
        with pg.copy(f"COPY {table} (series_id, ts, value) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(_COPY_HEADER)
            for start in range(0, len(ts_ms), COPY_CHUNK_ROWS):
                end = start + COPY_CHUNK_ROWS
                copy.write(copy_payload(series_id, ts_ms[start:end], values[start:end]))
            copy.write(_COPY_TRAILER)


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
