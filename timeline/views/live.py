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

import hashlib

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from timeline import access
from timeline.models import Incident

# Each part changes when something the page shows changes: new or removed events (an ingest,
# a push), analyses (requested, finished, failed), notes, hypotheses and their evidence and
# status history, files and their ingest state, and the incident itself (marks, edits).
_VERSION_SQL = """
SELECT
  (SELECT coalesce(max(id), 0) || '.' || count(*) FROM timeline_event WHERE incident_id = %(i)s),
  (SELECT coalesce(max(id), 0) || '.' || count(*) || '.' || coalesce(max(finished_at)::text, '')
     || '.' || coalesce(string_agg(status, '' ORDER BY id), '')
     FROM timeline_analysis WHERE incident_id = %(i)s),
  (SELECT coalesce(max(id), 0) || '.' || count(*) FROM timeline_note WHERE incident_id = %(i)s),
  (SELECT coalesce(max(updated_at)::text, '') || '.' || count(*) FROM timeline_hypothesis
     WHERE incident_id = %(i)s),
  (SELECT coalesce(max(e.id), 0) || '.' || count(*) FROM timeline_evidence e
     JOIN timeline_hypothesis h ON h.id = e.hypothesis_id WHERE h.incident_id = %(i)s),
  (SELECT coalesce(max(c.id), 0) FROM timeline_hypothesisstatuschange c
     JOIN timeline_hypothesis h ON h.id = c.hypothesis_id WHERE h.incident_id = %(i)s),
  (SELECT coalesce(max(id), 0) || '.' || count(*) || '.'
     || coalesce(string_agg(status, '' ORDER BY id), '')
     FROM timeline_artifact WHERE incident_id = %(i)s),
  (SELECT updated_at::text || '.' || analysis_version FROM timeline_incident WHERE id = %(i)s)
"""


def incident_version(incident: Incident) -> str:
    """A short string that changes whenever anything the timeline page shows changes."""
    with connection.cursor() as cur:
        cur.execute(_VERSION_SQL, {"i": incident.pk})
        row = cur.fetchone()
    return hashlib.sha256("|".join(map(str, row or ())).encode()).hexdigest()[:20]


@require_GET
def version(request: HttpRequest, slug: str) -> HttpResponse:
    """``{"version": "..."}`` with an ETag; 304 without a body when If-None-Match matches."""
    incident = access.incident_for(request.user, slug)
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
