from django.urls import path

from ingest import views

urlpatterns = [
    path("upload/", views.upload, name="upload"),
    path("artifacts/", views.artifact_status, name="artifact_status"),
    path("pull/", views.metrics_pull, name="metrics_pull"),
    path("remote/", views.remote_series_new, name="remote_series_new"),
    path("remote/<int:series_id>/remove/", views.remote_series_delete, name="remote_series_delete"),
]
