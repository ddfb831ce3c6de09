"""Thin Celery tasks: ids in, one service call."""

from __future__ import annotations

from celery import shared_task

from timeline import analysis


@shared_task(acks_late=True, name="timeline.analyze_incident")
def analyze_incident(incident_id: int, version: int) -> None:
    """Run the correlation for one analysis request (stale requests stop at once)."""
    analysis.analysis_run(incident_id=incident_id, version=version)


@shared_task(name="timeline.changes_compact", ignore_result=True)
def changes_compact() -> None:
    """Beat, hourly: each incident's change log folded into one row (timeline.versions)."""
    from timeline.versions import changes_compact as compact

    compact()
