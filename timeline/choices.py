"""Django choices for models, services and views.

Event kinds and lanes are defined once, in the pure ``evidence.vocabulary``, and imported from
there everywhere; the model field choices below are built from those enums.
"""

from django.db import models

from evidence import vocabulary

# Choices for the Event model's kind and lane fields (labels from the vocabulary).
EVENT_KIND_CHOICES = [(k.value, k.label) for k in vocabulary.EventKind]
LANE_CHOICES = [(lane.value, lane.label) for lane in vocabulary.Lane]


class IncidentStatus(models.TextChoices):
    OPEN = "open", "Open"
    MITIGATED = "mitigated", "Mitigated"
    RESOLVED = "resolved", "Resolved"


class RunStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    SUPERSEDED = "superseded", "Superseded"


class FindingKind(models.TextChoices):
    FIRST_BAD = "first_bad", "First bad"
    LAST_GOOD = "last_good", "Last known good"
    SUSPECT = "suspect", "Suspect"
    EXCLUDED = "excluded", "Excluded"
    SYMPTOM = "symptom", "Symptom"
    RULED_OUT = "ruled_out", "Ruled out"
    WARNING = "warning", "Warning"


class HypothesisStatus(models.TextChoices):
    OPEN = "open", "Open"
    SUPPORTED = "supported", "Supported"
    REFUTED = "refuted", "Refuted"
    CONFIRMED = "confirmed", "Confirmed"


class Stance(models.TextChoices):
    SUPPORTS = "supports", "Supports"
    REFUTES = "refutes", "Refutes"
    CONTEXT = "context", "Context"
