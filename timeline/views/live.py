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
from timeline.versions import incident_version, version_annotation


@require_GET
def version(request: HttpRequest, slug: str) -> HttpResponse:
    """``{"version": "..."}`` with an ETag; 304 without a body when If-None-Match matches."""
    incident = access.incident_for(request.user, slug, annotate={"version": version_annotation()})
    current = incident_version(incident)
    etag = f'"{current}"'
    if etag in {t.strip() for t in request.headers.get("If-None-Match", "").split(",")}:
        response = HttpResponse(status=304)
    else:
        response = JsonResponse({"version": current})
    response["ETag"] = etag
    # Per user (a team's incident) and always revalidated: a cached copy must never hide a
    # change.
    response["Cache-Control"] = "private, no-cache"
    return response
