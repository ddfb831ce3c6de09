"""The postmortem export: Markdown, one self-contained HTML file, or JSON."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from timeline import access, postmortem

EXPORTS = {
    "md": ("text/markdown; charset=utf-8", "md"),
    "html": ("text/html; charset=utf-8", "html"),
    "json": ("application/json", "json"),
}


@require_GET
def postmortem_export(request: HttpRequest, slug: str, fmt: str) -> HttpResponse:
    """The postmortem as a download: Markdown, one self-contained HTML file, or JSON."""
    incident = access.incident_for(request.user, slug)
    if fmt not in EXPORTS:
        return HttpResponse("Unknown format: use md, html or json.", status=404)
    doc = postmortem.document(incident)
    if fmt == "md":
        body = postmortem.to_markdown(doc)
    elif fmt == "json":
        body = postmortem.to_json(doc)
    else:
        body = postmortem.to_html(doc, postmortem.figure(incident))
    content_type, ext = EXPORTS[fmt]
    response = HttpResponse(body.encode("utf-8"), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{incident.slug}-postmortem.{ext}"'
    return response


@require_GET
def postmortem_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The postmortem as a page of the app: the HTML export's document with its scripts and
    styles loaded from the static files (no inline script: the site's policy applies)."""
    incident = access.incident_for(request.user, slug)
    doc = postmortem.document(incident)
    body = postmortem.to_html(doc, postmortem.figure(incident), inline=False)
    return HttpResponse(body.encode("utf-8"), content_type="text/html; charset=utf-8")
