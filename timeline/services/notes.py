"""Writes of notes: annotations the team pins to a moment of the timeline."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction

from timeline.models import Incident, Note
from timeline.services.audit import audit
from timeline.services.common import ServiceError, actor_or_none, aware_utc, clean_text, jsonable


@transaction.atomic
def note_add(*, incident: Incident, user: Any, at: dt.datetime, body: str) -> Note:
    """Pin a note to a moment of the incident's timeline."""
    when = aware_utc(at, what="The note's time")
    if when is None:
        raise ServiceError("A note needs the moment it is about.")
    body = clean_text(body, what="The note", required=True)
    note = Note.objects.create(incident=incident, at=when, body=body, author=actor_or_none(user))
    audit(
        incident=incident,
        actor=user,
        action="note.add",
        target=f"note:{note.pk}",
        data={"at": jsonable(when), "body": body},
    )
    return note


@transaction.atomic
def note_update(*, note: Note, user: Any, at: dt.datetime, body: str) -> Note:
    when = aware_utc(at, what="The note's time")
    if when is None:
        raise ServiceError("A note needs the moment it is about.")
    body = clean_text(body, what="The note", required=True)
    changed = {
        name: [jsonable(old), jsonable(new)]
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
        data={"at": jsonable(note.at), "body": note.body},
    )
    note.delete()
