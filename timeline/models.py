"""The data model: incidents and everything ingested into them, analyses, and the team's notes.

Every datetime is aware UTC. Natural keys are unique constraints (artifact sha256, event
fingerprint, series identity), so re-ingesting the same bytes adds nothing.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import models
from django.db.models import F, Q

from timeline.choices import (
    EVENT_KIND_CHOICES,
    LANE_CHOICES,
    FindingKind,
    HypothesisStatus,
    IncidentStatus,
    RunStatus,
    Stance,
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


class Series(models.Model):
    """A metric series of an incident: name, labels and, where the labels do not say, the file
    it came from.

    ``origin`` is empty when the samples carry their own times (an export, a query_range
    answer, a log): files that overlap are one series' history and merge. A bare scrape of a
    /metrics endpoint takes the file's time and has no ``instance``/``job`` labels (Prometheus
    adds those when it scrapes): there the file is the only name of the target, so two
    exporters' unlabelled ``go_goroutines`` stay two series."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="series")
    artifact = models.ForeignKey(Artifact, null=True, blank=True, on_delete=models.SET_NULL)
    name = models.CharField(max_length=300)
    labels = models.JSONField(default=dict, blank=True)
    origin = models.CharField(max_length=500, blank=True, default="")
    type = models.CharField(max_length=20, blank=True)
    unit = models.CharField(max_length=40, blank=True)
    help = models.TextField(blank=True)
    sample_count = models.BigIntegerField(default=0)
    first_ts = models.DateTimeField(null=True, blank=True)
    last_ts = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "series"
        constraints = [
            models.UniqueConstraint(
                fields=["incident", "name", "labels", "origin"], name="series_unique_identity"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class SampleChunk(models.Model):
    """One hour of one metric series: its sample times and values as two packed arrays.

    ``ts``: microseconds since 2000-01-01 as delta-of-delta, ``vals``: float8 bits XOR the
    previous value's; each byte-shuffled in a zstd frame (timeline.metrics.packing says how);
    sorted by time, one value per time. Written and read through timeline.metrics, never row
    by row."""

    pk = models.CompositePrimaryKey("series_id", "bucket")
    # No database FK: samples are removed with their series by timeline.signals.
    series = models.ForeignKey(
        Series, on_delete=models.DO_NOTHING, db_index=False, db_constraint=False
    )
    bucket = models.DateTimeField()  # the hour's start
    n = models.IntegerField()
    ts = models.BinaryField()
    vals = models.BinaryField()

    def __str__(self) -> str:
        return f"{self.series_id}@{self.bucket:%Y-%m-%dT%H}h ({self.n} samples)"


class SampleRollup(models.Model):
    """Per-minute min and max of a series (with the times they occurred), written at ingest.

    A whole-day view of a 1 s series reads 1,440 of these instead of 86,400 samples; zoomed
    windows that fit read the samples themselves (timeline.selectors.series_downsampled)."""

    pk = models.CompositePrimaryKey("series_id", "bucket")
    # No database FK, as for SampleChunk: removed with their series by timeline.signals.
    series = models.ForeignKey(
        Series, on_delete=models.DO_NOTHING, db_index=False, db_constraint=False
    )
    bucket = models.DateTimeField()  # start of the minute
    t_min = models.DateTimeField()
    v_min = models.FloatField()
    t_max = models.DateTimeField()
    v_max = models.FloatField()
    n = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.series_id}@{self.bucket:%Y-%m-%dT%H:%M}"


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


class Hypothesis(models.Model):
    """A candidate explanation the team is weighing."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="hypotheses")
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
    event = models.ForeignKey(Event, null=True, blank=True, on_delete=models.CASCADE)
    finding = models.ForeignKey(Finding, null=True, blank=True, on_delete=models.SET_NULL)
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

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="notes")
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


class AuditEntry(models.Model):
    """Append-only record of who changed what, when.

    A Postgres trigger (migration 0002) refuses UPDATE and DELETE; only nulling the actor (a
    deleted user) and services.incident_delete (which sets timeline.audit_purge) get through.
    """

    # An incident's entry, or a team's (team management: members, admins, tokens).
    incident = models.ForeignKey(
        Incident, null=True, blank=True, on_delete=models.CASCADE, related_name="audit"
    )
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.PROTECT, related_name="audit"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    at = models.DateTimeField(auto_now_add=True)
    action = models.CharField(max_length=60)
    target = models.CharField(max_length=200, blank=True)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"
        indexes = [
            models.Index(fields=["incident", "at"], name="audit_incident_at"),
            models.Index(fields=["team", "at"], name="audit_team_at"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(incident__isnull=False) | Q(team__isnull=False),
                name="auditentry_has_incident_or_team",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.action} {self.target}"


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


class DataSource(models.Model):
    """A team's Prometheus-compatible server (Prometheus, Thanos, Mimir, VictoriaMetrics) to
    pull metrics from.

    The secret (a bearer token, or a basic-auth password) is stored as given, not encrypted at
    rest: anyone who can read this table can read it. It is sent to the server only, and never
    logged, rendered back or put in an error message."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="data_sources")
    name = models.CharField(max_length=100)
    url = models.URLField(max_length=500)
    bearer_token = models.CharField(max_length=4000, blank=True)
    username = models.CharField(max_length=200, blank=True)
    password = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="datasource_unique_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.url})"


class MetricsPull(models.Model):
    """One pull of metrics from a Prometheus server into an incident: the run row its task
    claims, with its progress, counts and Prometheus's error as the server said it."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="metric_pulls")
    source = models.ForeignKey(DataSource, null=True, blank=True, on_delete=models.SET_NULL)
    url = models.URLField(max_length=500)
    queries = models.JSONField(default=list)
    start = models.DateTimeField()
    end = models.DateTimeField()
    step = models.FloatField(default=0.0)  # seconds; for expressions that are not selectors
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.PENDING)
    progress = models.FloatField(default=0.0)
    error = models.TextField(blank=True)
    counts = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(end__gte=F("start")), name="metricspull_end_after_start"
            ),
        ]

    def __str__(self) -> str:
        return f"pull {self.pk} from {self.url}"
