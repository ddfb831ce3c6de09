"""Enumerations shared by models, services and views.

Event kinds and lanes mirror the string constants of ingest.parsers.types (the pure parsers
cannot import Django); tests/test_choices.py keeps them in step.
"""

from django.db import models


class EventKind(models.TextChoices):
    COMMIT = "commit", "Commit"
    DOC_REVISION = "doc_revision", "Doc revision"
    CONFIG_CHANGE = "config_change", "Config change"
    HARNESS_RUN = "harness_run", "Harness run"
    REQUEST = "request", "Request"
    LOG_SPAN = "log_span", "Server log"
    LOG_ERROR = "log_error", "Server error"
    STACK_DUMP = "stack_dump", "Stack dump"
    NOTE = "note", "Note"


class Lane(models.TextChoices):
    CONFIG = "config", "Config changes"
    COMMITS = "commits", "Commits"
    DOCS = "docs", "Doc revisions"
    HARNESS = "harness", "Harness"
    REQUESTS = "requests", "Requests"
    SERVER = "server", "Server"
    SYMPTOMS = "symptoms", "Symptoms"
    DUMPS = "dumps", "Stack dumps"
    NOTES = "notes", "Notes"


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
