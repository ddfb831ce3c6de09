"""python manage.py analyze PATH_OR_SLUG [--json]: run the correlation and print its result.

With a PATH, the bundle is first ingested into a fresh incident. ``--json`` prints exactly one
JSON object on stdout (a public interface: keep its shape stable; ``analysis.public_json``
builds it, the engine's result plus the weights it scored with); progress goes to stderr.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ingest.services import IngestError, orchestration
from ingest.services.orchestration import Load, NewIncident
from timeline.analysis import analysis_run, public_json
from timeline.models import Incident
from timeline.services import analysis_request


class Command(BaseCommand):
    help = "Correlate an incident (or a bundle PATH ingested into a fresh incident)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("target", help="incident slug, or a bundle path / archive / file")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.add_argument("--team", default="default")

    def handle(self, *args: Any, **opts: Any) -> None:
        target: str = opts["target"]
        incident = Incident.objects.filter(slug=target).first()
        if incident is None:
            path = Path(target)
            if not path.exists():
                raise CommandError(f"{target}: neither an incident slug nor a path")
            slug = f"{path.name.split('.')[0][:60]}-{uuid.uuid4().hex[:8]}".lower()
            incident = self._ingest(path, slug, opts["team"])
        analysis_request(incident_id=incident.pk)
        incident.refresh_from_db()
        analysis = analysis_run(incident_id=incident.pk, version=incident.analysis_version)
        if analysis is None:
            raise CommandError("a newer analysis request superseded this run; run it again")
        if opts["json"]:
            self.stdout.write(json.dumps(public_json(incident, analysis), sort_keys=False))
            return
        result = analysis.result
        self.stdout.write(f"incident {incident.slug}")
        self.stdout.write(f"  last known good: {result.get('last_good')}")
        self.stdout.write(f"  first bad:       {result.get('first_bad')}")
        self.stdout.write(f"  scored with correlation weights v{analysis.weights_version}")
        for i, s in enumerate(result.get("suspects", []), start=1):
            self.stdout.write(
                f"  #{i} {s['key']}: {s['old']} -> {s['new']} at {s['at']} score {s['score']}"
            )
            for r in s["reasons"]:
                self.stdout.write(f"       - {r}")
        for r in result.get("ruled_out", []):
            self.stdout.write(f"  ruled out: {r['hypothesis']}")

    def _ingest(self, path: Path, slug: str, team: str) -> Incident:
        """The bundle into a fresh incident, here; the analysis is run by handle."""
        try:
            outcome = orchestration.bundle_ingest(
                incident=NewIncident(slug=slug, team=team), path=path, load=Load.HERE, analyze=False
            )
        except IngestError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"incident {slug}: {len(outcome.artifacts)} files")
        for a in outcome.failed:
            self.stderr.write(f"  {a.error}")
        if outcome.failed:
            raise CommandError(
                f"{len(outcome.failed)} of {len(outcome.artifacts)} files failed (see above)"
            )
        return outcome.incident
