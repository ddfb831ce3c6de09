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
