"""Glue between the database and the pure correlation engine.

DB rows -> correlation.types -> engine.analyze -> one Analysis with its Findings, replaced
atomically; a run older than the incident's newest request never overwrites a newer one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from timeline.choices import EventKind, FindingKind, RunStatus
from timeline.correlation import engine
from timeline.correlation.types import (
    Change,
    HarnessRun,
    Inputs,
    LogSpan,
    Marks,
    Params,
    Request,
    Result,
    Series,
)
from timeline.models import Analysis, ConfigChange, Event, Finding, Incident

# Series the engine reads (wedge detection, load); everything else stays in the database.
ENGINE_SERIES = (
    "sglang:num_running_reqs",
    "sglang:gen_throughput",
    "DCGM_FI_DEV_GPU_UTIL",
    "nvidia_smi_utilization_gpu",
)


def load_inputs(incident: Incident, params: Params | None = None) -> Inputs:
    """Everything the engine needs for one incident, as plain values."""
    changes = tuple(
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
    requests = tuple(
        Request(
            ref=pk,
            rid=str((attrs or {}).get("rid", key)),
            received_at=at,
            finished_at=ends_at,
        )
        for pk, at, ends_at, attrs, key in Event.objects.filter(
            incident=incident, kind=EventKind.REQUEST
        )
        .order_by("at")
        .values_list("id", "at", "ends_at", "attrs", "key")
    )
    spans = tuple(
        LogSpan(ref=pk, start=at, end=ends_at or at)
        for pk, at, ends_at in Event.objects.filter(
            incident=incident, kind=EventKind.LOG_SPAN
        ).values_list("id", "at", "ends_at")
    )
    harness = tuple(
        HarnessRun(
            ref=pk,
            at=at,
            suite=str(attrs.get("suite", "")),
            case=str(attrs.get("case", "")),
            status=str(attrs.get("status", "")),
            score=attrs.get("score") if isinstance(attrs.get("score"), int | float) else None,
        )
        for pk, at, attrs in Event.objects.filter(incident=incident, kind=EventKind.HARNESS_RUN)
        .order_by("at")
        .values_list("id", "at", "attrs")
    )
    return Inputs(
        changes=changes,
        requests=requests,
        log_spans=spans,
        series=_load_series(incident),
        harness=harness,
        marks=Marks(last_good=incident.last_good_at, first_bad=incident.first_bad_at),
        params=params or Params(),
    )


def _load_series(incident: Incident) -> tuple[Series, ...]:
    out = []
    with connection.cursor() as cur:
        cur.execute(
            "SELECT id, name, labels FROM timeline_series WHERE incident_id = %s AND name = ANY(%s)"
            " ORDER BY name, id",
            [incident.pk, list(ENGINE_SERIES)],
        )
        series_rows = cur.fetchall()
        for series_id, name, labels in series_rows:
            cur.execute(
                "SELECT EXTRACT(EPOCH FROM ts)::float8, value FROM timeline_sample "
                "WHERE series_id = %s ORDER BY ts",
                [series_id],
            )
            rows = cur.fetchall()
            if not rows:
                continue
            arr = np.asarray(rows, dtype=np.float64)
            ts = tuple(dt.datetime.fromtimestamp(t, tz=dt.UTC) for t in arr[:, 0].tolist())
            if isinstance(labels, str):
                import json

                labels = json.loads(labels)
            out.append(
                Series(
                    name=name,
                    labels=tuple(sorted((str(k), str(v)) for k, v in (labels or {}).items())),
                    ts=ts,
                    values=tuple(arr[:, 1].tolist()),
                )
            )
    return tuple(out)


def _claim(incident: Incident, version: int) -> Analysis | None:
    analysis, _ = Analysis.objects.get_or_create(
        incident=incident, version=version, defaults={"status": RunStatus.PENDING}
    )
    claimed = Analysis.objects.filter(
        pk=analysis.pk, status__in=[RunStatus.PENDING, RunStatus.RUNNING]
    ).update(status=RunStatus.RUNNING, started_at=timezone.now(), error="")
    return analysis if claimed else None


def analysis_run(*, incident_id: int, version: int | None = None) -> Analysis | None:
    """Run the engine for one incident and store its findings. Returns None when superseded."""
    incident = Incident.objects.get(pk=incident_id)
    if version is None:
        version = incident.analysis_version
    if version < incident.analysis_version:
        return None  # a newer request exists; its run will do the work
    analysis = _claim(incident, version)
    if analysis is None:
        return Analysis.objects.get(incident=incident, version=version)
    params = Params()
    try:
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
        analysis.params = _params_json(params)
        analysis.result = payload
        analysis.finished_at = timezone.now()
        analysis.save()
        Analysis.objects.filter(
            incident=incident, version__lt=version, status=RunStatus.DONE
        ).update(status=RunStatus.SUPERSEDED)
    return analysis


def _params_json(params: Params) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        out[f.name] = value.total_seconds() if isinstance(value, dt.timedelta) else value
    return out


def _event_id(refs: tuple[int, ...] | int | None) -> int | None:
    if isinstance(refs, int):
        return refs or None
    return refs[0] if refs else None


def _findings(analysis: Analysis, result: Result) -> list[Finding]:
    rows: list[Finding] = []
    first_symptom = result.symptoms[0] if result.symptoms else None
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
                title=_change_title(s.change),
                explanation="\n".join(f"- {r}" for r in s.reasons),
                data={
                    "key": s.change.key,
                    "old": s.change.old,
                    "new": s.change.new,
                    "sources": list(s.sources or s.change.sources),
                    "reasons": list(s.reasons),
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
                title=_change_title(e.change),
                explanation=e.reason,
                data={"key": e.change.key, "old": e.change.old, "new": e.change.new},
            )
        )
    for rank, sym in enumerate(result.symptoms, start=1):
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


def _change_title(c: Change) -> str:
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
