"""Notes pinned to a moment: added from the timeline, opened from their marker, edited there."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from timeline import access, services
from timeline.forms import NoteForm
from timeline.markdown import render as md
from timeline.models import Note
from timeline.views.common import done, submit


@require_POST
def note_add(request: HttpRequest, slug: str) -> HttpResponse:
    incident = access.incident_for(request.user, slug)
    return submit(
        request,
        incident,
        NoteForm(request.POST),
        lambda data: services.note_add(
            incident=incident, user=request.user, at=data["at"], body=data["body"]
        ),
        "Note added.",
    )


def note_detail(request: HttpRequest, slug: str, note_id: int) -> HttpResponse:
    """GET: the side-panel fragment a click on a note marker opens. POST: edit the note."""
    if request.method == "POST":
        incident = access.incident_for(request.user, slug)
        note = get_object_or_404(Note, incident=incident, pk=note_id)
        return submit(
            request,
            incident,
            NoteForm(request.POST),
            lambda data: services.note_update(
                note=note, user=request.user, at=data["at"], body=data["body"]
            ),
            "Note saved.",
        )
    if request.method != "GET":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    incident = access.incident_for(request.user, slug)
    note = get_object_or_404(Note.objects.select_related("author"), incident=incident, pk=note_id)
    return render(
        request,
        "timeline/collab/_note_detail.html",
        {"incident": incident, "note": note, "body_html": md(note.body)},
    )


@require_POST
def note_delete(request: HttpRequest, slug: str, note_id: int) -> HttpResponse:
    incident = access.incident_for(request.user, slug)
    note = get_object_or_404(Note, incident=incident, pk=note_id)
    services.note_delete(note=note, user=request.user)
    return done(request, incident, "Note deleted.", replaces_detail=True)
