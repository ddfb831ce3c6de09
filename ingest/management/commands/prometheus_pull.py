"""python manage.py prometheus_pull --incident SLUG --url URL: pull an incident's metrics from a
Prometheus server (queued on the workers; ``--here`` runs it in this process)."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ingest.services import IngestError, pulls
from timeline.choices import RunStatus
from timeline.models import DataSource, Incident, MetricsPull


def incident_named(slug: str) -> Incident:
    """The incident of ``--incident``, or the command's error."""
    incident = Incident.objects.filter(slug=slug).first()
    if incident is None:
        raise CommandError(f"no incident {slug!r}")
    return incident


def team_source(incident: Incident, name: str) -> DataSource:
    """The data source of ``--source`` among the incident's team's, or the command's error."""
    source = DataSource.objects.filter(team=incident.team, name=name).first()
    if source is None:
        raise CommandError(f"no data source {name!r} in {incident.team}")
    return source


def _when(value: str, flag: str) -> dt.datetime:
    try:
        at = dt.datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"{flag} {value!r}: expected ISO 8601") from None
    if at.tzinfo is None:
        raise CommandError(f"{flag} needs a zone offset, e.g. 2026-11-20T15:45:00Z")
    return at


class Command(BaseCommand):
    help = "Pull metrics for an incident's window from a Prometheus server (raw samples)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--incident", required=True, help="incident slug")
        parser.add_argument("--url", default="", help="Prometheus base URL (no credentials)")
        parser.add_argument("--source", default="", help="a data source of the incident's team")
        parser.add_argument(
            "--query",
            action="append",
            default=[],
            help="series selector or PromQL (repeatable; default: the SGLang and DCGM series)",
        )
        parser.add_argument("--start", default="", help="ISO 8601 (default: the incident's)")
        parser.add_argument("--end", default="", help="ISO 8601 (default: the incident's)")
        parser.add_argument(
            "--step", type=float, default=0.0, help="seconds, for expressions (subqueries)"
        )
        parser.add_argument("--here", action="store_true", help="run here, not on a worker")
        parser.add_argument("--timeout", type=float, default=600.0)

    def handle(self, *args: Any, **opts: Any) -> None:
        incident = incident_named(opts["incident"])
        source = team_source(incident, opts["source"]) if opts["source"] else None
        try:
            pull = pulls.pull_create(
                incident=incident,
                url=opts["url"],
                source=source,
                queries=opts["query"],
                start=_when(opts["start"], "--start") if opts["start"] else None,
                end=_when(opts["end"], "--end") if opts["end"] else None,
                step=opts["step"],
            )
        except IngestError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"pull {pull.pk}: {len(pull.queries)} queries from {pull.url}, "
            f"{pull.start:%Y-%m-%dT%H:%M:%SZ} to {pull.end:%Y-%m-%dT%H:%M:%SZ}"
        )
        if opts["here"]:
            pull = pulls.pull_run(pull_id=pull.pk)
        else:
            pulls.pull_queue(pull=pull)
            pull = self._follow(pull, opts["timeout"])
        self._report(pull)

    def _follow(self, pull: MetricsPull, timeout: float) -> MetricsPull:
        deadline = time.monotonic() + timeout
        shown = -1
        while time.monotonic() < deadline:
            pull.refresh_from_db()
            if pull.status in (RunStatus.DONE, RunStatus.FAILED):
                return pull
            percent = int(pull.progress * 100)
            if percent != shown:
                self.stderr.write(f"pull {pull.pk}: {pull.status} {percent}%")
                shown = percent
            time.sleep(0.2)
        raise CommandError(f"pull {pull.pk} not finished after {timeout:.0f}s: is a worker up?")

    def _report(self, pull: MetricsPull) -> None:
        for warning in pull.counts.get("warnings", []):
            self.stderr.write(f"warning: {warning}")
        if pull.status == RunStatus.FAILED:
            raise CommandError(f"pull {pull.pk} failed: {pull.error}")
        c = pull.counts
        self.stdout.write(
            f"pull {pull.pk} done: {c.get('samples', 0)} new samples in {c.get('series', 0)} "
            f"series, {c.get('new_artifacts', 0)} new of {c.get('artifacts', 0)} answers"
        )
