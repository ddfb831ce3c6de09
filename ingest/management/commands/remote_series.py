"""python manage.py remote_series --incident SLUG --source NAME --query PROMQL: draw a series
straight from a data source of the incident's team (never copied); ``--list`` shows the
incident's remote series, ``--remove ID`` removes one."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ingest.management.commands.prometheus_pull import incident_named, team_source
from ingest.services import IngestError
from ingest.services.remote import remote_series_add, remote_series_remove
from timeline.models import RemoteSeries


class Command(BaseCommand):
    help = "Add, list or remove an incident's remote series (queried, not copied)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--incident", required=True, help="incident slug")
        parser.add_argument("--source", default="", help="a data source of the incident's team")
        parser.add_argument("--query", default="", help="a series selector or PromQL")
        parser.add_argument("--name", default="", help="the metric it stands for")
        parser.add_argument("--title", default="", help="its panel's title")
        parser.add_argument("--list", action="store_true", help="list the remote series")
        parser.add_argument("--remove", type=int, default=None, metavar="ID")

    def handle(self, *args: Any, **opts: Any) -> None:
        incident = incident_named(opts["incident"])
        if opts["remove"] is not None:
            series = (
                RemoteSeries.objects.filter(incident=incident, pk=opts["remove"])
                .select_related("source", "incident")
                .first()
            )
            if series is None:
                raise CommandError(f"no remote series {opts['remove']} in {incident.slug}")
            remote_series_remove(series=series)
            self.stdout.write(f"removed remote series {opts['remove']}")
            return
        if opts["list"]:
            for r in RemoteSeries.objects.filter(incident=incident).select_related("source"):
                name = f" as {r.name}" if r.name else ""
                self.stdout.write(f"{r.pk}\t{r.source.name}\t{r.query}{name}\t{r.title}")
            return
        if not opts["source"] or not opts["query"]:
            raise CommandError("give --source and --query (or --list, or --remove ID)")
        source = team_source(incident, opts["source"])
        try:
            series = remote_series_add(
                incident=incident,
                source=source,
                query=opts["query"],
                name=opts["name"],
                title=opts["title"],
            )
        except IngestError as exc:
            raise CommandError(str(exc)) from None
        resolution = f", samples every {series.resolution_s:g} s" if series.resolution_s else ""
        self.stdout.write(
            f"remote series {series.pk}: {series.query} from {source.name}"
            f"{' as ' + series.name if series.name else ''}{resolution}"
        )
