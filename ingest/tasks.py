"""Thin Celery tasks: ids in, one service call."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from ingest.services import workers


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
