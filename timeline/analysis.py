"""Glue between the database and the pure correlation engine.

DB rows -> correlation.types -> engine.analyze -> one Analysis with its Findings, replaced
atomically; a run older than the incident's newest request never overwrites a newer one.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from evidence.vocabulary import EventKind
from ingest.parsers.prometheus.bulk import gc_paused
from timeline import live_inputs, runs
from timeline.choices import FindingKind, RunStatus
from timeline.correlation import engine
from timeline.correlation import weights as correlation_weights
from timeline.correlation.config_state import merge_changes
from timeline.correlation.types import (
    Change,
    Floats,
    HarnessRuns,
    Inputs,
    LogSpan,
    Marks,
    Params,
    Requests,
    Result,
    Series,
    Suspect,
    Texts,
    Times,
    from_us,
)
from timeline.metrics import packing, reader, remote
from timeline.models import Analysis, ConfigChange, Finding, Incident

# Series the engine reads (wedge detection, load); everything else stays in the database.
ENGINE_SERIES = (
    "sglang:num_running_reqs",
    "sglang:gen_throughput",
    "DCGM_FI_DEV_GPU_UTIL",
    "nvidia_smi_utilization_gpu",
)


def load_changes(incident: Incident) -> tuple[Change, ...]:
    """The incident's config changes as the engine sees them, one per recording source."""
    return tuple(
        Change(
            ref=c.event_id,
            key=c.key,
            old=c.old_value,
            new=c.new_value,
            at=c.event.at,
            scope=c.scope,
            sources=(f"{c.source}:{c.ref}",),
        )
        for c in ConfigChange.objects.filter(incident=incident)
        .select_related("event")
        .order_by("event__at", "event_id")
    )


def merged_changes(incident: Incident) -> list[Change]:
    """The incident's config changes merged as the analysis merges them (same key and value
    recorded by several sources within its window): one per change, its sources listed."""
    return merge_changes(load_changes(incident), Params().same_change_window)


def load_inputs(incident: Incident, params: Params | None = None) -> Inputs:
    """Everything the engine needs for one incident, as plain values.

    Requests and harness runs (a million of them in a big incident) come back as columns
    (:class:`Requests`, :class:`HarnessRuns`): one aggregate row per kind whose numbers are
    binary arrays decoded by numpy and whose strings are one text each, split once; no Python
    object per row. Only the attrs the engine reads are extracted, in SQL. Outside a
    transaction those two queries run in parallel with the rest, on connections of their own.
    """
    loads = (_load_requests_from, _load_harness_from)
    pool = None
    pending: list[Future[Any]] = []
    if not connection.in_atomic_block:
        # The two big aggregates run (and are decoded) on connections of their own, on the
        # server's other cores, while this thread reads the rest. Inside a transaction they
        # must see its writes: then they run here, one after the other.
        pool = ThreadPoolExecutor(max_workers=len(loads), thread_name_prefix="load_inputs")
        pending = [pool.submit(_on_own_connection, load, incident) for load in loads]
    try:
        changes = load_changes(incident)
        series = _load_series(incident)
        with connection.cursor() as cur:
            cur.execute(
                "SELECT id, (EXTRACT(EPOCH FROM at) * 1000000)::int8, "
                "(EXTRACT(EPOCH FROM COALESCE(ends_at, at)) * 1000000)::int8, "
                "COALESCE(artifact_id, 0), attrs->'finishes', attrs->>'zone_note' "
                "FROM timeline_event "
                # (a router's log span says nothing of whether the servers were logging)
                "WHERE incident_id = %s AND kind = %s AND NOT attrs ? 'router'",
                [incident.pk, EventKind.LOG_SPAN],
            )
            rows = cur.fetchall()
            spans = tuple(
                LogSpan(ref=pk, start=from_us(at), end=from_us(ends), source=source)
                for pk, at, ends, source, _, _ in rows
            )
            finishes = _orphan_finishes(rows)
            zones = tuple(note for *_, note in rows if note)
            starts, errors = live_inputs.load_live(cur, incident)
            # Remote series the engine reads: their raw samples for the incident's window, not
            # stored.
            remote_series, remote_warnings = remote.engine_series(incident, ENGINE_SERIES)
            unread_count, unread = _config_unread(cur, incident)
            if pool is None:
                requests = _load_requests_from(cur, incident)
                harness = _load_harness_from(cur, incident)
            else:
                requests, harness = pending[0].result(), pending[1].result()
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return Inputs(
        changes=changes,
        requests=requests,
        log_spans=spans,
        series=series + remote_series,
        harness=harness,
        starts=starts,
        errors=errors,
        marks=Marks(last_good=incident.last_good_at, first_bad=incident.first_bad_at),
        params=params or Params(),
        warnings=remote_warnings + unread + zones,
        unread_changes=unread_count,
        finishes=finishes,
    )


def _orphan_finishes(rows: Sequence[Any]) -> tuple[tuple[int, str, dt.datetime], ...]:
    """The Finish lines each server log kept without their Receive (a rotated log's first
    lines): (its source, rid, time)."""
    out = []
    for row in rows:
        source, raw = row[3], _json(row[4])
        if isinstance(raw, dict):
            for rid, stamp in raw.items():
                when = live_inputs.iso_or_none(stamp)
                if when is not None:
                    out.append((source, str(rid), when))
    return tuple(out)


def _config_unread(cur: Any, incident: Incident) -> tuple[int, tuple[str, ...]]:
    """How many config changes the incident's files show but could not read (a saved
    `git log -p` whose hunks lack the lines around a change), and the caveat saying so: the
    suspects may miss them."""
    cur.execute(
        "SELECT COALESCE(SUM((counts->>'config_unread')::int), 0), "
        "COUNT(*) FILTER (WHERE counts ? 'config_unread') FROM timeline_artifact "
        "WHERE incident_id = %s AND status = %s",
        [incident.pk, RunStatus.DONE],
    )
    row = cur.fetchone()
    total, files = (int(row[0]), int(row[1])) if row else (0, 0)
    if not total:
        return 0, ()
    return total, (
        f"{total} config file change(s) shown in {files} git log file(s) could not be read "
        "(their patches lack the lines around the change; each is named in its file's "
        "warnings): the suspects may miss them. Saved with `git log -p --parents "
        "--diff-merges=first-parent --unified=100000`, or given as the repository, they are "
        "read whole",
    )


# Binary timestamps count microseconds from 2000-01-01; 'infinity' is the largest int64, which
# is also what the request columns hold for "not finished".
_PG_EPOCH_US = packing.PG_EPOCH_MS * 1000
_PG_INFINITY = Requests.NOT_FINISHED
_SEP = "\n"


def _json(raw: Any) -> Any:
    """A jsonb value from the raw cursor: Django's loader hands jsonb over as text."""
    return json.loads(raw) if isinstance(raw, str | bytes) else raw


def _int8s(raw: bytes | memoryview | None) -> np.ndarray:
    """An ``array_send`` of a one-dimensional int8 or timestamptz array with no NULL, as int64
    (its header: dimensions, NULL flag, element type, then length and lower bound; each
    element: a length and 8 big-endian bytes)."""
    if raw is None:
        return np.zeros(0, dtype=np.int64)
    head = np.frombuffer(raw, dtype=">i4", count=3)
    if head[0] == 0:
        return np.zeros(0, dtype=np.int64)
    if head[0] != 1 or head[1] != 0:
        raise ValueError("expected a one-dimensional array with no NULL")
    n = int(np.frombuffer(raw, dtype=">i4", count=1, offset=12)[0])
    cells = np.frombuffer(raw, dtype=[("len", ">i4"), ("v", ">i8")], count=n, offset=20)
    return cells["v"].astype(np.int64)


def _unix_us(raw: bytes | memoryview | None) -> np.ndarray:
    """An ``array_send`` of timestamptz as microseconds since the Unix epoch ('infinity' kept
    as the largest int64)."""
    pg = _int8s(raw)
    return np.where(pg == _PG_INFINITY, _PG_INFINITY, pg + _PG_EPOCH_US)


def _texts(joined: str | None, n: int) -> list[str] | None:
    """``string_agg(..., '\\n')`` of n values split back, or None when a value held the
    separator (the caller then reads those values one row each)."""
    if n == 0:
        return []
    parts = (joined or "").split(_SEP)
    return parts if len(parts) == n else None


def _binary_row(query: str, params: dict[str, Any]) -> tuple[Any, ...]:
    """The one row of an aggregate query, in binary: bytea as bytes (Django's cursor binds on
    the client, which returns every value as text: bytea hex-encoded, twice the bytes and a
    decode). Same connection, so the same transaction."""
    (row,) = reader.binary_rows(query, params)  # an aggregate without GROUP BY: one row
    return tuple(row)


# One aggregate row per kind. A value that is not a JSON string is listed by id (the last
# column) and read again on its own.
_REQUESTS_QUERY = (
    "SELECT array_send(array_agg(id)), array_send(array_agg(at)), "
    "array_send(array_agg(COALESCE(ends_at, 'infinity'))), "
    "string_agg(COALESCE(attrs->>'rid', key), %(sep)s), "
    "array_agg(id) FILTER (WHERE jsonb_typeof(attrs->'rid') <> 'string'), "
    "array_send(array_agg(COALESCE(artifact_id, 0)::int8)) "
    "FROM timeline_event WHERE incident_id = %(incident)s AND kind = %(kind)s"
)
_HARNESS_QUERY = (
    "SELECT array_send(array_agg(id)), array_send(array_agg(at)), "
    "string_agg(COALESCE(attrs->>'suite', ''), %(sep)s), "
    "string_agg(COALESCE(attrs->>'case', ''), %(sep)s), "
    "string_agg(COALESCE(attrs->>'status', ''), %(sep)s), "
    "string_agg(CASE jsonb_typeof(attrs->'score') WHEN 'number' THEN attrs->>'score' "
    "WHEN 'boolean' THEN (CASE attrs->>'score' WHEN 'true' THEN '1' ELSE '0' END) "
    "ELSE 'nan' END, ','), "
    "array_agg(id) FILTER (WHERE jsonb_typeof(attrs->'suite') <> 'string' "
    "OR jsonb_typeof(attrs->'case') <> 'string' OR jsonb_typeof(attrs->'status') <> 'string') "
    "FROM timeline_event WHERE incident_id = %(incident)s AND kind = %(kind)s"
)


def _load_requests_from(cur: Any, incident: Incident) -> Requests:
    row = _binary_row(_REQUESTS_QUERY, _bulk_params(incident, EventKind.REQUEST))
    return _load_requests(cur, incident, row)


def _load_harness_from(cur: Any, incident: Incident) -> HarnessRuns:
    row = _binary_row(_HARNESS_QUERY, _bulk_params(incident, EventKind.HARNESS_RUN))
    return _load_harness(cur, incident, row)


def _bulk_params(incident: Incident, kind: EventKind) -> dict[str, Any]:
    return {"sep": _SEP, "incident": incident.pk, "kind": kind.value}


def _on_own_connection(load: Callable[[Any, Incident], Any], incident: Incident) -> Any:
    """``load(cursor, incident)`` on this thread's own connection, closed after."""
    try:
        with connection.cursor() as cur:
            return load(cur, incident)
    finally:
        connection.close()


def _load_requests(cur: Any, incident: Incident, row: tuple[Any, ...]) -> Requests:
    """The incident's requests in time order (ties by id) as columns. ``rid`` is
    ``str(attrs.get("rid", key))``: the text when it is a JSON string (nearly always), else
    worked out in Python for those rows only."""
    ids_raw, at_raw, ends_raw, rids_joined, odd, sources_raw = row
    ids = _int8s(ids_raw)
    at = _unix_us(at_raw)
    ends = _unix_us(ends_raw)
    sources = _int8s(sources_raw)
    order = np.lexsort((ids, at))
    ids, at, ends, sources = ids[order], at[order], ends[order], sources[order]
    texts = Texts.split(rids_joined or "", _SEP, len(order))
    if texts is not None and not odd:
        return Requests(ids, at, ends, texts.take(order), sources)
    # A rid that is not a JSON string, or holds the separator: those read one row each.
    cur.execute(
        "SELECT id, key, attrs->>'rid', jsonb_typeof(attrs->'rid') FROM timeline_event "
        "WHERE incident_id = %s AND kind = %s AND id = ANY(%s)",
        [incident.pk, EventKind.REQUEST, ids.tolist() if texts is None else list(odd)],
    )
    patch = {pk: _rid(rid, rid_type, key) for pk, key, rid, rid_type in cur.fetchall()}
    rids = [""] * len(order) if texts is None else texts.take(order).tolist()
    for i in np.flatnonzero(np.isin(ids, list(patch))).tolist():
        rids[i] = patch[int(ids[i])]
    return Requests(ids, at, ends, rids, sources)


_HARNESS_STRINGS = ("suite", "case", "status")


def _load_harness(cur: Any, incident: Incident, row: tuple[Any, ...]) -> HarnessRuns:
    """The incident's harness runs in time order (ties by id) as columns: ``suite``, ``case``
    and ``status`` are ``str(attrs.get(name, ""))`` and ``score`` ``attrs.get("score")`` when a
    number (bools included), as the engine reads them."""
    ids = _int8s(row[0])
    at = _unix_us(row[1])
    n = ids.size
    columns = [_texts(joined, n) for joined in row[2 : 2 + len(_HARNESS_STRINGS)]]
    scores = np.array(row[5].split(","), dtype=np.float64) if n else np.zeros(0)
    odd_ids = row[6] or []
    if odd_ids or any(c is None for c in columns):
        # A value that is not a JSON string (or holds the separator): these rows one by one.
        cur.execute(
            "SELECT id, attrs->>'suite', jsonb_typeof(attrs->'suite'), attrs->>'case', "
            "jsonb_typeof(attrs->'case'), attrs->>'status', jsonb_typeof(attrs->'status') "
            "FROM timeline_event WHERE incident_id = %s AND kind = %s AND id = ANY(%s)",
            [
                incident.pk,
                EventKind.HARNESS_RUN,
                list(odd_ids) if all(c is not None for c in columns) else ids.tolist(),
            ],
        )
        position = {pk: i for i, pk in enumerate(ids.tolist())}
        filled = [[""] * n if c is None else c for c in columns]
        for r in cur.fetchall():
            for k in range(len(_HARNESS_STRINGS)):
                filled[k][position[r[0]]] = _attr_str(r[1 + 2 * k], r[2 + 2 * k])
        columns = list(filled)
    order = np.lexsort((ids, at))
    suite, case, status = columns
    if np.array_equal(order, np.arange(n)):  # stored in time order: nothing to move
        return HarnessRuns(ids, at, suite, case, status, scores)  # type: ignore[arg-type]
    suite, case, status = (np.array(c, dtype=object)[order].tolist() for c in columns)
    return HarnessRuns(ids[order], at[order], suite, case, status, scores[order])


def _rid(rid: str | None, rid_type: str | None, key: str) -> str:
    """``str(attrs.get("rid", key))``."""
    if rid_type is None:
        return key
    return _attr_str(rid, rid_type)


def _attr_str(text: str | None, json_type: str | None) -> str:
    """``str(attrs.get(name, ""))`` from ``attrs->>name`` and ``jsonb_typeof(attrs->name)``."""
    if json_type is None:
        return ""
    if json_type == "string":
        return text or ""
    return str(None if text is None else json.loads(text))


def _load_series(incident: Incident) -> tuple[Series, ...]:
    """The engine's series with all their samples, as the numpy arrays timeline.metrics reads
    (:class:`Times` in ms, :class:`Floats`): no Python object per sample."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT id, name, labels, origin FROM timeline_series "
            "WHERE incident_id = %s AND name = ANY(%s) ORDER BY name, id",
            [incident.pk, list(ENGINE_SERIES)],
        )
        series_rows = cur.fetchall()
        if not series_rows:
            return ()
    stored = reader.samples_read([row[0] for row in series_rows])
    out = []
    for series_id, name, labels, origin in series_rows:
        if series_id not in stored:
            continue
        ts_ms, values = stored[series_id]
        if ts_ms.size > 1 and not (ts_ms[1:] > ts_ms[:-1]).all():
            order = np.argsort(ts_ms, kind="stable")
            ts_ms, values = ts_ms[order], values[order]
        label_map = _json(labels) or {}
        out.append(
            Series(
                name=name,
                labels=tuple(sorted((str(k), str(v)) for k, v in label_map.items())),
                ts=Times(ts_ms.astype(np.int64, copy=False)),
                values=Floats(values.astype(np.float64, copy=False)),
                origin=origin or "",
            )
        )
    return tuple(out)


def _claim(incident: Incident, version: int, worker: str) -> Analysis | None:
    analysis, _ = Analysis.objects.get_or_create(
        incident=incident, version=version, defaults={"status": RunStatus.PENDING}
    )
    now = timezone.now()
    claimed = Analysis.objects.filter(
        pk=analysis.pk, status__in=[RunStatus.PENDING, RunStatus.RUNNING]
    ).update(
        status=RunStatus.RUNNING,
        started_at=now,
        error="",
        claimed_by=worker,
        heartbeat_at=now,
        attempts=F("attempts") + 1,
    )
    return analysis if claimed else None


def analysis_run(*, incident_id: int, version: int | None = None) -> Analysis | None:
    """Run the engine for one incident and store its findings. Returns None when superseded."""
    incident = Incident.objects.get(pk=incident_id)
    if version is None:
        version = incident.analysis_version
    if version < incident.analysis_version:
        return None  # a newer request exists; its run will do the work
    worker = runs.worker_id()
    analysis = _claim(incident, version, worker)
    if analysis is None:
        return Analysis.objects.get(incident=incident, version=version)
    with runs.Heartbeat("timeline_analysis", analysis.pk, worker):  # alive while it runs
        return _run(incident, version, analysis)


def _run(incident: Incident, version: int, analysis: Analysis) -> Analysis | None:
    params = Params()
    try:
        # Cycle collector off: a big incident makes a hundred thousand symptoms on top of its
        # columns, and the collector's walks of them were a third of the engine's time, for no
        # garbage (nothing here makes reference cycles).
        with gc_paused():
            inputs = load_inputs(incident, params)
            result = engine.analyze(inputs)
            payload = engine.result_to_json(result, incident.slug)
    except Exception as exc:
        Analysis.objects.filter(pk=analysis.pk).update(
            status=RunStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:5000],
            finished_at=timezone.now(),
        )
        raise
    with transaction.atomic():
        Incident.objects.select_for_update().get(pk=incident.pk)
        newer = Analysis.objects.filter(
            incident=incident, version__gt=version, status=RunStatus.DONE
        ).exists()
        if newer:
            Analysis.objects.filter(pk=analysis.pk).update(
                status=RunStatus.SUPERSEDED, finished_at=timezone.now()
            )
            return None
        Finding.objects.filter(analysis=analysis).delete()
        Finding.objects.bulk_create(_findings(analysis, result))
        analysis.status = RunStatus.DONE
        analysis.params = correlation_weights.params_json(params)
        analysis.weights_version = correlation_weights.WEIGHTS_VERSION
        analysis.weights = correlation_weights.weights(params)
        analysis.result = payload
        analysis.finished_at = timezone.now()
        analysis.save(  # not the claim's fields: the row read before the claim has old ones
            update_fields=[
                "status",
                "params",
                "weights_version",
                "weights",
                "result",
                "finished_at",
            ]
        )
        Analysis.objects.filter(
            incident=incident, version__lt=version, status=RunStatus.DONE
        ).update(status=RunStatus.SUPERSEDED)
    return analysis


def _event_id(refs: tuple[int, ...] | int | None) -> int | None:
    if isinstance(refs, int):
        return refs or None
    return refs[0] if refs else None


MAX_SYMPTOM_FINDINGS = 500


def _findings(analysis: Analysis, result: Result) -> list[Finding]:
    rows: list[Finding] = []
    first_symptom = result.symptoms[0] if result.symptoms else None
    counts: dict[str, int] = {}
    for sym in result.symptoms:
        counts[sym.kind] = counts.get(sym.kind, 0) + 1
    rows.append(
        Finding(
            analysis=analysis,
            kind=FindingKind.FIRST_BAD,
            at=result.first_bad,
            title="First bad moment" if result.first_bad else "First bad moment unknown",
            explanation=result.first_bad_reason,
            event_id=_event_id(first_symptom.refs)
            if first_symptom and result.first_bad and first_symptom.at == result.first_bad
            else None,
            data={
                "symptom_counts": dict(sorted(counts.items())),
                "symptoms_total": len(result.symptoms),
            },
        )
    )
    rows.append(
        Finding(
            analysis=analysis,
            kind=FindingKind.LAST_GOOD,
            at=result.last_good,
            title="Last known good" if result.last_good else "Last known good unknown",
            explanation=result.last_good_reason,
        )
    )
    for rank, s in enumerate(result.suspects, start=1):
        rows.append(
            Finding(
                analysis=analysis,
                kind=FindingKind.SUSPECT,
                rank=rank,
                score=s.score,
                at=s.change.at,
                event_id=s.change.ref,
                title=change_title(s.change),
                explanation="\n".join(f"- {r}" for r in s.reasons),
                data={
                    "key": s.change.key,
                    "old": s.change.old,
                    "new": s.change.new,
                    "sources": list(s.sources or s.change.sources),
                    "reasons": list(s.reasons),
                    **live_data(s),
                },
            )
        )
    for rank, e in enumerate(result.excluded, start=1):
        rows.append(
            Finding(
                analysis=analysis,
                kind=FindingKind.EXCLUDED,
                rank=rank,
                at=e.change.at,
                event_id=e.change.ref,
                title=change_title(e.change),
                explanation=e.reason,
                data={"key": e.change.key, "old": e.change.old, "new": e.change.new},
            )
        )
    # A long incident can hold thousands of symptoms; the first ones are findings of their own,
    # the rest are counted on the first-bad finding (writing each one costs more than the run).
    for rank, sym in enumerate(result.symptoms[:MAX_SYMPTOM_FINDINGS], start=1):
        rows.append(
            Finding(
                analysis=analysis,
                kind=FindingKind.SYMPTOM,
                rank=rank,
                at=sym.at,
                event_id=_event_id(sym.refs),
                title=sym.title[:500],
                data={
                    "kind": sym.kind,
                    "ends_at": sym.ends_at.isoformat() if sym.ends_at else None,
                    "refs": list(sym.refs[:50]),
                },
            )
        )
    for rank, r in enumerate(result.ruled_out, start=1):
        rows.append(
            Finding(
                analysis=analysis,
                kind=FindingKind.RULED_OUT,
                rank=rank,
                title=f"{r.hypothesis} ruled out",
                explanation="\n".join(f"- {line}" for line in r.evidence),
                data={
                    "hypothesis": r.hypothesis,
                    "evidence": list(r.evidence),
                    "refs": list(r.refs[:200]),
                },
            )
        )
    for rank, w in enumerate(result.warnings, start=1):
        rows.append(
            Finding(
                analysis=analysis, kind=FindingKind.WARNING, rank=rank, title=w[:500], explanation=w
            )
        )
    return rows


def live_data(s: Suspect) -> dict[str, Any]:
    """What the server logs showed about a suspect (empty without server starts)."""
    return engine.live_json(s)


def change_title(c: Change) -> str:
    old = "(unset)" if c.old is None else c.old
    new = "(unset)" if c.new is None else c.new
    return f"{c.key}: {old} → {new}"[:500]


def current_analysis(incident: Incident) -> Analysis | None:
    """The newest finished analysis of the incident."""
    return (
        Analysis.objects.filter(incident=incident, status=RunStatus.DONE)
        .order_by("-version")
        .first()
    )


def public_json(incident: Incident, analysis: Analysis | None) -> dict[str, Any]:
    """The analysis in its public shape (``analyze --json`` and the API): the engine's result
    and the weights that produced it, ``{"version": ..., "values": {...}}``; ``weights`` is null
    when there is no analysis or it was stored before the weights were versioned."""
    if analysis is None:
        return {
            "incident": incident.slug,
            "first_bad": None,
            "first_bad_reason": "",
            "last_good": None,
            "last_good_reason": "",
            "warnings": [],
            "suspects": [],
            "excluded": [],
            "ruled_out": [],
            "bisect": [],
            "drift": [],
            "restarts": [],
            "weights": None,
        }
    recorded = analysis.weights_version is not None
    return {
        **analysis.result,
        "weights": {"version": analysis.weights_version, "values": analysis.weights}
        if recorded
        else None,
    }
