"""python manage.py demo: a demo team and login, and the DSV4 sample incident loaded through
the Celery worker. For local demos only: the login it creates is printed, never reused."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ingest.samples.dsv4_wedge import write_bundle
from ingest.services import IngestError, orchestration
from ingest.services.orchestration import Load, NewIncident
from timeline.choices import RunStatus
from timeline.models import Incident
from timeline.services import team_get_or_create

SLUG = "dsv4-wedge"


class Command(BaseCommand):
    help = "Create the demo login and load the DSV4 wedge sample incident (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="", help="default: a new random one")
        parser.add_argument("--no-worker", action="store_true", help="ingest in this process")
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args: Any, **opts: Any) -> None:
        team = team_get_or_create(name="Inference")
        user_model = get_user_model()
        user, _ = user_model.objects.get_or_create(username=opts["username"])
        password = opts["password"] or secrets.token_urlsafe(9)
        user.set_password(password)
        user.save()
        team.members.add(user)
        team.admins.add(user)  # the demo login manages its team (the Teams page)
        bundle = Path(settings.BASE_DIR) / ".data" / f"sample-seed{opts['seed']}" / SLUG
        if not bundle.exists():
            self.stdout.write(f"wrote {write_bundle(bundle, seed=opts['seed'])}")
        if (
            not Incident.objects.filter(slug=SLUG).exists()
            or Incident.objects.get(slug=SLUG).analyses.filter(status=RunStatus.DONE).count() == 0
        ):
            self._ingest(bundle, team.name, worker=not opts["no_worker"])
        Incident.objects.filter(slug=SLUG).update(team=team)
        (Path(settings.BASE_DIR) / ".data").mkdir(exist_ok=True)
        self.stdout.write(
            self.style.SUCCESS(f"\nDemo ready. Log in as  {user.get_username()} / {password}\n")
        )

    def _ingest(self, bundle: Path, team: str, *, worker: bool) -> None:
        try:
            outcome = orchestration.bundle_ingest(
                incident=NewIncident(slug=SLUG, team=team),
                path=bundle,
                load=Load.WORKER if worker else Load.HERE,
            )
            if outcome.queue_error:
                raise CommandError(f"the work queue is unavailable ({outcome.queue_error})")
            if worker:
                orchestration.ingest_follow(outcome=outcome, timeout=600.0)
        except IngestError as exc:
            raise CommandError(str(exc)) from None
        for a in outcome.failed:
            self.stderr.write(f"  {a.error}")
        if outcome.failed:
            raise CommandError(f"{len(outcome.failed)} of {len(outcome.artifacts)} files failed")
        self.stdout.write(
            f"incident {SLUG}: {len(outcome.artifacts)} files loaded"
            + (f", analysis v{outcome.analysis.version}" if outcome.analysis else "")
        )
