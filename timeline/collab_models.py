"""The team's collaboration records: hypotheses with their status history and evidence, and
notes pinned to a moment of the timeline.

Part of the data model: :mod:`timeline.models` imports them (so Django registers them with the
app) and names them for every importer; they live here to keep each module short.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from timeline.choices import HypothesisStatus, Stance


class Hypothesis(models.Model):
    """A candidate explanation the team is weighing."""

    incident = models.ForeignKey(
        "timeline.Incident", on_delete=models.CASCADE, related_name="hypotheses"
    )
    title = models.CharField(max_length=300)
    body = models.TextField(blank=True)
    status = models.CharField(
        max_length=20, choices=HypothesisStatus.choices, default=HypothesisStatus.OPEN
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at"]
        verbose_name_plural = "hypotheses"

    def __str__(self) -> str:
        return self.title


class HypothesisStatusChange(models.Model):
    """One dated step of a hypothesis' status history (the first row records its creation)."""

    hypothesis = models.ForeignKey(
        Hypothesis, on_delete=models.CASCADE, related_name="status_changes"
    )
    old_status = models.CharField(max_length=20, choices=HypothesisStatus.choices, blank=True)
    new_status = models.CharField(max_length=20, choices=HypothesisStatus.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    at = models.DateTimeField(auto_now_add=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            # The board's and the postmortem's history per hypothesis, oldest first.
            models.Index(fields=["hypothesis", "at"], name="hypstatus_hypothesis_at"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.old_status or '-'} -> {self.new_status}"


class Evidence(models.Model):
    """A link from a hypothesis to an event or finding that supports, refutes or frames it."""

    hypothesis = models.ForeignKey(Hypothesis, on_delete=models.CASCADE, related_name="evidence")
    event = models.ForeignKey("timeline.Event", null=True, blank=True, on_delete=models.CASCADE)
    finding = models.ForeignKey(
        "timeline.Finding", null=True, blank=True, on_delete=models.SET_NULL
    )
    stance = models.CharField(max_length=20, choices=Stance.choices)
    note = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "evidence"
        constraints = [
            models.CheckConstraint(
                condition=Q(event__isnull=False) | Q(finding__isnull=False) | ~Q(note=""),
                name="evidence_points_somewhere",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.stance}: {self.note[:60]}"


class Note(models.Model):
    """An annotation pinned to a moment of the timeline."""

    incident = models.ForeignKey(
        "timeline.Incident", on_delete=models.CASCADE, related_name="notes"
    )
    at = models.DateTimeField()
    body = models.TextField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.body[:60]}"
