"""The incident's audit log, newest first."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from timeline import access
from timeline.audit_labels import label_entries
from timeline.models import AuditEntry


@require_GET
def audit_log(request: HttpRequest, slug: str) -> HttpResponse:
    incident = access.incident_for(request.user, slug)
    entries = AuditEntry.objects.filter(incident=incident).select_related("actor")
    page = Paginator(entries.order_by("-at", "-id"), 100).get_page(request.GET.get("page"))
    rows = label_entries(incident, list(page), _audit_value)
    return render(
        request, "timeline/collab/audit.html", {"incident": incident, "page": page, "rows": rows}
    )


def _audit_value(value: Any) -> str:
    """A field change ``[old, new]`` as "old → new"; anything else as its text."""

    def one(v: Any) -> str:
        text = "∅" if v is None or v == "" else str(v)
        return text if len(text) <= 200 else text[:199] + "…"

    if isinstance(value, list) and len(value) == 2:
        return f"{one(value[0])} → {one(value[1])}"
    return one(value)
