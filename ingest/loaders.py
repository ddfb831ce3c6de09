"""Parsed records -> rows: events by batched upserts, config changes with their events, and
samples through the metrics store (timeline.metrics, binary COPY).

Callers run these inside one transaction per artifact (ingest.services.loading).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Iterable, Sequence

import numpy as np

from evidence.vocabulary import EventKind, Lane
from ingest.parsers.types import (
    ConfigChangeRecord,
    EventRecord,
    SampleBlock,
)
from timeline.metrics.series import SeriesSpec, series_ids_for
from timeline.metrics.writer import samples_write
from timeline.models import Artifact, ConfigChange, Event, Incident

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
    """Create missing series, then store every sample (timeline.metrics: hourly chunks, one
    binary COPY for the new hours, a merge for hours already stored). Returns samples written."""
    blocks = [b for b in blocks if len(b.ts_ms)]
    if not blocks:
        return 0
    series_ids = series_ids_for(incident, artifact, [series_spec(b) for b in blocks])
    return samples_write(
        [
            (sid, np.frombuffer(b.ts_ms, dtype=np.int64), np.frombuffer(b.values, dtype=np.float64))
            for sid, b in zip(series_ids, blocks, strict=True)
        ]
    )


def series_spec(block: SampleBlock) -> SeriesSpec:
    """What the metrics store needs to know of a parsed block's series."""
    return SeriesSpec(block.key.name, block.key.labels, block.type, block.unit, block.help)


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
