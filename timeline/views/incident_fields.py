"""The incident's own fields: the operator's marks (last known good, first bad) and the edit
form (title, status, summary, resolution time, action items)."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from timeline import access, services
from timeline.forms import IncidentEditForm, MarkForm
from timeline.services import ServiceError
from timeline.views.common import done, failed, form_error


@require_POST
def marks(request: HttpRequest, slug: str) -> HttpResponse:
    """Set or clear last known good / first bad; the analysis re-runs on the workers."""
    incident = access.incident_for(request.user, slug)
    form = MarkForm(request.POST)
    if not form.is_valid():
        return failed(request, incident, form_error(form))
    op, mark = form.cleaned_data["action"].split("_", 1)
    try:
        services.incident_set_mark(
            incident=incident,
            user=request.user,
            mark=mark,
            at=form.cleaned_data["at"] if op == "set" else None,
        )
    except ServiceError as exc:
        return failed(request, incident, str(exc))
    what = "Last known good" if mark == "last_good" else "First bad"
    verb = "marked" if op == "set" else "mark cleared"
    return done(request, incident, f"{what} {verb}; the analysis is re-running.")


def incident_edit(request: HttpRequest, slug: str) -> HttpResponse:
    """The incident's own fields: title, status, summary, resolution time, action items."""
    if request.method == "POST":
        incident = access.incident_for(request.user, slug)
        form = IncidentEditForm(request.POST)
        if form.is_valid():
            try:
                services.incident_update(incident=incident, user=request.user, **form.cleaned_data)
            except ServiceError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, "Incident saved.")
                return redirect("incident_edit", slug=incident.slug)
        return render(
            request,
            "timeline/collab/incident_edit.html",
            {"incident": incident, "form": form},
            status=422,
        )
    if request.method != "GET":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    incident = access.incident_for(request.user, slug)
    form = IncidentEditForm(
        initial={
            "title": incident.title,
            "status": incident.status,
            "summary": incident.summary,
            "resolved_at": incident.resolved_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
            if incident.resolved_at
            else "",
            "action_items": incident.action_items,
        }
    )
    return render(
        request, "timeline/collab/incident_edit.html", {"incident": incident, "form": form}
    )
