"""Metric series, their compressed sample chunks and rollups, and Prometheus pulls."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from timeline.choices import (
    RunStatus,
)
from timeline.models.core import Artifact, Incident, Team


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


class RemoteSeries(models.Model):
    """A series an incident draws straight from one of its team's data sources, never copied.

    The timeline asks the server for the visible window at a step (peaks kept, answers cached:
    timeline.metrics.remote); the analysis asks for the raw samples of its window when ``name``
    is one it reads. ``name`` is the metric the series stands for (the selector's own name, or
    one given to an expression), which also puts it on that metric's panel; ``resolution_s`` is
    the spacing of the server's samples as measured when the series was added (0: unknown)."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="remote_series")
    source = models.ForeignKey(DataSource, on_delete=models.CASCADE, related_name="remote_series")
    query = models.TextField()
    name = models.CharField(max_length=300, blank=True)
    title = models.CharField(max_length=200, blank=True)
    resolution_s = models.FloatField(default=0.0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "remote series"
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["incident", "source", "query"], name="remoteseries_unique_query"
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.name or self.query[:80]
