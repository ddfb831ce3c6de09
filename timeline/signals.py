"""Sample chunks and their rollups have no database FK (COPY speed): delete them before their
series go."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import pre_delete
from django.dispatch import receiver

from timeline.metrics.writer import samples_delete
from timeline.models import Artifact, Incident


@receiver(pre_delete, sender=Incident)
def delete_incident_samples(sender: type, instance: Incident, **kwargs: Any) -> None:
    samples_delete(incident_id=instance.pk)


@receiver(pre_delete, sender=Artifact)
def delete_artifact_samples(sender: type, instance: Artifact, **kwargs: Any) -> None:
    samples_delete(artifact_id=instance.pk)
