"""Team management pages: the teams a user manages, and one team's members, admins and API
tokens with its audit log. A team's admins manage it, superusers manage every team; anyone else
gets 403 (a member sees nothing to change: the page is for admins)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from timeline import access
from timeline.models import AuditEntry, Team
from timeline.services import teams as team_services
from timeline.services.common import ServiceError

AUDIT_SHOWN = 50


def _managed(request: HttpRequest, slug: str) -> Team:
    team = get_object_or_404(Team, slug=slug)
    if not access.may_manage_team(request.user, team):
        raise PermissionDenied("Only the team's admins manage it.")
    return team


@require_GET
def team_list(request: HttpRequest) -> HttpResponse:
    user: Any = request.user
    managed = access.teams_managed(user).order_by("name").prefetch_related("members", "admins")
    return render(
        request,
        "timeline/teams/list.html",
        {"teams": managed, "can_create": access.may_create_team(user)},
    )


@require_POST
def team_new(request: HttpRequest) -> HttpResponse:
    if not access.may_create_team(request.user):
        raise PermissionDenied("Only superusers and team admins create teams.")
    try:
        team = team_services.team_create(name=request.POST.get("name", ""), user=request.user)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("team_list")
    messages.success(request, f"Team {team.name} created; you are its admin.")
    return redirect("team_detail", slug=team.slug)


@require_GET
def team_detail(request: HttpRequest, slug: str) -> HttpResponse:
    return _render(request, _managed(request, slug))


def _render(request: HttpRequest, team: Team, **extra: Any) -> HttpResponse:
    admins = set(team.admins.values_list("pk", flat=True))
    members = [
        {"user": m, "admin": m.pk in admins}
        for m in team.members.order_by("username").only("pk", "username", "email", "first_name")
    ]
    tokens = team.tokens.select_related("created_by").order_by("-created_at")
    audit = (
        AuditEntry.objects.filter(team=team)
        .select_related("actor")
        .order_by("-at", "-id")[:AUDIT_SHOWN]
    )
    return render(
        request,
        "timeline/teams/detail.html",
        {
            "team": team,
            "members": members,
            "admin_count": len(admins),
            "tokens": tokens,
            "audit": audit,
            "incidents": team.incidents.order_by("-created_at").only("slug", "title")[:20],
            **extra,
        },
    )


def _act(request: HttpRequest, slug: str, action: Any, done: str) -> HttpResponse:
    team = _managed(request, slug)
    try:
        result = action(team)
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done.format(result))
    return redirect("team_detail", slug=team.slug)


@require_POST
def member_add(request: HttpRequest, slug: str) -> HttpResponse:
    return _act(
        request,
        slug,
        lambda team: team_services.member_add(
            team=team, who=request.POST.get("who", ""), user=request.user
        ).get_username(),
        "{} added to the team.",
    )


@require_POST
def member_remove(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    return _act(
        request,
        slug,
        lambda team: team_services.member_remove(
            team=team, member_id=user_id, user=request.user
        ).get_username(),
        "{} removed from the team.",
    )


@require_POST
def member_admin(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    admin = request.POST.get("admin") == "1"
    return _act(
        request,
        slug,
        lambda team: team_services.admin_set(
            team=team, member_id=user_id, admin=admin, user=request.user
        ).get_username(),
        "{} is an admin now." if admin else "{} is no longer an admin.",
    )


@require_POST
def token_issue(request: HttpRequest, slug: str) -> HttpResponse:
    """The new token is shown on this response only (not redirected, not put in the session):
    only its digest is stored."""
    team = _managed(request, slug)
    try:
        token, raw = team_services.token_issue(
            team=team, name=request.POST.get("name", ""), user=request.user
        )
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("team_detail", slug=team.slug)
    response = _render(request, team, new_token=raw, new_token_name=token.name)
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def token_revoke(request: HttpRequest, slug: str, token_id: int) -> HttpResponse:
    return _act(
        request,
        slug,
        lambda team: team_services.token_revoke(team=team, token_id=token_id, user=request.user),
        "Token {} revoked: the push API refuses it from now on.",
    )


@require_POST
def invite_create(request: HttpRequest, slug: str) -> HttpResponse:
    """The link is shown on this response only: only its digest is stored."""
    team = _managed(request, slug)
    invite, raw = team_services.invite_create(team=team, user=request.user)
    link = request.build_absolute_uri(reverse("team_join", args=[raw]))
    response = _render(request, team, new_invite=link, new_invite_expires=invite.expires_at)
    response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
def team_join(request: HttpRequest, token: str) -> HttpResponse:
    """GET: which team the link is for, and a button to join. POST: join it."""
    try:
        invite = team_services.invite_open(token)
    except ServiceError as exc:
        return render(request, "timeline/teams/join.html", {"error": str(exc)}, status=404)
    if request.method == "POST":
        try:
            team = team_services.invite_accept(raw=token, user=request.user)
        except ServiceError as exc:
            messages.error(request, str(exc))
            return redirect("incident_list")
        messages.success(request, f"You joined the team {team.name}.")
        return redirect("incident_list")
    return render(request, "timeline/teams/join.html", {"invite": invite})
