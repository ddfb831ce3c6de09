"""Upload page (several files, drag and drop) and the per-file status fragment it polls."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from ingest.forms import PullForm, RemoteSeriesForm
from ingest.services import IngestError, orchestration, pulls, workers
from ingest.services.orchestration import Upload
from ingest.services.remote import remote_series_add, remote_series_remove
from timeline import access
from timeline.choices import RunStatus
from timeline.models import Artifact, Incident, MetricsPull, RemoteSeries

MAX_FILES_PER_UPLOAD = 200


@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest, slug: str) -> HttpResponse:
    incident = access.incident_for(request.user, slug)
    if request.method == "POST":
        files = request.FILES.getlist("files")
        if not files:
            messages.error(request, "Choose at least one file to upload.")
        elif len(files) > MAX_FILES_PER_UPLOAD:
            messages.error(request, f"At most {MAX_FILES_PER_UPLOAD} files per upload.")
        else:
            _accept(request, incident, files)
        if request.headers.get("X-Upload-Progress"):
            # The page's script sent the files (showing their progress) and goes there itself;
            # a redirect would be followed inside the request and eat the messages.
            return JsonResponse({"next": reverse("upload", args=[incident.slug])})
        return redirect("upload", slug=incident.slug)
    return render(
        request,
        "ingest/upload.html",
        {
            "incident": incident,
            "artifacts": _artifacts(incident),
            "max_mb": settings.UPLOAD_MAX_BYTES // (1024 * 1024),
            "pull_form": PullForm(incident=incident),
            "pulls": MetricsPull.objects.filter(incident=incident)[:10],
            "remote_form": RemoteSeriesForm(incident=incident),
            "remote_series": RemoteSeries.objects.filter(incident=incident).select_related(
                "source"
            ),
        },
    )


@require_http_methods(["POST"])
def metrics_pull(request: HttpRequest, slug: str) -> HttpResponse:
    """Queue a pull from one of the team's Prometheus data sources."""
    incident = access.incident_for(request.user, slug)
    form = PullForm(request.POST, incident=incident)
    if not form.is_valid():
        messages.error(request, f"Pull not started: {form.errors.as_text()}")
        return redirect("upload", slug=incident.slug)
    try:
        with transaction.atomic():
            pull = pulls.pull_create(
                incident=incident,
                source=form.cleaned_data["source"],
                queries=form.query_list(),
                start=form.cleaned_data["start"],
                end=form.cleaned_data["end"],
                user=request.user,
            )
            pulls.pull_queue(pull=pull)
    except IngestError as exc:
        messages.error(request, f"Pull not started: {exc}")
    else:
        messages.success(request, f"Pull {pull.pk} queued from {pull.source}.")
    return redirect("upload", slug=incident.slug)


@require_http_methods(["POST"])
def remote_series_new(request: HttpRequest, slug: str) -> HttpResponse:
    """Draw a series straight from one of the team's data sources (the server is asked once)."""
    incident = access.incident_for(request.user, slug)
    form = RemoteSeriesForm(request.POST, incident=incident)
    if not form.is_valid():
        messages.error(request, f"Remote series not added: {form.errors.as_text()}")
        return redirect("upload", slug=incident.slug)
    try:
        series = remote_series_add(
            incident=incident,
            source=form.cleaned_data["source"],
            query=form.cleaned_data["query"],
            name=form.cleaned_data["name"],
            title=form.cleaned_data["title"],
            user=request.user,
        )
    except IngestError as exc:
        messages.error(request, f"Remote series not added: {exc}")
    else:
        messages.success(request, f"Remote series “{series}” added from {series.source.name}.")
    return redirect("upload", slug=incident.slug)


@require_http_methods(["POST"])
def remote_series_delete(request: HttpRequest, slug: str, series_id: int) -> HttpResponse:
    incident = access.incident_for(request.user, slug)
    series = get_object_or_404(
        RemoteSeries.objects.select_related("source", "incident"), incident=incident, pk=series_id
    )
    remote_series_remove(series=series, user=request.user)
    messages.success(request, f"Remote series “{series}” removed.")
    return redirect("upload", slug=incident.slug)


def _accept(request: HttpRequest, incident: Incident, files: list[UploadedFile[bytes]]) -> None:
    uploads = (  # a generator: one small upload's bytes copied at a time
        # Big uploads are already on disk (hashed and stored in chunks from there); small ones
        # live in memory (under FILE_UPLOAD_MAX_MEMORY_SIZE).
        Upload(name=f.name or "upload", size=f.size or 0, path=Path(f.temporary_file_path()))
        if isinstance(f, TemporaryUploadedFile)
        else Upload(name=f.name or "upload", size=f.size or 0, data=f.read())
        for f in files
    )
    outcome = orchestration.files_ingest(incident=incident, files=uploads, user=request.user)
    _report(request, outcome)


def _report(request: HttpRequest, outcome: orchestration.IngestOutcome) -> None:
    for refused in outcome.refused:
        messages.error(request, refused)
    for artifact in outcome.unqueued:
        messages.warning(
            request,
            f"{artifact.name} is stored but the work queue is unavailable right now; "
            "it stays pending and is ingested when the queue is back (Retry pending).",
        )
    if outcome.queued:
        messages.success(request, f"{len(outcome.queued)} file(s) queued for ingest.")


def _artifacts(incident: Incident) -> list[Artifact]:
    return list(Artifact.objects.filter(incident=incident).order_by("-created_at")[:500])


@require_http_methods(["GET", "POST"])
def artifact_status(request: HttpRequest, slug: str) -> HttpResponse:
    """Per-file status (polled by htmx while work is running); POST re-queues pending files."""
    incident = access.incident_for(request.user, slug)
    if request.method == "POST":
        if workers.pending_queue(incident=incident).left:
            messages.warning(request, "The work queue is still unavailable; files stay pending.")
        return redirect("upload", slug=incident.slug)
    artifacts = _artifacts(incident)
    running = any(a.status in (RunStatus.PENDING, RunStatus.RUNNING) for a in artifacts)
    return render(
        request,
        "ingest/_artifacts.html",
        {"incident": incident, "artifacts": artifacts, "running": running},
    )
