"""Writes of the core app: incidents, teams, analysis requests, audit, and the team's
collaboration (hypotheses, evidence, notes, marks)."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import F
from django.utils.text import slugify

from timeline.choices import FindingKind, HypothesisStatus, IncidentStatus, Stance
from timeline.models import (
    AuditEntry,
    Event,
    Evidence,
    Finding,
    Hypothesis,
    HypothesisStatusChange,
    Incident,
    Note,
    Team,
)

log = logging.getLogger(__name__)


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
    Incident.objects.filter(pk=incident_id).update(analysis_version=F("analysis_version") + 1)
    version = Incident.objects.values_list("analysis_version", flat=True).get(pk=incident_id)

    def _enqueue() -> None:
        from kombu.exceptions import OperationalError as BrokerError

        from timeline.tasks import analyze_incident

        try:
            analyze_incident.delay(incident_id, version)
        except BrokerError:
            # The request is recorded (the version was bumped); the page shows the analysis as
            # pending, and the next request or `manage.py analyze` runs it.
            log.warning(
                "broker unreachable: analysis v%s of incident %s stays pending",
                version,
                incident_id,
            )

    transaction.on_commit(_enqueue)
    return int(version)


# --- collaboration: hypotheses, evidence, notes, marks, incident fields -------------------------

MAX_TITLE = 300
MAX_TEXT = 20_000


def _text(value: str, *, what: str, limit: int = MAX_TEXT, required: bool = False) -> str:
    value = (value or "").strip()
    if required and not value:
        raise ServiceError(f"{what} cannot be empty.")
    if len(value) > limit:
        raise ServiceError(f"{what} is {len(value)} characters long; the limit is {limit}.")
    return value


def _aware(value: dt.datetime | None, *, what: str) -> dt.datetime | None:
    if value is None:
        return None
    if not isinstance(value, dt.datetime):
        raise ServiceError(f"{what} must be a date and time.")
    if value.tzinfo is None:
        raise ServiceError(f"{what} needs a time zone.")
    return value.astimezone(dt.UTC)


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, dt.datetime) else value


def _status(value: str) -> str:
    if value not in HypothesisStatus.values:
        allowed = ", ".join(HypothesisStatus.values)
        raise ServiceError(f"{value!r} is not a hypothesis status; use one of {allowed}.")
    return value


@transaction.atomic
def hypothesis_create(
    *,
    incident: Incident,
    user: Any,
    title: str,
    body: str = "",
    status: str = HypothesisStatus.OPEN,
) -> Hypothesis:
    """A new hypothesis; its history starts with the status it was created in."""
    title = _text(title, what="The title", limit=MAX_TITLE, required=True)
    body = _text(body, what="The description")
    status = _status(status)
    actor = _actor(user)
    hypothesis = Hypothesis.objects.create(
        incident=incident, title=title, body=body, status=status, author=actor
    )
    HypothesisStatusChange.objects.create(
        hypothesis=hypothesis, old_status="", new_status=status, actor=actor
    )
    audit(
        incident=incident,
        actor=user,
        action="hypothesis.create",
        target=f"hypothesis:{hypothesis.pk}",
        data={"title": title, "status": status},
    )
    return hypothesis


@transaction.atomic
def hypothesis_update(*, hypothesis: Hypothesis, user: Any, title: str, body: str) -> Hypothesis:
    """Change a hypothesis' title and description; the audit entry keeps both versions."""
    title = _text(title, what="The title", limit=MAX_TITLE, required=True)
    body = _text(body, what="The description")
    changed = {
        name: [old, new]
        for name, old, new in (("title", hypothesis.title, title), ("body", hypothesis.body, body))
        if old != new
    }
    if not changed:
        return hypothesis
    hypothesis.title, hypothesis.body = title, body
    hypothesis.save(update_fields=["title", "body", "updated_at"])
    audit(
        incident=hypothesis.incident,
        actor=user,
        action="hypothesis.update",
        target=f"hypothesis:{hypothesis.pk}",
        data=changed,
    )
    return hypothesis


@transaction.atomic
def hypothesis_set_status(
    *, hypothesis: Hypothesis, user: Any, status: str, note: str = ""
) -> Hypothesis:
    """Move a hypothesis to a new status and record the dated step in its history."""
    status = _status(status)
    note = _text(note, what="The note")
    # Lock the row: two people changing the status at once each record a step from the real one.
    locked = Hypothesis.objects.select_for_update().get(pk=hypothesis.pk)
    if locked.status == status:
        raise ServiceError(f"The hypothesis is {status} already.")
    old = locked.status
    locked.status = status
    locked.save(update_fields=["status", "updated_at"])
    HypothesisStatusChange.objects.create(
        hypothesis=locked, old_status=old, new_status=status, actor=_actor(user), note=note
    )
    audit(
        incident=locked.incident,
        actor=user,
        action="hypothesis.status",
        target=f"hypothesis:{locked.pk}",
        data={"status": [old, status], **({"note": note} if note else {})},
    )
    hypothesis.status = status
    return locked


@transaction.atomic
def hypothesis_delete(*, hypothesis: Hypothesis, user: Any) -> None:
    """Remove a hypothesis with its evidence and history; the audit log keeps its title."""
    incident = hypothesis.incident
    audit(
        incident=incident,
        actor=user,
        action="hypothesis.delete",
        target=f"hypothesis:{hypothesis.pk}",
        data={"title": hypothesis.title, "status": hypothesis.status},
    )
    hypothesis.delete()


# How an automatic finding becomes a hypothesis: its status and the stance of the link to it.
_ACCEPTED = {
    FindingKind.RULED_OUT: (HypothesisStatus.REFUTED, Stance.REFUTES),
    FindingKind.SUSPECT: (HypothesisStatus.OPEN, Stance.SUPPORTS),
    FindingKind.SYMPTOM: (HypothesisStatus.OPEN, Stance.CONTEXT),
    FindingKind.FIRST_BAD: (HypothesisStatus.OPEN, Stance.CONTEXT),
    FindingKind.LAST_GOOD: (HypothesisStatus.OPEN, Stance.CONTEXT),
}


def finding_hypothesis_title(finding: Finding) -> str:
    """The title a finding gets when accepted as a hypothesis."""
    if finding.kind == FindingKind.RULED_OUT:
        name = (finding.data or {}).get("hypothesis") or finding.title
        return f"{str(name)[:1].upper()}{str(name)[1:]} caused the incident"[:MAX_TITLE]
    if finding.kind == FindingKind.SUSPECT:
        return f"The change {finding.title} caused the incident"[:MAX_TITLE]
    return finding.title[:MAX_TITLE]


@transaction.atomic
def hypothesis_from_finding(*, finding: Finding, user: Any) -> Hypothesis:
    """Accept an automatic finding as a hypothesis in one step: a ruled-out finding becomes a
    refuted hypothesis, a suspect an open one; the finding is linked as its evidence."""
    if finding.kind not in _ACCEPTED:
        raise ServiceError(f"A {finding.get_kind_display().lower()} finding cannot be accepted.")
    incident = finding.analysis.incident
    title = finding_hypothesis_title(finding)
    if Hypothesis.objects.filter(incident=incident, title=title).exists():
        raise ServiceError(f"There is a hypothesis {title!r} already.")
    status, stance = _ACCEPTED[FindingKind(finding.kind)]
    hypothesis = hypothesis_create(
        incident=incident,
        user=user,
        title=title,
        body=finding.explanation[:MAX_TEXT],
        status=status,
    )
    evidence_add(
        hypothesis=hypothesis,
        user=user,
        stance=stance,
        finding=finding,
        event=finding.event if finding.kind == FindingKind.SUSPECT else None,
        note=f"Accepted from the analysis (v{finding.analysis.version}).",
    )
    return hypothesis


@transaction.atomic
def evidence_add(
    *,
    hypothesis: Hypothesis,
    user: Any,
    stance: str,
    note: str = "",
    event: Event | None = None,
    finding: Finding | None = None,
) -> Evidence:
    """Link an event or finding of the same incident (or just a note) to a hypothesis."""
    if stance not in Stance.values:
        raise ServiceError(f"{stance!r} is not a stance; use one of {', '.join(Stance.values)}.")
    note = _text(note, what="The note")
    incident_id = hypothesis.incident_id
    if event is not None and event.incident_id != incident_id:
        raise ServiceError("That event belongs to another incident.")
    if finding is not None and finding.analysis.incident_id != incident_id:
        raise ServiceError("That finding belongs to another incident.")
    if event is None and finding is None and not note:
        raise ServiceError("Evidence needs an event, a finding or a note.")
    if (
        event is not None
        and finding is None
        and Evidence.objects.filter(hypothesis=hypothesis, event=event, stance=stance).exists()
    ):
        raise ServiceError("That event is linked with the same stance already.")
    evidence = Evidence.objects.create(
        hypothesis=hypothesis,
        event=event,
        finding=finding,
        stance=stance,
        note=note,
        author=_actor(user),
    )
    audit(
        incident=hypothesis.incident,
        actor=user,
        action="evidence.add",
        target=f"hypothesis:{hypothesis.pk}",
        data={
            "evidence": evidence.pk,
            "stance": stance,
            "event": event.pk if event else None,
            "finding": finding.pk if finding else None,
            "note": note,
        },
    )
    return evidence


@transaction.atomic
def evidence_remove(*, evidence: Evidence, user: Any) -> None:
    hypothesis = evidence.hypothesis
    audit(
        incident=hypothesis.incident,
        actor=user,
        action="evidence.remove",
        target=f"hypothesis:{hypothesis.pk}",
        data={
            "evidence": evidence.pk,
            "stance": evidence.stance,
            "event": evidence.event_id,
            "finding": evidence.finding_id,
            "note": evidence.note,
        },
    )
    evidence.delete()


@transaction.atomic
def note_add(*, incident: Incident, user: Any, at: dt.datetime, body: str) -> Note:
    """Pin a note to a moment of the incident's timeline."""
    when = _aware(at, what="The note's time")
    if when is None:
        raise ServiceError("A note needs the moment it is about.")
    body = _text(body, what="The note", required=True)
    note = Note.objects.create(incident=incident, at=when, body=body, author=_actor(user))
    audit(
        incident=incident,
        actor=user,
        action="note.add",
        target=f"note:{note.pk}",
        data={"at": _jsonable(when), "body": body},
    )
    return note


@transaction.atomic
def note_update(*, note: Note, user: Any, at: dt.datetime, body: str) -> Note:
    when = _aware(at, what="The note's time")
    if when is None:
        raise ServiceError("A note needs the moment it is about.")
    body = _text(body, what="The note", required=True)
    changed = {
        name: [_jsonable(old), _jsonable(new)]
        for name, old, new in (("at", note.at, when), ("body", note.body, body))
        if old != new
    }
    if not changed:
        return note
    note.at, note.body = when, body
    note.save(update_fields=["at", "body"])
    audit(
        incident=note.incident,
        actor=user,
        action="note.update",
        target=f"note:{note.pk}",
        data=changed,
    )
    return note


@transaction.atomic
def note_delete(*, note: Note, user: Any) -> None:
    audit(
        incident=note.incident,
        actor=user,
        action="note.delete",
        target=f"note:{note.pk}",
        data={"at": _jsonable(note.at), "body": note.body},
    )
    note.delete()


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
    when = _aware(at, what="The mark's time")
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
        data={mark: [_jsonable(old), _jsonable(when)]},
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
        "title": _text(title, what="The title", limit=200, required=True),
        "status": status,
        "summary": _text(summary, what="The summary"),
        "resolved_at": _aware(resolved_at, what="The resolution time"),
        "action_items": _text(action_items, what="The action items"),
    }
    if status not in IncidentStatus.values:
        raise ServiceError(f"{status!r} is not an incident status.")
    if status == IncidentStatus.RESOLVED and values["resolved_at"] is None:
        raise ServiceError("A resolved incident needs the time it was resolved.")
    locked = Incident.objects.select_for_update().get(pk=incident.pk)
    changed = {
        name: [_jsonable(getattr(locked, name)), _jsonable(values[name])]
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


def _actor(user: Any) -> Any:
    return user if getattr(user, "is_authenticated", False) else None
