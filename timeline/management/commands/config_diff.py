"""python manage.py config_diff --incident SLUG --at A --vs B: every key that differs."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from timeline.analysis import merged_changes
from timeline.correlation import config_state
from timeline.models import Incident


def _time(raw: str) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise CommandError(f"{raw!r}: expected an ISO 8601 time") from None
    if value.tzinfo is None:
        raise CommandError(f"{raw!r}: give a zone offset (e.g. Z or -08:00)")
    return value.astimezone(dt.UTC)


class Command(BaseCommand):
    help = "Print every config key whose effective value differs between two moments."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--incident", required=True)
        parser.add_argument("--at", required=True, help="first moment (ISO 8601 with zone)")
        parser.add_argument("--vs", required=True, help="second moment (ISO 8601 with zone)")

    def handle(self, *args: Any, **opts: Any) -> None:
        incident = Incident.objects.filter(slug=opts["incident"]).first()
        if incident is None:
            raise CommandError(f"no incident {opts['incident']!r}")
        a, b = _time(opts["at"]), _time(opts["vs"])
        merged = merged_changes(incident)
        rows = config_state.diff_states(merged, a, b)
        if not rows:
            self.stdout.write("no differences")
            return
        width = max(len(k) for k, _, _ in rows)
        self.stdout.write(f"{'key':{width}}  {a.isoformat():30}  {b.isoformat()}")
        for key, va, vb in rows:
            self.stdout.write(
                f"{key:{width}}  {str(va if va is not None else '(unset)'):30}  "
                f"{vb if vb is not None else '(unset)'}"
            )
