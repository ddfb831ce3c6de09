from django.urls import path

from ingest import views

urlpatterns = [
    path("upload/", views.upload, name="upload"),
    path("artifacts/", views.artifact_status, name="artifact_status"),
    path("pull/", views.metrics_pull, name="metrics_pull"),
]
