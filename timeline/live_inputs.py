"""The server starts and the symptom-classified server errors of an incident, read for the
correlation engine (issue 13: what actually ran, start by start)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from evidence.vocabulary import EventKind, SymptomKind
from timeline.correlation.types import LogSymptom, ServerStart, from_us
from timeline.models import Incident


def _json(raw: Any) -> Any:
    return json.loads(raw) if isinstance(raw, str | bytes) else raw


_SYMPTOM_KINDS = frozenset(SymptomKind)


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def iso_or_none(value: Any) -> dt.datetime | None:
    """An aware time from its ISO text in attrs (None: missing, unreadable or naive)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.utcoffset() is not None else None


def load_live(
    cur: Any, incident: Incident
) -> tuple[tuple[ServerStart, ...], tuple[LogSymptom, ...]]:
    """The server starts (their logged configuration) and the server errors the log parser
    classified as symptoms (crash, watchdog timeout, OOM ...)."""
    cur.execute(
        "SELECT e.id, (EXTRACT(EPOCH FROM e.at) * 1000000)::int8, "
        "(EXTRACT(EPOCH FROM e.ends_at) * 1000000)::int8, e.attrs, COALESCE(a.name, ''), "
        "COALESCE(e.artifact_id, 0) "
        "FROM timeline_event e LEFT JOIN timeline_artifact a ON a.id = e.artifact_id "
        "WHERE e.incident_id = %s AND e.kind = %s ORDER BY e.at, e.id",
        [incident.pk, EventKind.SERVER_START],
    )
    starts = []
    for pk, at, ends, raw, name, source in cur.fetchall():
        attrs = _json(raw) or {}
        line = attrs.get("line")
        starts.append(
            ServerStart(
                ref=pk,
                at=from_us(at),
                line=line if isinstance(line, int) else 0,
                server_args=_str_map(attrs.get("server_args")),
                env=_str_map(attrs.get("env")),
                ready_at=iso_or_none(attrs.get("ready_at")),
                ends_at=None if ends is None else from_us(ends),
                where=name,
                source=source,
                shut_down=bool(attrs.get("shutdown_at")),
            )
        )
    cur.execute(
        "SELECT id, (EXTRACT(EPOCH FROM at) * 1000000)::int8, attrs->>'symptom', title, "
        "COALESCE(artifact_id, 0) "
        "FROM timeline_event WHERE incident_id = %s AND kind = %s "
        "AND attrs ? 'symptom' ORDER BY at, id",
        [incident.pk, EventKind.LOG_ERROR],
    )
    errors = tuple(
        LogSymptom(ref=pk, at=from_us(at), kind=SymptomKind(kind), title=title, source=source)
        for pk, at, kind, title, source in cur.fetchall()
        if kind in _SYMPTOM_KINDS
    )
    return tuple(starts), errors
