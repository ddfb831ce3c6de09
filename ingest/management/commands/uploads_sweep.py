"""python manage.py uploads_sweep [--grace-minutes N] [--dry-run]: remove files under
UPLOAD_ROOT that no artifact points to (beat runs the same sweep every hour)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ingest.services import sweep


class Command(BaseCommand):
    help = "Remove files under UPLOAD_ROOT that no artifact points to and that are not recent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--grace-minutes",
            type=float,
            default=None,
            help="leave what was written this recently (default: UPLOADS_SWEEP_GRACE_S)",
        )
        parser.add_argument("--dry-run", action="store_true", help="only say what would go")

    def handle(self, *args: Any, **opts: Any) -> None:
        minutes = opts["grace_minutes"]
        swept = sweep.uploads_sweep(
            grace_s=None if minutes is None else minutes * 60, dry_run=opts["dry_run"]
        )
        dry = opts["dry_run"]
        for rel in swept.removed:
            self.stdout.write(f"{'would remove' if dry else 'removed'} {rel}")
        self.stdout.write(
            f"{len(swept.removed)} orphan(s) {'would be removed' if dry else 'removed'}, "
            f"{swept.freed_bytes} bytes; {swept.kept_young} recent one(s) left alone"
        )
