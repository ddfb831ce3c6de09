"""python manage.py api_token --team NAME --name LABEL: a push-API token (printed once)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ingest.push import token_create
from timeline.services import team_get_or_create


class Command(BaseCommand):
    help = "Create a bearer token for the push API of one team; it is shown only now."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", required=True)
        parser.add_argument("--name", required=True, help="what the token is for, e.g. 'ci'")

    def handle(self, *args: Any, **opts: Any) -> None:
        team = team_get_or_create(name=opts["team"])
        self.stdout.write(token_create(team=team, name=opts["name"]))
