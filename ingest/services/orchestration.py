"""One ingest path for every entry point: register -> apply the bundle's marks -> load (here,
or queued on the workers) -> ask for an analysis.

The entry points only say where their evidence is:

- ``bundle_ingest``: a file, bundle directory or archive on this machine (the ``ingest``
  command, ``demo``, ``analyze PATH``);
- ``files_ingest``: files handed over by a client, in memory or spooled to disk (the upload
  page; a Prometheus pull hands its responses over the same way);
- ``records_ingest``: records an entry point validated itself (the push API).

Loads are queued once the registration has committed (a worker must find the rows), so callers
do not wrap these functions in a transaction of their own. Analyses are requested through
``analysis_request``, which enqueues the run when the request commits.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from ingest.parsers.types import ParseResult
from ingest.services import IngestError, archives, bundles, loading, storage, workers
from ingest.services.artifacts import artifact_done, public_text
from timeline.analysis import analysis_run
from timeline.choices import RunStatus
from timeline.models import Analysis, Artifact, Incident
from timeline.services import (
    MARKS,
    ServiceError,
    analysis_request,
    incident_get_or_create,
    incident_set_mark,
    team_get_or_create,
)


class Load(StrEnum):
    """Where registered files are parsed and loaded."""

    HERE = "here"  # in this process, before the call returns (commands without a worker)
    WORKER = "worker"  # queued on the Celery workers


@dataclass(frozen=True)
class NewIncident:
    """The incident to ingest into, created when no incident has the slug yet (its title and
    timezone then default to the bundle's incident.toml)."""

    slug: str
    team: str = "default"
    title: str = ""


@dataclass(frozen=True)
class Upload:
    """One file handed over by a client: its bytes in memory or in a file on disk."""

    name: str
    size: int
    path: Path | None = None
    data: bytes | None = None


@dataclass
class IngestOutcome:
    """What one call registered, refused, queued and loaded, for the entry point to report."""

    incident: Incident
    incident_created: bool = False
    artifacts: list[Artifact] = field(default_factory=list)
    created: list[Artifact] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # whole files refused, with the reason
    marks: list[str] = field(default_factory=list)  # marks set from incident.toml
    queued: list[Artifact] = field(default_factory=list)
    unqueued: list[Artifact] = field(default_factory=list)  # left pending: no broker
    queue_error: str = ""
    analysis: Analysis | None = None

    @property
    def failed(self) -> list[Artifact]:
        return [a for a in self.artifacts if a.status == RunStatus.FAILED]

    def add(self, artifact: Artifact, created: bool) -> None:
        self.artifacts.append(artifact)
        if created:
            self.created.append(artifact)


def bundle_ingest(
    *,
    incident: Incident | NewIncident,
    path: Path,
    user: Any = None,
    timezone_name: str = "",
    default_time: dt.datetime | None = None,
    load: Load = Load.WORKER,
    analyze: bool = True,
    on_loaded: Callable[[Artifact], None] | None = None,
) -> IngestOutcome:
    """Ingest a file, a bundle directory or an archive on this machine. The incident (when
    new), the registration and the bundle's marks commit together or not at all."""
    with storage.staged() as stage:  # the files reach their place once the rows committed
        with transaction.atomic():  # a refused registration leaves no empty incident behind
            target, created = _incident_resolve(incident, Path(path), timezone_name)
            outcome = IngestOutcome(incident=target, incident_created=created)
            _path_register(
                outcome,
                path=Path(path),
                user=user,
                timezone_name=timezone_name,
                default_time=default_time,
                stage=stage,
            )
        stage.publish()
    return _load(outcome, load=load, analyze=analyze, on_loaded=on_loaded)


def files_ingest(
    *,
    incident: Incident,
    files: Iterable[Upload],
    user: Any = None,
    load: Load = Load.WORKER,
    analyze: bool = True,
) -> IngestOutcome:
    """Ingest files handed over by a client. Each registers on its own (an archive as a bundle,
    with its incident.toml); a refused file is reported in the outcome and the others go on."""
    outcome = IngestOutcome(incident=incident)
    for upload in files:
        name = Path(upload.name).name or "upload"  # never trust a client's path
        try:
            storage.size_check(name, upload.size, suffix="; nothing was stored.")
            if archives.is_archive(Path(name)):
                _archive_register(outcome, upload=upload, name=name, user=user)
            elif upload.path is not None:
                outcome.add(
                    *storage.artifact_register_file(
                        incident=incident, name=name, path=upload.path, user=user
                    )
                )
            else:
                outcome.add(
                    *storage.artifact_register_bytes(
                        incident=incident, name=name, data=upload.data or b"", user=user
                    )
                )
        except IngestError as exc:
            outcome.refused.append(public_text(str(exc)))
    return _load(outcome, load=load, analyze=analyze)


def records_ingest(
    *,
    incident: Incident,
    name: str,
    digest: str,
    size: int,
    result: ParseResult,
    user: Any = None,
) -> Artifact:
    """Ingest records an entry point validated itself, as one artifact identified by
    ``digest`` (the same body twice adds nothing), loaded here in one transaction so the caller
    can answer with its counts."""
    existing = Artifact.objects.filter(incident=incident, sha256=digest).first()
    if existing is not None:
        return existing
    with transaction.atomic():
        artifact, created = Artifact.objects.get_or_create(
            incident=incident,
            sha256=digest,
            defaults={
                "name": name,
                "kind": result.kind,
                "size": size,
                "status": RunStatus.RUNNING,
                "started_at": timezone.now(),
                "uploaded_by": user if getattr(user, "is_authenticated", False) else None,
            },
        )
        if not created:
            return artifact
        artifact_done(
            artifact=artifact, counts=loading.result_load(artifact=artifact, result=result)
        )
        analysis_request(incident_id=incident.pk)
    return artifact


def ingest_follow(
    *,
    outcome: IngestOutcome,
    timeout: float,
    analyze: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
) -> IngestOutcome:
    """Wait for the workers to load what this ingest queued (``on_progress(finished, queued)``)
    and, with ``analyze``, to finish the newest requested analysis; IngestError past
    ``timeout`` (each)."""
    workers.loads_wait(artifacts=outcome.queued, timeout=timeout, on_progress=on_progress)
    outcome.artifacts = _reread(outcome.artifacts)
    if analyze:
        outcome.analysis = workers.analysis_wait(incident_id=outcome.incident.pk, timeout=timeout)
    return outcome


# --- the steps ----------------------------------------------------------------------------------


def _incident_resolve(
    target: Incident | NewIncident, path: Path, timezone_name: str
) -> tuple[Incident, bool]:
    if isinstance(target, Incident):
        return target, False
    settings = bundles.read_bundle_settings(path) if path.is_dir() else bundles.BundleSettings()
    return incident_get_or_create(
        slug=target.slug,
        team=team_get_or_create(name=target.team),
        title=target.title or settings.title,
        timezone=timezone_name or settings.timezone or "UTC",
    )


def _path_register(
    outcome: IngestOutcome,
    *,
    path: Path,
    user: Any,
    timezone_name: str = "",
    default_time: dt.datetime | None = None,
    stage: storage.Stage,
) -> None:
    with transaction.atomic():  # the files and the bundle's marks, whole or not at all
        registered = bundles.path_register(
            incident=outcome.incident,
            path=path,
            user=user,
            timezone_name=timezone_name,
            default_time=default_time,
            stage=stage,
        )
        marks = _marks_apply(incident=outcome.incident, settings=registered.settings, user=user)
    for artifact in registered.artifacts:
        outcome.add(artifact, artifact in registered.created)
    outcome.marks += marks


def _archive_register(outcome: IngestOutcome, *, upload: Upload, name: str, user: Any) -> None:
    """An uploaded archive is extracted from a file of its own name (its suffix says how), in
    a stage under UPLOAD_ROOT: refused, it leaves nothing on disk."""
    with storage.staged() as stage:
        archive = stage.dir / "upload" / name
        archive.parent.mkdir()
        if upload.path is not None:
            shutil.copyfile(upload.path, archive)
        else:
            archive.write_bytes(upload.data or b"")
        _path_register(outcome, path=archive, user=user, stage=stage)
        stage.publish()


def _marks_apply(*, incident: Incident, settings: bundles.BundleSettings, user: Any) -> list[str]:
    """incident.toml's marks, set through the audited mark service. A mark the incident has
    already (an operator's, or an earlier bundle's) is kept."""
    incident.refresh_from_db(fields=list(MARKS.values()))
    applied = []
    for mark, at in (("last_good", settings.last_good), ("first_bad", settings.first_bad)):
        if at is None or getattr(incident, MARKS[mark]) is not None:
            continue
        try:
            # The ingest asks for one analysis itself once its files are loaded.
            incident_set_mark(incident=incident, user=user, mark=mark, at=at, analyze=False)
        except ServiceError as exc:
            raise IngestError(f"incident.toml: marks.{mark}: {exc}") from None
        applied.append(mark)
    return applied


def _load(
    outcome: IngestOutcome,
    *,
    load: Load,
    analyze: bool,
    on_loaded: Callable[[Artifact], None] | None = None,
) -> IngestOutcome:
    pending = [a for a in outcome.artifacts if a.status == RunStatus.PENDING]
    if load == Load.WORKER:
        queued = workers.artifacts_queue(artifacts=pending, analyze=analyze)
        outcome.queued, outcome.unqueued, outcome.queue_error = queued
        if analyze and outcome.marks and not outcome.queued:
            analysis_request(incident_id=outcome.incident.pk)  # the marks alone changed
        return outcome
    for artifact in pending:
        loaded = loading.artifact_ingest(artifact_id=artifact.pk)
        if on_loaded:
            on_loaded(loaded)
    outcome.artifacts = _reread(outcome.artifacts)
    if analyze and (outcome.marks or any(a.status == RunStatus.DONE for a in outcome.artifacts)):
        analysis_request(incident_id=outcome.incident.pk)
        outcome.analysis = analysis_run(incident_id=outcome.incident.pk)
    return outcome


def _reread(artifacts: list[Artifact]) -> list[Artifact]:
    return list(Artifact.objects.filter(pk__in=[a.pk for a in artifacts]))
