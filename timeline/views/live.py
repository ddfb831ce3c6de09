"""Live updates: a cheap version of everything the timeline page shows, polled by its script.

Why polling with an ETag rather than server-sent events: the server runs on two cores with a
few sync workers; an SSE stream holds a worker (or a thread) per open page for as long as the
page is open, so a dozen viewers would take every worker. A poll is one short request every few
seconds that costs one indexed query and, when nothing changed, a body-less 304; a viewer
costs nothing between polls, and the cost grows linearly with viewers and never blocks a page
load. The page fetches the figure, the verdict, the table and the hypotheses again only when
the version changes.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from timeline import access
from timeline.models import Incident
from timeline.versions import incident_version


def etag_matches(request: HttpRequest, etag: str) -> bool:
    """Whether the request's If-None-Match names ``etag`` (one of a comma-separated list)."""
    # Weak comparison (RFC 9110 13.1.2), as If-None-Match asks: a gzipped body's ETag is
    # weakened (W/"...") by GZipMiddleware, and the browser sends that form back.
    wanted = etag.removeprefix("W/")
    return any(
        t.strip().removeprefix("W/") == wanted
        for t in request.headers.get("If-None-Match", "").split(",")
    )


def revalidated(response: HttpResponse, etag: str) -> HttpResponse:
    """``response`` with its ETag, to be revalidated on every use: per user (a team's
    incident) and never served from a cache without asking, so no cached copy hides a change."""
    response["ETag"] = etag
    response["Cache-Control"] = "private, no-cache"
    return response


@require_GET
@access.fused_incident_view
def version(request: HttpRequest, incident: Incident) -> HttpResponse:
    """``{"version": "..."}`` with an ETag; 304 without a body when If-None-Match matches."""
    current = incident_version(incident)
    etag = f'"{current}"'
    if etag_matches(request, etag):
        return revalidated(HttpResponse(status=304), etag)
    return revalidated(JsonResponse({"version": current}), etag)
