"""python manage.py sample_incident OUT_DIR [--seed N]: write the DSV4 wedge sample bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ingest.samples.dsv4_wedge import write_bundle


class Command(BaseCommand):
    help = "Write the deterministic DSV4 wedge sample incident bundle (same seed, same bytes)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out_dir", type=Path)
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            path = write_bundle(opts["out_dir"], seed=opts["seed"])
        except (FileExistsError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"wrote {path}")
