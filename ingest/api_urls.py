"""Push API (token auth)."""

from django.urls import path

from ingest import api

urlpatterns = [
    path("incidents/<slug:slug>/analysis", api.incident_view, name="api_incident"),
    path(
        "incidents/<slug:slug>/<str:kind>",
        api.push_view,
        name="api_push",
    ),
]
