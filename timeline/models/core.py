"""Teams, their incidents and what was uploaded into them (artifacts), and API tokens."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from timeline.choices import (
    IncidentStatus,
    RunStatus,
)


class Team(models.Model):
    """A group of users; incidents belong to one team and only its members see them."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="teams", blank=True)
    # Members who manage the team (timeline/views/teams.py): its members, admins and API tokens.
    admins = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="admin_of_teams", blank=True
    )

    def __str__(self) -> str:
        return self.name


class Incident(models.Model):
    """One debugging session's evidence and conclusions."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="incidents")
    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    status = models.CharField(
        max_length=20, choices=IncidentStatus.choices, default=IncidentStatus.OPEN
    )
    summary = models.TextField(blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    # Operator overrides; the analysis works them out when null.
    last_good_at = models.DateTimeField(null=True, blank=True)
    first_bad_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    action_items = models.TextField(blank=True)  # Markdown; the postmortem's last section
    # Bumped by every analysis request; a run older than this never overwrites a newer one.
    analysis_version = models.PositiveIntegerField(default=0)
    # When that request was handed to the broker; null: the broker was down (the reaper queues it).
    analysis_queued_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title


class Artifact(models.Model):
    """One ingested file (or API push): the same bytes twice in one incident are one artifact."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="artifacts")
    name = models.CharField(max_length=500)
    kind = models.CharField(max_length=40, blank=True)
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField(default=0)
    path = models.CharField(max_length=1000, blank=True)  # stored copy, relative to UPLOAD_ROOT
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.PENDING)
    error = models.TextField(blank=True)  # "file:line: what was expected"
    counts = models.JSONField(default=dict, blank=True)  # events, config_changes, samples
    progress = models.FloatField(default=0.0)  # 0..1 while running
    options = models.JSONField(default=dict, blank=True)  # timezone, default time, source kind
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Run claim: the worker process ("host:pid"), its last beat (timeline.runs), runs started.
    claimed_by = models.CharField(max_length=300, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["incident", "sha256"], name="artifact_unique_bytes_per_incident"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class ApiToken(models.Model):
    """A bearer token for the push API, bound to one team."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)  # sha256 of the token; never the token
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name


class TeamInvite(models.Model):
    """A single-use link that makes whoever opens it (logged in) a member of the team."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invites")
    digest = models.CharField(max_length=64, unique=True)  # sha256 of the link's token
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"invite {self.pk} to {self.team_id}"


class IncidentChange(models.Model):
    """One statement that wrote an incident's events or metric series, logged by the database
    (triggers of migration 0018), never by the application: the incident's version
    (timeline.versions) reads these few rows instead of counting the incident's events, which
    cost ~60 ms per read at 1M events, on every poll of every open page. No foreign key: a
    change to the rows of an incident being deleted is logged too, and swept later
    (:func:`timeline.versions.changes_compact`)."""

    id = models.BigAutoField(primary_key=True)
    incident_id = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["incident_id", "id"], name="incidentchange_incident_id")]

    def __str__(self) -> str:
        return f"change {self.pk} of incident {self.incident_id}"
