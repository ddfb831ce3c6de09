"""The audit log: who changed what, and when. Entries are only ever added: a trigger refuses
changing or deleting them (migration 0002 says what it lets through)."""

from __future__ import annotations

from typing import Any

from timeline.models import AuditEntry, Incident, Team
from timeline.services.common import actor_or_none


def audit(
    *,
    incident: Incident,
    actor: Any,
    action: str,
    target: str = "",
    data: dict[str, Any] | None = None,
) -> None:
    """Record one change; ``data`` holds what changed (``[old, new]`` per field)."""
    _record(incident=incident, actor=actor, action=action, target=target, data=data)


def team_audit(
    *,
    team: Team,
    actor: Any,
    action: str,
    target: str = "",
    data: dict[str, Any] | None = None,
) -> None:
    """Record one change to a team (its members, admins, API tokens)."""
    _record(team=team, actor=actor, action=action, target=target, data=data)


def _record(
    *, actor: Any, action: str, target: str, data: dict[str, Any] | None, **owner: Any
) -> None:
    """One entry, owned by an incident or a team (the table's check constraint wants one)."""
    AuditEntry.objects.create(
        **owner,
        actor=actor_or_none(actor),
        action=action,
        target=target[:200],
        data=data or {},
    )
