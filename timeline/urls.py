from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from timeline.compression import compressed
from timeline.views import incidents, live

urlpatterns = [
    path("", incidents.incident_list, name="incident_list"),
    path("incidents/new", incidents.incident_new, name="incident_new"),
    path("incidents/<slug:slug>/", incidents.incident_timeline, name="incident_timeline"),
    # The figure's JSON is compressed (a tenth of its size) in the cheapest coding the client
    # takes; it holds no secret, so compressing it is no BREACH-style oracle (pages with a CSRF
    # token stay uncompressed).
    path(
        "incidents/<slug:slug>/timeline.json",
        compressed(incidents.timeline_data),
        name="timeline_data",
    ),
    path("incidents/<slug:slug>/events/", incidents.event_table, name="event_table"),
    path("incidents/<slug:slug>/version", live.version, name="incident_version"),
    path(
        "incidents/<slug:slug>/analysis-status", incidents.analysis_status, name="analysis_status"
    ),
    path(
        "incidents/<slug:slug>/events/<int:event_id>/",
        incidents.event_detail,
        name="event_detail",
    ),
    path(
        "incidents/<slug:slug>/findings/<int:finding_id>/",
        incidents.finding_detail,
        name="finding_detail",
    ),
    path("incidents/<slug:slug>/", include("ingest.urls")),
    path("incidents/<slug:slug>/", include("timeline.collab_urls")),
    path("teams/", include("timeline.team_urls")),
    path("api/v1/", include("ingest.api_urls")),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
