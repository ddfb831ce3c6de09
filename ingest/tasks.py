"""Thin Celery tasks: ids in, one service call."""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import OperationalError

from ingest.services import workers

log = logging.getLogger(__name__)


@shared_task(
    acks_late=True,
    name="ingest.ingest_artifact",
    autoretry_for=(OperationalError,),  # transient: the database went away mid-load
    retry_backoff=True,
    max_retries=5,
)
def ingest_artifact(artifact_id: int, analyze: bool = True) -> None:
    """Load one artifact, then ask for a fresh analysis of its incident."""
    workers.artifact_load(artifact_id=artifact_id, analyze=analyze)


@shared_task(
    acks_late=True,
    name="ingest.pull_metrics",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def pull_metrics(pull_id: int) -> None:
    """Pull one MetricsPull's queries from its Prometheus server into its incident."""
    from ingest.services import pulls  # imports orchestration, which imports this module's peers

    pulls.pull_run(pull_id=pull_id)


@shared_task(name="ingest.reap_stale_runs", ignore_result=True)
def reap_stale_runs() -> None:
    """Beat, every REAPER_INTERVAL_S: loads and analyses left running by a dead worker, and
    analysis requests that never reached the broker, queued again."""
    from ingest.services import reaper

    reaper.stale_runs_reap()


@shared_task(name="ingest.uploads_sweep", ignore_result=True)
def uploads_sweep() -> None:
    """Beat, every UPLOADS_SWEEP_INTERVAL_S: files under UPLOAD_ROOT no artifact points to."""
    from ingest.services import sweep

    swept = sweep.uploads_sweep()
    if swept.removed:
        log.info("uploads sweep: %d removed, %d bytes freed", len(swept.removed), swept.freed_bytes)
