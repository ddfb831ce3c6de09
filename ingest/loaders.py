"""Parsed records -> rows. Samples go by binary COPY, events by batched upserts.

Callers run these inside one transaction per artifact (ingest.services.artifact_ingest).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Iterable, Sequence

import numpy as np
from django.db import connection

from evidence.vocabulary import EventKind, Lane
from ingest.parsers.types import (
    ConfigChangeRecord,
    EventRecord,
    SampleBlock,
)
from timeline import samples
from timeline.models import Artifact, ConfigChange, Event, Incident, Series
from timeline.rollups import merge_rollups, rollup, rollups_delete_range, rollups_store

EVENT_BATCH = 2000


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
        kind=EventKind.CONFIG_CHANGE,
        lane=Lane.CONFIG,
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
    """Create missing series, then store every sample as hourly chunks (one binary COPY for
    the new hours, a merge for hours already stored). Returns samples written."""
    blocks = [b for b in blocks if len(b.ts_ms)]
    if not blocks:
        return 0
    series_ids = series_ids_for(incident, artifact, blocks)
    columns = [
        (sid, np.frombuffer(b.ts_ms, dtype=np.int64), np.frombuffer(b.values, dtype=np.float64))
        for sid, b in zip(series_ids, blocks, strict=True)
    ]
    store = SampleWriter()
    payload = store.prepare(columns)
    if payload:
        with connection.cursor() as cur, connection.wrap_database_errors:
            samples.copy_chunks(cur.cursor, payload)
    return store.finish()


class SampleWriter:
    """The samples of one load, written as hourly chunks (timeline.samples).

    ``prepare`` takes a batch of (series id, times in ms, values), merges the hours that are
    stored already (at once, on the caller's connection) and returns the COPY payload of the
    new hours, for the caller to send; ``finish`` writes the per-minute rollups and the series'
    counts and time ranges. A batch should hold whole hours: an hour met again in a later batch
    is merged into the stored chunk, correct but slower."""

    def __init__(self) -> None:
        self.stats: dict[int, list[int]] = {}  # series id -> [added, first ms, last ms]
        self.rollup_parts: dict[int, list[dict[str, np.ndarray]]] = {}

    def prepare(self, columns: Sequence[tuple[int, np.ndarray, np.ndarray]]) -> bytes:
        by_id: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        for sid, ts, values in columns:  # one series may come in several blocks
            if len(ts):
                by_id.setdefault(sid, []).append((ts, values))
        chunks: list[samples.Chunk] = []
        for sid, pieces in by_id.items():
            if len(pieces) == 1:
                ts, values = pieces[0]
            else:  # in the order given: the first value of a repeated time wins
                ts = np.concatenate([p[0] for p in pieces])
                values = np.concatenate([p[1] for p in pieces])
            chunks.extend(samples.split(sid, ts, values))
        if not chunks:
            return b""
        hours = [c.bucket_ms for c in chunks]
        stored = samples.stored_hours(sorted({c.series_id for c in chunks}), min(hours), max(hours))
        fresh = [c for c in chunks if (c.series_id, c.bucket_ms) not in stored]
        merged, added = samples.merge_into_stored(
            [c for c in chunks if (c.series_id, c.bucket_ms) in stored]
        )
        for c in fresh:
            added[c.series_id] = added.get(c.series_id, 0) + len(c.ts_ms)
        for c in chunks:
            lo, hi = int(c.ts_ms[0]), int(c.ts_ms[-1])
            entry = self.stats.get(c.series_id)
            if entry is None:
                self.stats[c.series_id] = [0, lo, hi]
            else:
                entry[1], entry[2] = min(entry[1], lo), max(entry[2], hi)
        for sid, n in added.items():
            self.stats[sid][0] += n
        # Rollups: the new hours of each series in one go; a merged hour replaces its minutes.
        by_series: dict[int, list[samples.Chunk]] = {}
        for c in fresh:
            by_series.setdefault(c.series_id, []).append(c)
        for sid, group in by_series.items():
            ts = np.concatenate([c.ts_ms for c in group])
            values = np.concatenate([c.values for c in group])
            self.rollup_parts.setdefault(sid, []).append(rollup(ts, values))
        for c in merged:
            self._replace_hour(c)
        return samples.copy_payload(fresh)

    def _replace_hour(self, chunk: samples.Chunk) -> None:
        lo, hi = chunk.bucket_ms, chunk.bucket_ms + samples.CHUNK_MS
        rollups_delete_range(chunk.series_id, lo, hi)
        parts = self.rollup_parts.setdefault(chunk.series_id, [])
        for i, part in enumerate(parts):
            outside = (part["bucket"] < lo) | (part["bucket"] >= hi)
            if not outside.all():
                parts[i] = {k: v[outside] for k, v in part.items()}
        parts.append(rollup(chunk.ts_ms, chunk.values))

    def finish(self) -> int:
        """Rollups and series upkeep; returns the samples added by this load."""
        rollups_store([(sid, merge_rollups(parts)) for sid, parts in self.rollup_parts.items()])
        update_series_stats(self.stats)
        return sum(n for n, _, _ in self.stats.values())


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
