"""Upload page (several files, drag and drop) and the per-file status fragment it polls."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from kombu.exceptions import OperationalError as BrokerError

from ingest import services
from ingest.tasks import ingest_artifact
from timeline import selectors
from timeline.choices import RunStatus
from timeline.models import Artifact, Incident

log = logging.getLogger(__name__)
MAX_FILES_PER_UPLOAD = 200


@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest, slug: str) -> HttpResponse:
    incident = selectors.incident_for_user(request.user, slug)
    if request.method == "POST":
        files = request.FILES.getlist("files")
        if not files:
            messages.error(request, "Choose at least one file to upload.")
        elif len(files) > MAX_FILES_PER_UPLOAD:
            messages.error(request, f"At most {MAX_FILES_PER_UPLOAD} files per upload.")
        else:
            _accept(request, incident, files)
        return redirect("upload", slug=incident.slug)
    return render(
        request,
        "ingest/upload.html",
        {
            "incident": incident,
            "artifacts": _artifacts(incident),
            "max_mb": settings.UPLOAD_MAX_BYTES // (1024 * 1024),
        },
    )


def _accept(request: HttpRequest, incident: Incident, files: list[UploadedFile[bytes]]) -> None:
    registered: list[Artifact] = []
    for f in files:
        name = Path(f.name or "upload").name  # never trust a client path
        size = f.size or 0
        if size > settings.UPLOAD_MAX_BYTES:
            messages.error(
                request,
                f"{name}: {size} bytes is over the limit of "
                f"{settings.UPLOAD_MAX_BYTES} bytes; nothing was stored.",
            )
            continue
        try:
            if name.lower().endswith((".zip", ".tar.gz", ".tgz", ".tar")):
                with tempfile.TemporaryDirectory(dir=_tmp_root()) as tmp:
                    archive = Path(tmp) / name
                    with open(archive, "wb") as out:
                        for chunk in f.chunks():
                            out.write(chunk)
                    outcome = services.path_register(
                        incident=incident,
                        path=archive,
                        user=request.user,
                    )
                registered += outcome.artifacts
            elif isinstance(f, TemporaryUploadedFile):
                # Big uploads are already on disk: hash and store them in chunks.
                artifact, _ = services.artifact_register_file(
                    incident=incident,
                    name=name,
                    path=Path(f.temporary_file_path()),
                    user=request.user,
                )
                registered.append(artifact)
            else:  # small uploads live in memory (under FILE_UPLOAD_MAX_MEMORY_SIZE)
                artifact, _ = services.artifact_register_bytes(
                    incident=incident, name=name, data=f.read(), user=request.user
                )
                registered.append(artifact)
        except services.IngestError as exc:
            messages.error(request, str(exc))
    queued = 0
    for artifact in registered:
        if artifact.status != RunStatus.PENDING:
            continue
        try:
            ingest_artifact.delay(artifact.pk)
            queued += 1
        except BrokerError:
            log.warning("broker unreachable; %s stays pending", artifact.name)
            messages.warning(
                request,
                f"{artifact.name} is stored but the work queue is unavailable right now; "
                "it stays pending and is ingested when the queue is back (Retry pending).",
            )
    if queued:
        messages.success(request, f"{queued} file(s) queued for ingest.")


def _tmp_root() -> str:
    root = Path(settings.UPLOAD_ROOT) / ".tmp"
    root.mkdir(parents=True, exist_ok=True)
    return str(root)


def _artifacts(incident: Incident) -> list[Artifact]:
    return list(Artifact.objects.filter(incident=incident).order_by("-created_at")[:500])


@require_http_methods(["GET", "POST"])
def artifact_status(request: HttpRequest, slug: str) -> HttpResponse:
    """Per-file status (polled by htmx while work is running); POST re-queues pending files."""
    incident = selectors.incident_for_user(request.user, slug)
    if request.method == "POST":
        pending = Artifact.objects.filter(incident=incident, status=RunStatus.PENDING)
        try:
            for artifact in pending:
                ingest_artifact.delay(artifact.pk)
        except BrokerError:
            messages.warning(request, "The work queue is still unavailable; files stay pending.")
        return redirect("upload", slug=incident.slug)
    artifacts = _artifacts(incident)
    running = any(a.status in (RunStatus.PENDING, RunStatus.RUNNING) for a in artifacts)
    return render(
        request,
        "ingest/_artifacts.html",
        {"incident": incident, "artifacts": artifacts, "running": running},
    )
