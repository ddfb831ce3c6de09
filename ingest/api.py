"""Push endpoints for harnesses and CI jobs: bearer-token auth, JSON in, JSON out.

A token belongs to one team and reaches only that team's incidents (others are 404). No session
and no cookies are involved, so CSRF does not apply; the views are exempt for that reason only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from ingest import push
from timeline import access
from timeline.models import Team

MAX_BODY = 5 * 1024 * 1024


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def token_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @login_not_required
    @csrf_exempt
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        header = request.headers.get("Authorization", "")
        scheme, _, raw = header.partition(" ")
        team = push.token_team(raw.strip()) if scheme.lower() == "bearer" else None
        if team is None:
            response = _error(401, "a valid 'Authorization: Bearer <token>' header is required")
            response["WWW-Authenticate"] = 'Bearer realm="incident-timeline"'
            return response
        return view(request, team, *args, **kwargs)

    return wrapper


@token_required
@require_http_methods(["POST"])
def push_view(request: HttpRequest, team: Team, slug: str, kind: str) -> HttpResponse:
    incident = access.incident_for_token(team, slug)
    if incident is None:
        return _error(404, f"no incident {slug!r} for this token's team")
    if len(request.body) > MAX_BODY:
        return _error(413, f"the body is over the limit of {MAX_BODY} bytes")
    try:
        artifact = push.push_ingest(incident=incident, kind=kind, body=request.body)
    except push.PushError as exc:
        return _error(400, str(exc))
    return JsonResponse(
        {"artifact": artifact.pk, "status": artifact.status, "counts": artifact.counts},
        status=201,
    )


@token_required
@require_http_methods(["GET"])
def incident_view(request: HttpRequest, team: Team, slug: str) -> HttpResponse:
    """The incident's newest analysis, in the public JSON shape of `analyze --json`."""
    incident = access.incident_for_token(team, slug)
    if incident is None:
        return _error(404, f"no incident {slug!r} for this token's team")
    from timeline.analysis import current_analysis, public_json

    body = public_json(incident, current_analysis(incident))
    return HttpResponse(json.dumps(body), content_type="application/json")
