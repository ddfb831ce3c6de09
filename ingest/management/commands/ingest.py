"""python manage.py ingest PATH --incident SLUG: a file, a bundle directory, a .zip or .tar.gz."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from kombu.exceptions import OperationalError as BrokerError
from tqdm import tqdm

from ingest import services
from ingest.tasks import ingest_artifact
from timeline.choices import RunStatus
from timeline.models import Artifact, Incident
from timeline.services import (
    ServiceError,
    analysis_request,
    incident_get_or_create,
    team_get_or_create,
)


class Command(BaseCommand):
    help = "Ingest a file, bundle directory or archive into an incident (created if missing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--incident", required=True, help="incident slug")
        parser.add_argument("--team", default="default", help="team of a new incident")
        parser.add_argument("--title", default="", help="title of a new incident")
        parser.add_argument(
            "--timezone", default="", help="zone of naive timestamps (default: incident.toml)"
        )
        parser.add_argument(
            "--at", default="", help="time for records that carry none (ISO 8601 with zone)"
        )
        parser.add_argument(
            "--worker",
            action="store_true",
            help="queue the work on the Celery workers and follow its progress",
        )
        parser.add_argument("--timeout", type=float, default=600.0, help="with --worker")
        parser.add_argument("--no-analyze", action="store_true", help="skip the analysis")

    def handle(self, *args: Any, **opts: Any) -> None:
        at = None
        if opts["at"]:
            try:
                at = dt.datetime.fromisoformat(opts["at"])
            except ValueError:
                raise CommandError(f"--at {opts['at']!r}: expected ISO 8601") from None
            if at.tzinfo is None:
                raise CommandError("--at needs a zone offset, e.g. 2026-11-20T15:45:00-08:00")
        path: Path = opts["path"]
        if not path.exists():
            raise CommandError(f"{path}: no such file or directory")
        try:
            with transaction.atomic():  # a refused registration leaves no empty incident behind
                incident, created, outcome = self._register(path, at, opts)
        except (services.IngestError, ServiceError) as exc:
            raise CommandError(str(exc)) from None
        self._continue(incident, created, outcome, opts)

    def _register(
        self, path: Path, at: dt.datetime | None, opts: dict[str, Any]
    ) -> tuple[Incident, bool, services.RegisterOutcome]:
        settings = (
            services.read_bundle_settings(path) if path.is_dir() else services.BundleSettings()
        )
        team = team_get_or_create(name=opts["team"])
        incident, created = incident_get_or_create(
            slug=opts["incident"],
            team=team,
            title=opts["title"] or settings.title,
            timezone=opts["timezone"] or settings.timezone or "UTC",
        )
        outcome = services.path_register(
            incident=incident, path=path, timezone_name=opts["timezone"], default_time=at
        )
        return incident, created, outcome

    def _continue(
        self,
        incident: Incident,
        created: bool,
        outcome: services.RegisterOutcome,
        opts: dict[str, Any],
    ) -> None:
        if outcome.settings.last_good or outcome.settings.first_bad:
            incident.last_good_at = incident.last_good_at or outcome.settings.last_good
            incident.first_bad_at = incident.first_bad_at or outcome.settings.first_bad
            incident.save(update_fields=["last_good_at", "first_bad_at"])
        self.stdout.write(
            f"incident {incident.slug} ({'new' if created else 'existing'}): "
            f"{len(outcome.artifacts)} files, {len(outcome.created)} new"
        )
        pending = [a for a in outcome.artifacts if a.status == RunStatus.PENDING]
        if opts["worker"]:
            self._via_worker(pending, opts["timeout"], analyze=not opts["no_analyze"])
        else:
            bar = tqdm(total=len(pending), unit="file", disable=not pending, file=self.stderr)
            for artifact in pending:
                bar.set_description(artifact.name[-40:])
                services.artifact_ingest(artifact_id=artifact.pk)
                bar.update()
            bar.close()
        artifacts = list(Artifact.objects.filter(pk__in=[a.pk for a in outcome.artifacts]))
        self._summary(artifacts)
        if (
            not opts["worker"]
            and not opts["no_analyze"]
            and any(a.status == RunStatus.DONE for a in artifacts)
        ):
            from timeline.analysis import analysis_run

            incident.refresh_from_db()
            analysis_request(incident_id=incident.pk)
            analysis_run(incident_id=incident.pk)
            self.stdout.write("analysis done")
        if opts["worker"] and not opts["no_analyze"]:
            self._wait_for_analysis(incident.pk, opts["timeout"])
        failed = [a for a in artifacts if a.status == RunStatus.FAILED]
        if failed:
            raise CommandError(f"{len(failed)} of {len(artifacts)} files failed (see above)")

    def _via_worker(self, pending: list[Artifact], timeout: float, *, analyze: bool) -> None:
        try:
            for artifact in pending:
                ingest_artifact.delay(artifact.pk, analyze)
        except BrokerError as exc:
            raise CommandError(
                f"the work queue is unavailable ({exc}); the files are registered and stay "
                "pending: run again when the broker is back, or without --worker to ingest here"
            ) from None
        ids = [a.pk for a in pending]
        bar = tqdm(total=len(ids), unit="file", disable=not ids, file=self.stderr)
        deadline = time.monotonic() + timeout
        finished = 0
        while finished < len(ids):
            finished = Artifact.objects.filter(
                pk__in=ids, status__in=[RunStatus.DONE, RunStatus.FAILED]
            ).count()
            bar.n = finished
            bar.refresh()
            if time.monotonic() > deadline:
                raise CommandError(
                    f"{len(ids) - finished} files still queued after {timeout:.0f}s: "
                    "is a Celery worker running?"
                )
            time.sleep(0.2)
        bar.close()

    def _wait_for_analysis(self, incident_id: int, timeout: float) -> None:
        """Wait until the newest requested analysis has finished on the workers."""
        from timeline.models import Analysis, Incident

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            version = Incident.objects.values_list("analysis_version", flat=True).get(
                pk=incident_id
            )
            run = Analysis.objects.filter(incident_id=incident_id, version=version).first()
            if version == 0:
                return
            if run is not None and run.status in (RunStatus.DONE, RunStatus.FAILED):
                if run.status == RunStatus.FAILED:
                    raise CommandError(f"analysis failed: {run.error}")
                self.stdout.write(f"analysis v{version} done")
                return
            time.sleep(0.2)
        raise CommandError(f"analysis not finished after {timeout:.0f}s: is a worker running?")

    def _summary(self, artifacts: list[Artifact]) -> None:
        self.stdout.write(f"{'file':44} {'kind':24} {'status':8} {'records':>10} {'time':>7}")
        for a in artifacts:
            counts = a.counts or {}
            records = (
                counts.get("events", 0) + counts.get("config_changes", 0) + counts.get("samples", 0)
            )
            seconds = counts.get("seconds")
            self.stdout.write(
                f"{a.name[-44:]:44} {a.kind or '?':24} {a.status:8} {records:>10} "
                f"{f'{seconds:.2f}s' if seconds is not None else '':>7}"
            )
            if a.error:
                self.stdout.write(self.style.ERROR(f"  {a.error}"))
