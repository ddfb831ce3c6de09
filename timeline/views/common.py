"""What the collaboration views share: the incident a write may change, and the answers.

Writes answer htmx with 204 and an ``HX-Trigger: collab-changed`` event (the board, the panel and
the chart reload themselves on it) or 422 with the error text for the form's error slot; without
htmx they redirect back with a message. Who may write is the one rule of timeline.access (the
same as for reading: members of the incident's team, and superusers); everyone else gets a 404.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from timeline.models import Incident
from timeline.services import ServiceError


def is_htmx(request: HttpRequest) -> bool:
    """Whether htmx sent the request (it wants a fragment or a status, not a redirect)."""
    return bool(request.headers.get("HX-Request"))


def back(request: HttpRequest, incident: Incident) -> str:
    """Where a write without htmx returns: ``next`` when it is on this site, else the board."""
    nxt = request.POST.get("next") or request.GET.get("next") or ""
    if nxt and url_has_allowed_host_and_scheme(nxt, {request.get_host()}, request.is_secure()):
        return nxt
    return reverse("hypothesis_board", args=[incident.slug])


def done(
    request: HttpRequest, incident: Incident, message: str, *, replaces_detail: bool = False
) -> HttpResponse:
    """The answer to a write that succeeded."""
    if is_htmx(request):
        if replaces_detail:  # the side panel showed what was just removed
            response = render(request, "timeline/collab/_error.html", {"error": message})
            response["HX-Retarget"] = "#detail"
            response["HX-Reswap"] = "innerHTML"
        else:
            response = HttpResponse(status=204)
        response["HX-Trigger"] = "collab-changed"
        return response
    messages.success(request, message)
    return redirect(back(request, incident))


def failed(request: HttpRequest, incident: Incident, error: str) -> HttpResponse:
    """The answer to a write that was refused, with the reason for the user."""
    if is_htmx(request):
        # Plain text, autoescaped by the template engine; the form's error slot shows it.
        return render(request, "timeline/collab/_error.html", {"error": error}, status=422)
    messages.error(request, error)
    return redirect(back(request, incident))


def form_error(form: forms.Form) -> str:
    """A form's errors as one line of text."""
    parts = []
    for field, errors in form.errors.items():
        label = "" if field == "__all__" else f"{field}: "
        parts.append(label + " ".join(str(e) for e in errors))
    return "; ".join(parts)


def submit(
    request: HttpRequest,
    incident: Incident,
    form: forms.Form,
    write: Callable[[dict[str, Any]], object],
    message: str | Callable[[dict[str, Any]], str],
) -> HttpResponse:
    """Most writes in one: check the form, hand its cleaned data to one service call, and
    answer with ``message`` or with the reason the form or the service refused."""
    if not form.is_valid():
        return failed(request, incident, form_error(form))
    try:
        write(form.cleaned_data)
    except ServiceError as exc:
        return failed(request, incident, str(exc))
    return done(
        request, incident, message if isinstance(message, str) else message(form.cleaned_data)
    )
