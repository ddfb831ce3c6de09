"""Sample chunks and their rollups have no database FK (COPY speed): delete them in SQL before
their series go."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models.signals import pre_delete
from django.dispatch import receiver

from timeline.models import Artifact, Incident


@receiver(pre_delete, sender=Incident)
def delete_incident_samples(sender: type, instance: Incident, **kwargs: Any) -> None:
    with connection.cursor() as cur:
        cur.execute(
            "DELETE FROM timeline_samplechunk WHERE series_id IN "
            "(SELECT id FROM timeline_series WHERE incident_id = %s)",
            [instance.pk],
        )
        cur.execute(
            "DELETE FROM timeline_samplerollup WHERE series_id IN "
            "(SELECT id FROM timeline_series WHERE incident_id = %s)",
            [instance.pk],
        )


@receiver(pre_delete, sender=Artifact)
def delete_artifact_samples(sender: type, instance: Artifact, **kwargs: Any) -> None:
    with connection.cursor() as cur:
        cur.execute(
            "DELETE FROM timeline_samplechunk WHERE series_id IN "
            "(SELECT id FROM timeline_series WHERE artifact_id = %s)",
            [instance.pk],
        )
        cur.execute(
            "DELETE FROM timeline_samplerollup WHERE series_id IN "
            "(SELECT id FROM timeline_series WHERE artifact_id = %s)",
            [instance.pk],
        )
