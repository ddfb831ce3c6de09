"""Admin registrations (Sample is left out: millions of rows, composite key)."""

from django.contrib import admin

from timeline import models


@admin.register(models.Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "slug"]
    filter_horizontal = ["members"]


@admin.register(models.Incident)
class IncidentAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "team", "status", "created_at"]
    list_filter = ["status", "team"]
    search_fields = ["slug", "title"]


@admin.register(models.Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ["name", "incident", "kind", "status", "size", "created_at"]
    list_filter = ["status", "kind"]


@admin.register(models.Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["at", "incident", "kind", "lane", "title"]
    list_filter = ["kind", "lane"]
    search_fields = ["title"]
    raw_id_fields = ["incident", "artifact"]


@admin.register(models.ConfigChange)
class ConfigChangeAdmin(admin.ModelAdmin):
    list_display = ["key", "old_value", "new_value", "source", "incident"]
    raw_id_fields = ["event", "incident"]


@admin.register(models.Series)
class SeriesAdmin(admin.ModelAdmin):
    list_display = ["name", "incident", "sample_count", "first_ts", "last_ts"]
    search_fields = ["name"]


@admin.register(models.Analysis)
class AnalysisAdmin(admin.ModelAdmin):
    list_display = ["incident", "version", "status", "started_at", "finished_at"]


@admin.register(models.Finding)
class FindingAdmin(admin.ModelAdmin):
    list_display = ["analysis", "kind", "rank", "score", "title"]


for model in (models.Hypothesis, models.Evidence, models.Note, models.AuditEntry, models.ApiToken):
    admin.site.register(model)
