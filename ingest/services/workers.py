"""Loads on the Celery workers: queued (by id), what a worker does with one, and waiting for
them (a command that follows its ingest)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from kombu.exceptions import OperationalError as BrokerError

from ingest.services import IngestError, loading
from timeline.choices import RunStatus
from timeline.models import Analysis, Artifact, Incident
from timeline.services import analysis_request

log = logging.getLogger(__name__)


class Queued(NamedTuple):
    queued: list[Artifact]
    left: list[Artifact]  # still pending: the broker was unreachable
    error: str


def artifacts_queue(*, artifacts: Sequence[Artifact], analyze: bool = True) -> Queued:
    """Queue loads, once their rows have committed. With the broker unreachable, stop: the
    rest stays pending, for the upload page's Retry pending or the next run."""
    from ingest.tasks import ingest_artifact  # the task module imports this one

    for i, artifact in enumerate(artifacts):
        try:
            ingest_artifact.delay(artifact.pk, analyze)
        except BrokerError as exc:
            log.warning("broker unreachable; %d files stay pending", len(artifacts) - i)
            return Queued(list(artifacts[:i]), list(artifacts[i:]), str(exc))
    return Queued(list(artifacts), [], "")


def pending_queue(*, incident: Incident, analyze: bool = True) -> Queued:
    """Queue the incident's pending files again (left pending while the broker was away)."""
    pending = Artifact.objects.filter(incident=incident, status=RunStatus.PENDING)
    return artifacts_queue(artifacts=list(pending), analyze=analyze)


def artifact_load(*, artifact_id: int, analyze: bool = True) -> Artifact:
    """What a worker does with a queued file: load it, then ask for a fresh analysis."""
    artifact = loading.artifact_ingest(artifact_id=artifact_id)
    if analyze and artifact.status == RunStatus.DONE:
        analysis_request(incident_id=artifact.incident_id)
    return artifact


def loads_wait(
    *,
    artifacts: Sequence[Artifact],
    timeout: float,
    on_progress: Callable[[int, int], None] | None = None,
) -> None:
    """Until every one of these queued loads is done or failed (``on_progress(finished,
    total)`` as they go); IngestError past ``timeout``."""
    ids = [a.pk for a in artifacts]
    deadline = time.monotonic() + timeout
    finished = 0
    while finished < len(ids):
        finished = Artifact.objects.filter(
            pk__in=ids, status__in=[RunStatus.DONE, RunStatus.FAILED]
        ).count()
        if on_progress:
            on_progress(finished, len(ids))
        if finished < len(ids):
            if time.monotonic() > deadline:
                raise IngestError(
                    f"{len(ids) - finished} files still queued after {timeout:.0f}s: "
                    "is a Celery worker running?"
                )
            time.sleep(0.2)


def analysis_wait(*, incident_id: int, timeout: float) -> Analysis | None:
    """The newest requested analysis once the workers have finished it (None: none was ever
    requested); IngestError when it failed or past ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        version = Incident.objects.values_list("analysis_version", flat=True).get(pk=incident_id)
        if version == 0:
            return None
        run = Analysis.objects.filter(incident_id=incident_id, version=version).first()
        if run is not None and run.status in (RunStatus.DONE, RunStatus.FAILED):
            if run.status == RunStatus.FAILED:
                raise IngestError(f"analysis failed: {run.error}")
            return run
        time.sleep(0.2)
    raise IngestError(f"analysis not finished after {timeout:.0f}s: is a worker running?")
