"""Team management: create a team, add and remove members, make and unmake admins, issue and
revoke push-API tokens. Every change is one transaction with its audit entry (the team's).

Who may do it is timeline.access's rule (``may_manage_team``): a team's admins, and
superusers anywhere.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from timeline.models import ApiToken, Team, TeamInvite
from timeline.services.audit import team_audit
from timeline.services.common import ServiceError, clean_text

MAX_TEAM_NAME = 100
MAX_TOKEN_NAME = 100
INVITE_DAYS = 7


@transaction.atomic
def team_create(*, name: str, user: Any) -> Team:
    """A new team with ``user`` as its first member and admin."""
    name = clean_text(name, what="The team's name", limit=MAX_TEAM_NAME, required=True)
    slug = slugify(name)[:100]
    if not slug:
        raise ServiceError("The team's name needs at least one letter or digit.")
    if Team.objects.filter(Q(slug=slug) | Q(name__iexact=name)).exists():
        raise ServiceError(f"A team named {name!r} exists already.")
    team = Team.objects.create(name=name, slug=slug)
    team.members.add(user)
    team.admins.add(user)
    team_audit(team=team, actor=user, action="team.create", target=name)
    return team


def find_user(who: str) -> Any:
    """The existing user with this username, or this e-mail address (exactly one)."""
    who = (who or "").strip()
    if not who:
        raise ServiceError("Give a username or an e-mail address.")
    users = get_user_model().objects.filter(is_active=True)
    found = users.filter(username=who).first()
    if found is None and "@" in who:
        matches = list(users.filter(email__iexact=who)[:2])
        if len(matches) > 1:
            raise ServiceError(f"Several users have the address {who}: add one by username.")
        found = matches[0] if matches else None
    if found is None:
        raise ServiceError(f"No user {who!r}: they need an account first (ask an administrator).")
    return found


@transaction.atomic
def member_add(*, team: Team, who: str, user: Any) -> Any:
    member = find_user(who)
    if team.members.filter(pk=member.pk).exists():
        raise ServiceError(f"{member.get_username()} is a member already.")
    team.members.add(member)
    team_audit(
        team=team,
        actor=user,
        action="team.member_add",
        target=member.get_username(),
        data={"user_id": member.pk},
    )
    return member


def _member(team: Team, member_id: int) -> Any:
    member = team.members.filter(pk=member_id).first()
    if member is None:
        raise ServiceError("That user is not a member of the team.")
    return member


def _keeps_an_admin(team: Team, member: Any) -> None:
    if team.admins.filter(pk=member.pk).exists() and team.admins.count() == 1:
        raise ServiceError(
            f"{member.get_username()} is the team's only admin: make someone else admin first."
        )


@transaction.atomic
def member_remove(*, team: Team, member_id: int, user: Any) -> Any:
    team = Team.objects.select_for_update().get(pk=team.pk)  # one removal at a time per team
    member = _member(team, member_id)
    _keeps_an_admin(team, member)
    team.admins.remove(member)
    team.members.remove(member)
    team_audit(
        team=team,
        actor=user,
        action="team.member_remove",
        target=member.get_username(),
        data={"user_id": member.pk},
    )
    return member


@transaction.atomic
def admin_set(*, team: Team, member_id: int, admin: bool, user: Any) -> Any:
    team = Team.objects.select_for_update().get(pk=team.pk)
    member = _member(team, member_id)
    is_admin = team.admins.filter(pk=member.pk).exists()
    if is_admin == admin:
        state = "an admin" if admin else "not an admin"
        raise ServiceError(f"{member.get_username()} is {state} already.")
    if admin:
        team.admins.add(member)
    else:
        _keeps_an_admin(team, member)
        team.admins.remove(member)
    team_audit(
        team=team,
        actor=user,
        action="team.admin_grant" if admin else "team.admin_revoke",
        target=member.get_username(),
        data={"user_id": member.pk},
    )
    return member


@transaction.atomic
def token_issue(*, team: Team, name: str, user: Any) -> tuple[ApiToken, str]:
    """A new push-API token: the row, and the token itself (shown once, never stored)."""
    from ingest.push import token_create  # ingest builds on timeline, not the other way round

    name = clean_text(name, what="The token's name", limit=MAX_TOKEN_NAME, required=True)
    if team.tokens.filter(name=name).exists():
        raise ServiceError(f"The team has a token named {name!r} already: choose another name.")
    raw = token_create(team=team, name=name, user=user)
    token = team.tokens.get(name=name)
    team_audit(
        team=team, actor=user, action="team.token_issue", target=name, data={"token_id": token.pk}
    )
    return token, raw


@transaction.atomic
def token_revoke(*, team: Team, token_id: int, user: Any) -> str:
    """Delete the token: the push API refuses it from the next request on."""
    token = team.tokens.filter(pk=token_id).first()
    if token is None:
        raise ServiceError("No such token (revoked already?).")
    name = token.name
    token.delete()
    team_audit(
        team=team, actor=user, action="team.token_revoke", target=name, data={"token_id": token_id}
    )
    return name


def _invite_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


@transaction.atomic
def invite_create(*, team: Team, user: Any) -> tuple[TeamInvite, str]:
    """A single-use invite link's token (shown once; only its digest is stored), valid for
    INVITE_DAYS days."""
    raw = secrets.token_urlsafe(24)
    invite = TeamInvite.objects.create(
        team=team,
        digest=_invite_digest(raw),
        created_by=user if getattr(user, "is_authenticated", False) else None,
        expires_at=timezone.now() + dt.timedelta(days=INVITE_DAYS),
    )
    team_audit(
        team=team,
        actor=user,
        action="team.invite_create",
        target=f"invite expiring {invite.expires_at:%Y-%m-%d %H:%M} UTC",
        data={"invite_id": invite.pk},
    )
    return invite, raw


def invite_open(raw: str) -> TeamInvite:
    """The invite a link's token stands for, if it can still be used."""
    invite = (
        TeamInvite.objects.select_related("team").filter(digest=_invite_digest(raw or "")).first()
    )
    if invite is None:
        raise ServiceError("This invite link is not valid.")
    if invite.used_at is not None:
        raise ServiceError("This invite link has been used already: ask the team for a new one.")
    if invite.expires_at <= timezone.now():
        raise ServiceError("This invite link has expired: ask the team for a new one.")
    return invite


@transaction.atomic
def invite_accept(*, raw: str, user: Any) -> Team:
    """Make ``user`` a member of the invite's team; the link cannot be used again."""
    invite = invite_open(raw)
    invite = TeamInvite.objects.select_for_update().get(pk=invite.pk)
    if invite.used_at is not None:  # another request took it meanwhile
        raise ServiceError("This invite link has been used already: ask the team for a new one.")
    team = invite.team
    if team.members.filter(pk=user.pk).exists():
        raise ServiceError(f"You are a member of {team.name} already.")
    invite.used_by, invite.used_at = user, timezone.now()
    invite.save(update_fields=["used_by", "used_at"])
    team.members.add(user)
    team_audit(
        team=team,
        actor=user,
        action="team.invite_accept",
        target=user.get_username(),
        data={"invite_id": invite.pk, "user_id": user.pk},
    )
    return team
