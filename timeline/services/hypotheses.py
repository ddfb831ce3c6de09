"""Writes of hypotheses and the evidence linked to them, and accepting an analysis' finding
as a hypothesis. Every change is audited; a status change is also a dated step of the
hypothesis' own history."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from timeline.choices import FindingKind, HypothesisStatus, Stance
from timeline.models import Event, Evidence, Finding, Hypothesis, HypothesisStatusChange, Incident
from timeline.services.audit import audit
from timeline.services.common import MAX_TEXT, MAX_TITLE, ServiceError, actor_or_none, clean_text


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
    title = clean_text(title, what="The title", limit=MAX_TITLE, required=True)
    body = clean_text(body, what="The description")
    status = _status(status)
    actor = actor_or_none(user)
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
    title = clean_text(title, what="The title", limit=MAX_TITLE, required=True)
    body = clean_text(body, what="The description")
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
    note = clean_text(note, what="The note")
    # Lock the row: two people changing the status at once each record a step from the real one.
    locked = Hypothesis.objects.select_for_update().get(pk=hypothesis.pk)
    if locked.status == status:
        raise ServiceError(f"The hypothesis is {status} already.")
    old = locked.status
    locked.status = status
    locked.save(update_fields=["status", "updated_at"])
    HypothesisStatusChange.objects.create(
        hypothesis=locked, old_status=old, new_status=status, actor=actor_or_none(user), note=note
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
    note = clean_text(note, what="The note")
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
        author=actor_or_none(user),
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
