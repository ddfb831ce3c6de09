"""Writes of incidents: creating and editing them, their operator marks, analysis requests,
and the teams they belong to."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Now
from django.utils.text import slugify

from timeline.choices import IncidentStatus
from timeline.models import Incident, Team
from timeline.services.audit import audit
from timeline.services.common import ServiceError, aware_utc, clean_text, jsonable

log = logging.getLogger(__name__)


def team_get_or_create(*, name: str) -> Team:
    team, _ = Team.objects.get_or_create(slug=slugify(name)[:100], defaults={"name": name})
    return team


@transaction.atomic
def incident_create(
    *,
    team: Team,
    title: str,
    slug: str = "",
    timezone: str = "UTC",
    user: Any = None,
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
    Incident.objects.filter(pk=incident_id).update(
        analysis_version=F("analysis_version") + 1, analysis_queued_at=Now()
    )
    version = Incident.objects.values_list("analysis_version", flat=True).get(pk=incident_id)

    def _enqueue() -> None:
        from kombu.exceptions import OperationalError as BrokerError

        from timeline.tasks import analyze_incident

        try:
            analyze_incident.delay(incident_id, version)
        except BrokerError:
            # The request is recorded (the version was bumped) but not queued: the page shows
            # the analysis as pending, and the reaper queues it once the broker answers.
            Incident.objects.filter(pk=incident_id, analysis_version=version).update(
                analysis_queued_at=None
            )
            log.warning(
                "broker unreachable: analysis v%s of incident %s is queued when it is back",
                version,
                incident_id,
            )

    transaction.on_commit(_enqueue)
    return int(version)


MARKS = {"last_good": "last_good_at", "first_bad": "first_bad_at"}


@transaction.atomic
def incident_set_mark(
    *, incident: Incident, user: Any, mark: str, at: dt.datetime | None, analyze: bool = True
) -> Incident:
    """Set (or clear, with ``at=None``) the operator's last-known-good or first-bad mark and
    re-run the analysis, which honours the marks (``analyze=False``: the caller asks for it,
    as an ingest does once its files are loaded)."""
    if mark not in MARKS:
        raise ServiceError(f"{mark!r} is not a mark; use last_good or first_bad.")
    when = aware_utc(at, what="The mark's time")
    locked = Incident.objects.select_for_update().get(pk=incident.pk)
    field = MARKS[mark]
    old = getattr(locked, field)
    if old == when:
        raise ServiceError("The mark is set to that already." if when else "No mark to clear.")
    other = {k: getattr(locked, f) for k, f in MARKS.items()}
    other[mark] = when
    if other["last_good"] and other["first_bad"] and other["last_good"] >= other["first_bad"]:
        raise ServiceError("The last known good mark must be before the first bad mark.")
    setattr(locked, field, when)
    locked.save(update_fields=[field, "updated_at"])
    audit(
        incident=locked,
        actor=user,
        action="mark.set" if when else "mark.clear",
        target=f"incident:{locked.slug}",
        data={mark: [jsonable(old), jsonable(when)]},
    )
    if analyze:
        analysis_request(incident_id=locked.pk)
    setattr(incident, field, when)
    return locked


INCIDENT_FIELDS = ("title", "status", "summary", "resolved_at", "action_items")


@transaction.atomic
def incident_update(
    *,
    incident: Incident,
    user: Any,
    title: str,
    status: str,
    summary: str,
    resolved_at: dt.datetime | None,
    action_items: str,
) -> Incident:
    """Edit the incident's own fields; every changed field goes to the audit log."""
    values = {
        "title": clean_text(title, what="The title", limit=200, required=True),
        "status": status,
        "summary": clean_text(summary, what="The summary"),
        "resolved_at": aware_utc(resolved_at, what="The resolution time"),
        "action_items": clean_text(action_items, what="The action items"),
    }
    if status not in IncidentStatus.values:
        raise ServiceError(f"{status!r} is not an incident status.")
    if status == IncidentStatus.RESOLVED and values["resolved_at"] is None:
        raise ServiceError("A resolved incident needs the time it was resolved.")
    locked = Incident.objects.select_for_update().get(pk=incident.pk)
    changed = {
        name: [jsonable(getattr(locked, name)), jsonable(values[name])]
        for name in INCIDENT_FIELDS
        if getattr(locked, name) != values[name]
    }
    if not changed:
        return locked
    for name in changed:
        setattr(locked, name, values[name])
        setattr(incident, name, values[name])
    locked.save(update_fields=[*changed, "updated_at"])
    audit(
        incident=locked,
        actor=user,
        action="incident.update",
        target=f"incident:{locked.slug}",
        data=changed,
    )
    return locked


@transaction.atomic
def incident_delete(*, incident: Incident) -> None:
    """Delete an incident with everything in it, its audit log included (the audit trigger lets
    deletes through only in a transaction that says so)."""
    with connection.cursor() as cur:
        cur.execute("SELECT set_config('timeline.audit_purge', 'on', true)")
    incident.delete()
