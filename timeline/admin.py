"""Admin registrations (sample chunks are left out: packed arrays, composite key)."""

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from timeline import models
from timeline.services import incident_delete


@admin.register(models.Team)
class TeamAdmin(admin.ModelAdmin[models.Team]):
    list_display = ["name", "slug"]
    filter_horizontal = ["members"]


@admin.register(models.Incident)
class IncidentAdmin(admin.ModelAdmin[models.Incident]):
    list_display = ["slug", "title", "team", "status", "created_at"]
    list_filter = ["status", "team"]
    search_fields = ["slug", "title"]

    # The audit log's trigger refuses deletes unless the transaction says it is deleting a whole
    # incident; services.incident_delete says so.
    def delete_model(self, request: HttpRequest, obj: models.Incident) -> None:
        incident_delete(incident=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[models.Incident]) -> None:
        for incident in queryset:
            incident_delete(incident=incident)


@admin.register(models.Artifact)
class ArtifactAdmin(admin.ModelAdmin[models.Artifact]):
    list_display = ["name", "incident", "kind", "status", "size", "created_at"]
    list_filter = ["status", "kind"]


@admin.register(models.Event)
class EventAdmin(admin.ModelAdmin[models.Event]):
    list_display = ["at", "incident", "kind", "lane", "title"]
    list_filter = ["kind", "lane"]
    search_fields = ["title"]
    raw_id_fields = ["incident", "artifact"]


@admin.register(models.ConfigChange)
class ConfigChangeAdmin(admin.ModelAdmin[models.ConfigChange]):
    list_display = ["key", "old_value", "new_value", "source", "incident"]
    raw_id_fields = ["event", "incident"]


@admin.register(models.Series)
class SeriesAdmin(admin.ModelAdmin[models.Series]):
    list_display = ["name", "incident", "sample_count", "first_ts", "last_ts"]
    search_fields = ["name"]


@admin.register(models.Analysis)
class AnalysisAdmin(admin.ModelAdmin[models.Analysis]):
    list_display = ["incident", "version", "status", "weights_version", "started_at", "finished_at"]


@admin.register(models.Finding)
class FindingAdmin(admin.ModelAdmin[models.Finding]):
    list_display = ["analysis", "kind", "rank", "score", "title"]


@admin.register(models.AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin[models.AuditEntry]):
    """Read-only: the log is append-only (a database trigger enforces it too)."""

    list_display = ["at", "incident", "actor", "action", "target"]
    list_filter = ["action"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    # No delete action; deleting an entry alone is refused by the trigger. Delete permission
    # itself stays, because deleting an incident in the admin checks it for the cascade.
    actions = None


@admin.register(models.HypothesisStatusChange)
class HypothesisStatusChangeAdmin(admin.ModelAdmin[models.HypothesisStatusChange]):
    list_display = ["at", "hypothesis", "old_status", "new_status", "actor"]
    raw_id_fields = ["hypothesis"]


for model in (models.Hypothesis, models.Evidence, models.Note, models.ApiToken):
    admin.site.register(model)


class DataSourceForm(forms.ModelForm[models.DataSource]):
    """The secrets are write-only: never rendered back; left empty, the stored one is kept."""

    url = forms.URLField(max_length=500, assume_scheme="http")  # in-cluster servers often are
    bearer_token = forms.CharField(required=False, widget=forms.PasswordInput)
    password = forms.CharField(required=False, widget=forms.PasswordInput)

    class Meta:
        model = models.DataSource
        fields = ["team", "name", "url", "bearer_token", "username", "password"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.instance.pk:
            for secret in ("bearer_token", "password"):
                if not data.get(secret):
                    data[secret] = getattr(self.instance, secret)
        return data


@admin.register(models.DataSource)
class DataSourceAdmin(admin.ModelAdmin[models.DataSource]):
    form = DataSourceForm
    list_display = ["name", "team", "url", "created_at"]


@admin.register(models.MetricsPull)
class MetricsPullAdmin(admin.ModelAdmin[models.MetricsPull]):
    list_display = ["pk", "incident", "url", "status", "progress", "created_at"]
    list_filter = ["status"]


@admin.register(models.RemoteSeries)
class RemoteSeriesAdmin(admin.ModelAdmin[models.RemoteSeries]):
    """Read-only: remote series are added and removed on the upload page or with the
    ``remote_series`` command, which ask the server and write the audit log."""

    list_display = ["pk", "incident", "source", "query", "name", "title", "created_at"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
