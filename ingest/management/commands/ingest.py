"""python manage.py ingest PATH --incident SLUG: a file, a bundle directory, a .zip or .tar.gz."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from ingest.services import IngestError, orchestration
from ingest.services.orchestration import IngestOutcome, Load, NewIncident
from timeline.models import Artifact
from timeline.services import ServiceError


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
        analyze = not opts["no_analyze"]
        bar = tqdm(unit="file", file=self.stderr, disable=opts["worker"])

        def loaded(artifact: Artifact) -> None:
            bar.set_description(artifact.name[-40:])
            bar.update()

        try:
            outcome = orchestration.bundle_ingest(
                incident=NewIncident(slug=opts["incident"], team=opts["team"], title=opts["title"]),
                path=opts["path"],
                timezone_name=opts["timezone"],
                default_time=at,
                load=Load.WORKER if opts["worker"] else Load.HERE,
                analyze=analyze,
                on_loaded=loaded,
            )
        except (IngestError, ServiceError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        self.stdout.write(
            f"incident {outcome.incident.slug} "
            f"({'new' if outcome.incident_created else 'existing'}): "
            f"{len(outcome.artifacts)} files, {len(outcome.created)} new"
        )
        if opts["worker"]:
            self._follow(outcome, opts["timeout"], analyze=analyze)
        self._summary(outcome.artifacts)
        if outcome.analysis is not None:
            version = f" v{outcome.analysis.version}" if opts["worker"] else ""
            self.stdout.write(f"analysis{version} done")
        if outcome.failed:
            raise CommandError(
                f"{len(outcome.failed)} of {len(outcome.artifacts)} files failed (see above)"
            )

    def _follow(self, outcome: IngestOutcome, timeout: float, *, analyze: bool) -> None:
        if outcome.queue_error:
            raise CommandError(
                f"the work queue is unavailable ({outcome.queue_error}); the files are registered "
                "and stay pending: run again when the broker is back, or without --worker to "
                "ingest here"
            )
        bar = tqdm(total=len(outcome.queued), unit="file", file=self.stderr)

        def progress(finished: int, total: int) -> None:
            bar.n = finished
            bar.refresh()

        try:
            orchestration.ingest_follow(
                outcome=outcome, timeout=timeout, analyze=analyze, on_progress=progress
            )
        except IngestError as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()

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
            warnings = counts.get("warnings") or []
            if warnings:
                total = counts.get("warning_count", len(warnings))
                self.stdout.write(self.style.WARNING(f"  {total} warning(s):"))
                for warning in warnings:
                    self.stdout.write(self.style.WARNING(f"    {warning}"))
