"""Work left behind, handed on: run by beat every REAPER_INTERVAL_S (``ingest.reap_stale_runs``).

- A load or an analysis whose worker stopped beating (timeline.runs: killed, out of memory, a
  lost machine) goes back to pending and is queued again, at once rather than after the
  broker's visibility timeout (an hour). A load is one transaction, so the rerun starts from
  nothing and the rows are stored once. After RUN_MAX_ATTEMPTS runs it fails with the reason
  instead: a file that kills its worker every time does not take the workers down for ever.
- The newest analysis request of an incident that never reached the broker (it was down) or
  has not run ANALYSIS_REQUEUE_S after it was queued is queued again.

Every change is a compare-and-set on the row as it was read, so a worker that claims a row at
the same moment keeps it, and two reapers never both queue it.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import asdict, dataclass

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from timeline import runs
from timeline.choices import RunStatus
from timeline.models import Analysis, Artifact, Incident

log = logging.getLogger(__name__)

ENDED = [RunStatus.DONE, RunStatus.FAILED, RunStatus.SUPERSEDED]


@dataclass
class Reaped:
    """What one pass did, by row id (analysis requests by incident id)."""

    loads_requeued: list[int]
    loads_failed: list[int]
    analyses_requeued: list[int]
    analyses_failed: list[int]
    requests_queued: list[int]
    broker_down: bool = False

    def __bool__(self) -> bool:
        return any(v for v in asdict(self).values())


def stale_runs_reap(*, now: dt.datetime | None = None) -> Reaped:
    """One pass of the reaper (see the module's docstring)."""
    now = now or timezone.now()
    out = Reaped([], [], [], [], [])
    try:
        _loads(now, out)
        _analyses(now, out)
        _requests(now, out)
    except BrokerError as exc:
        out.broker_down = True
        log.warning("reaper: the broker is unreachable (%s); the next pass tries again", exc)
    if out:
        log.info("reaper: %s", asdict(out))
    return out


def _stale(now: dt.datetime) -> Q:
    cutoff = runs.stale_before(now)
    return Q(status=RunStatus.RUNNING) & (
        Q(heartbeat_at__lt=cutoff)
        | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
        | Q(heartbeat_at__isnull=True, started_at__isnull=True)
    )


def _gave_up(what: str, attempts: int) -> str:
    return (
        f"{what}: the worker running it stopped {attempts} times before it finished (killed, out "
        "of memory or lost); it is not tried again"
    )


def _loads(now: dt.datetime, out: Reaped) -> None:
    from ingest.tasks import ingest_artifact  # the task module imports the services

    rows = Artifact.objects.filter(_stale(now)).values_list(
        "pk", "name", "claimed_by", "heartbeat_at", "attempts"
    )
    for pk, name, claimed_by, beat, attempts in rows:
        same = Artifact.objects.filter(
            pk=pk, status=RunStatus.RUNNING, claimed_by=claimed_by, heartbeat_at=beat
        )
        if attempts >= settings.RUN_MAX_ATTEMPTS:
            if same.update(
                status=RunStatus.FAILED,
                error=_gave_up(name, attempts),
                finished_at=now,
                progress=1.0,
            ):
                out.loads_failed.append(pk)
            continue
        if same.update(status=RunStatus.PENDING, claimed_by="", progress=0.0):
            log.warning("reaper: %s (artifact %s) was left running by %s", name, pk, claimed_by)
            ingest_artifact.delay(pk, True)
            out.loads_requeued.append(pk)


def _analyses(now: dt.datetime, out: Reaped) -> None:
    rows = Analysis.objects.filter(_stale(now)).values_list(
        "pk", "incident_id", "version", "incident__analysis_version", "claimed_by", "heartbeat_at"
    )
    for pk, incident_id, version, newest, claimed_by, beat in rows:
        same = Analysis.objects.filter(
            pk=pk, status=RunStatus.RUNNING, claimed_by=claimed_by, heartbeat_at=beat
        )
        attempts = max(same.values_list("attempts", flat=True), default=0)
        if version < newest:  # a newer request has its own run
            same.update(status=RunStatus.SUPERSEDED, finished_at=now)
        elif attempts >= settings.RUN_MAX_ATTEMPTS:
            if same.update(
                status=RunStatus.FAILED,
                error=_gave_up(f"analysis v{version}", attempts),
                finished_at=now,
            ):
                out.analyses_failed.append(pk)
        elif same.update(status=RunStatus.PENDING, claimed_by=""):
            log.warning("reaper: analysis %s was left running by %s", pk, claimed_by)
            _queue_analysis(incident_id, version, now)
            out.analyses_requeued.append(pk)


def _queue_analysis(incident_id: int, version: int, now: dt.datetime) -> None:
    """Queue a run of the incident's analysis ``version``; when the broker is down the request
    is left marked as never queued, for the next pass."""
    from timeline.tasks import analyze_incident

    Incident.objects.filter(pk=incident_id).update(analysis_queued_at=now)
    try:
        analyze_incident.delay(incident_id, version)
    except BrokerError:
        Incident.objects.filter(pk=incident_id, analysis_queued_at=now).update(
            analysis_queued_at=None
        )
        raise


def _requests(now: dt.datetime, out: Reaped) -> None:
    """Newest requests not run: never queued, or queued long ago and not started."""
    started = Analysis.objects.filter(
        incident=OuterRef("pk"),
        version=OuterRef("analysis_version"),
        status__in=[*ENDED, RunStatus.RUNNING],
    )
    waiting = Incident.objects.filter(
        Q(analysis_queued_at__isnull=True)
        | Q(analysis_queued_at__lt=now - dt.timedelta(seconds=settings.ANALYSIS_REQUEUE_S)),
        analysis_version__gt=0,
    ).filter(~Exists(started))
    for pk, version, queued_at in waiting.values_list(
        "pk", "analysis_version", "analysis_queued_at"
    ):
        if not Incident.objects.filter(
            pk=pk, analysis_version=version, analysis_queued_at=queued_at
        ).update(analysis_queued_at=now):
            continue  # a new request came in meanwhile: it queued itself
        _queue_analysis(pk, version, now)
        out.requests_queued.append(pk)
