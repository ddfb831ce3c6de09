"""Correlation runs and their findings."""

from __future__ import annotations

from django.db import models

from timeline.choices import (
    FindingKind,
    RunStatus,
)
from timeline.models.core import Incident
from timeline.models.evidence import Event


class Analysis(models.Model):
    """One correlation run of an incident. Only the newest finished run is shown."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="analyses")
    version = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.PENDING)
    params = models.JSONField(default=dict, blank=True)
    # The engine's result; the public JSON (analyze --json, the API) is it plus the weights,
    # see timeline.analysis.public_json.
    result = models.JSONField(default=dict, blank=True)
    # The correlation weights the run scored with (timeline.correlation.weights) and their
    # version; null for runs stored before the weights were versioned.
    weights_version = models.PositiveIntegerField(null=True, blank=True)
    weights = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Run claim: the worker process ("host:pid"), its last beat (timeline.runs), runs started.
    claimed_by = models.CharField(max_length=300, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-version"]
        verbose_name_plural = "analyses"
        constraints = [
            models.UniqueConstraint(fields=["incident", "version"], name="analysis_unique_version"),
        ]

    def __str__(self) -> str:
        return f"analysis v{self.version} of {self.incident_id}"


class Finding(models.Model):
    """One conclusion of an analysis, with its explanation in words."""

    analysis = models.ForeignKey(Analysis, on_delete=models.CASCADE, related_name="findings")
    kind = models.CharField(max_length=20, choices=FindingKind.choices)
    rank = models.PositiveIntegerField(default=0)
    score = models.FloatField(null=True, blank=True)
    at = models.DateTimeField(null=True, blank=True)
    event = models.ForeignKey(Event, null=True, blank=True, on_delete=models.SET_NULL)
    title = models.CharField(max_length=500)
    explanation = models.TextField(blank=True)  # Markdown
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["kind", "rank"]
        indexes = [models.Index(fields=["analysis", "kind", "rank"], name="finding_by_kind")]

    def __str__(self) -> str:
        return self.title
