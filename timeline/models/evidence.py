"""The evidence on the timeline: events and the config changes they carry."""

from __future__ import annotations

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import models
from django.db.models import F, Q

from timeline.choices import (
    EVENT_KIND_CHOICES,
    LANE_CHOICES,
)
from timeline.models.core import Artifact, Incident


class Event(models.Model):
    """Something that happened at a moment on the incident's timeline."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="events")
    artifact = models.ForeignKey(
        Artifact, null=True, blank=True, on_delete=models.CASCADE, related_name="events"
    )
    at = models.DateTimeField()
    ends_at = models.DateTimeField(null=True, blank=True)
    kind = models.CharField(max_length=30, choices=EVENT_KIND_CHOICES)
    lane = models.CharField(max_length=30, choices=LANE_CHOICES)
    title = models.CharField(max_length=500)
    body = models.TextField(blank=True)  # Markdown, rendered with raw HTML disabled
    attrs = models.JSONField(default=dict, blank=True)
    key = models.CharField(max_length=500)  # natural key within its kind
    fingerprint = models.CharField(max_length=64)  # sha256(kind, key)

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["incident", "fingerprint"], name="event_unique_fingerprint"
            ),
            models.CheckConstraint(
                condition=Q(ends_at__isnull=True) | Q(ends_at__gte=F("at")),
                name="event_ends_after_start",
            ),
        ]
        indexes = [
            # Timeline window reads: events_in_window(incident, start, end).
            models.Index(fields=["incident", "at"], name="event_incident_at"),
            # Lane / kind filters of the event table.
            models.Index(fields=["incident", "kind", "at"], name="event_incident_kind_at"),
            # Full-text search of the event table (selectors.events_search uses this expression).
            GinIndex(SearchVector("title", "body", config="english"), name="event_fulltext"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.title}"


class ConfigChange(models.Model):
    """A setting's value changed, as recorded by one source (doc, commit, changelog, API)."""

    event = models.OneToOneField(
        Event, on_delete=models.CASCADE, primary_key=True, related_name="config_change"
    )
    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="config_changes")
    key = models.CharField(max_length=300)
    # null is meaningful here: "unset" differs from the empty string.
    old_value = models.TextField(null=True, blank=True)  # noqa: DJ001  (null: introduced)
    new_value = models.TextField(null=True, blank=True)  # noqa: DJ001  (null: removed)
    scope = models.CharField(max_length=20)
    source = models.CharField(max_length=20)
    ref = models.CharField(max_length=300, blank=True)
    where = models.CharField(max_length=500, blank=True)
    condition = models.CharField(max_length=500, blank=True)

    class Meta:
        indexes = [models.Index(fields=["incident", "key"], name="configchange_incident_key")]

    def __str__(self) -> str:
        return f"{self.key}: {self.old_value} -> {self.new_value}"
