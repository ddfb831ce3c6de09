"""Who may see and change an incident: one rule for every page, write and API call.

A signed-in user may view an incident and act on it (upload, retry, pull metrics, notes, marks,
hypotheses, evidence, findings, edits, the event table, the analysis, exports) when they are a
member of its team; a superuser may everywhere. Anyone else gets the same 404 as for an incident
that does not exist, for every URL and method. A bearer token of the push API acts for its
team: that team's incidents and no other (a superuser's session is no token).

Managing a team (its members, admins and push API tokens) is for the team's admins, and
superusers everywhere; creating a team for superusers and those who administer one already.

Every view and the API get their incident here; no view checks teams itself.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from timeline.models import Incident, Team


def _is_superuser(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False) and getattr(user, "is_superuser", False))


def incidents_visible(user: Any) -> QuerySet[Incident]:
    """Every incident the user may view and act on."""
    qs = Incident.objects.select_related("team")
    if not getattr(user, "is_authenticated", False):
        return qs.none()
    if _is_superuser(user):
        return qs
    return qs.filter(team__members=user.pk)


def teams_for(user: Any) -> QuerySet[Team]:
    """The teams the user may create incidents in (and whose incidents they act on)."""
    if _is_superuser(user):
        return Team.objects.all()
    if not getattr(user, "is_authenticated", False):
        return Team.objects.none()
    return Team.objects.filter(members=user.pk)


def incident_for(user: Any, slug: str, *, annotate: dict[str, Any] | None = None) -> Incident:
    """The incident, for a page or a write; 404 when the user may not (no hint it exists).
    ``annotate``: expressions to read in the same query (the live version, say)."""
    incident = incidents_visible(user).filter(slug=slug).annotate(**(annotate or {})).first()
    if incident is None:
        raise Http404("No such incident")
    return incident


def incident_for_token(team: Team, slug: str) -> Incident | None:
    """The incident a push API token of ``team`` may reach, or None."""
    return Incident.objects.filter(team=team, slug=slug).first()


def may_manage_team(user: Any, team: Team) -> bool:
    """A superuser, or an admin of this team: members, admins and push API tokens."""
    if not getattr(user, "is_authenticated", False):
        return False
    return _is_superuser(user) or team.admins.filter(pk=user.pk).exists()


def teams_managed(user: Any) -> QuerySet[Team]:
    """The teams the user manages."""
    if _is_superuser(user):
        return Team.objects.all()
    if not getattr(user, "is_authenticated", False):
        return Team.objects.none()
    return Team.objects.filter(admins=user.pk)


def may_create_team(user: Any) -> bool:
    """Superusers, and users who administer a team already."""
    return _is_superuser(user) or teams_managed(user).exists()
