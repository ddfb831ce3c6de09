"""Writes of the core app: incidents, teams, analysis requests, audit."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils.text import slugify

from timeline.models import AuditEntry, Incident, Team


class ServiceError(Exception):
    """A domain rule refused the change; the message is for the user."""


def team_get_or_create(*, name: str) -> Team:
    team, _ = Team.objects.get_or_create(slug=slugify(name)[:100], defaults={"name": name})
    return team


def audit(
    *,
    incident: Incident,
    actor: Any,
    action: str,
    target: str = "",
    data: dict[str, Any] | None = None,
) -> None:
    AuditEntry.objects.create(
        incident=incident,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        action=action,
        target=target[:200],
        data=data or {},
    )


@transaction.atomic
def incident_create(
    *,
    team: Team,
    title: str,
    slug: str = "",
    timezone: str = "UTC",
    user: AbstractBaseUser | None = None,
) -> Incident:
    slug = slugify(slug or title)[:100]
    if not slug:
        raise ServiceError("An incident needs a title with at least one letter or digit.")
    if Incident.objects.filter(slug=slug).exists():
        raise ServiceError(f"An incident with the slug {slug!r} exists already.")
    incident = Incident.objects.create(
        team=team, title=title[:200], slug=slug, timezone=timezone, created_by=user
    )
    audit(incident=incident, actor=user, action="incident.create", target=slug)
    return incident


def incident_get_or_create(
    *,
    slug: str,
    team: Team,
    title: str = "",
    timezone: str = "UTC",
    user: AbstractBaseUser | None = None,
) -> tuple[Incident, bool]:
    existing = Incident.objects.filter(slug=slugify(slug)).first()
    if existing is not None:
        return existing, False
    return incident_create(
        team=team, title=title or slug, slug=slug, timezone=timezone, user=user
    ), True


def analysis_request(*, incident_id: int) -> int:
    """Bump the incident's analysis version and enqueue a run for it after commit.

    Many ingests in a row each ask for a run; every run but the newest finds itself superseded
    and stops at once, so a burst costs one analysis."""
    Incident.objects.filter(pk=incident_id).update(analysis_version=F("analysis_version") + 1)
    version = Incident.objects.values_list("analysis_version", flat=True).get(pk=incident_id)

    def _enqueue() -> None:
        from timeline.tasks import analyze_incident

        analyze_incident.delay(incident_id, version)

    transaction.on_commit(_enqueue)
    return int(version)
