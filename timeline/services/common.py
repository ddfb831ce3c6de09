"""What every write of the core app shares: the domain error and the checks of user input."""

from __future__ import annotations

import datetime as dt
from typing import Any

MAX_TITLE = 300
MAX_TEXT = 20_000


class ServiceError(Exception):
    """A domain rule refused the change; the message is for the user."""


def clean_text(value: str, *, what: str, limit: int = MAX_TEXT, required: bool = False) -> str:
    """User text stripped, refused when empty (if required) or over ``limit`` characters."""
    value = (value or "").strip()
    if required and not value:
        raise ServiceError(f"{what} cannot be empty.")
    if len(value) > limit:
        raise ServiceError(f"{what} is {len(value)} characters long; the limit is {limit}.")
    return value


def aware_utc(value: dt.datetime | None, *, what: str) -> dt.datetime | None:
    """A user's time in UTC; a time without a zone is refused rather than guessed."""
    if value is None:
        return None
    if not isinstance(value, dt.datetime):
        raise ServiceError(f"{what} must be a date and time.")
    if value.tzinfo is None:
        raise ServiceError(f"{what} needs a time zone.")
    return value.astimezone(dt.UTC)


def jsonable(value: Any) -> Any:
    """A field's value as the audit log's JSON holds it."""
    return value.isoformat() if isinstance(value, dt.datetime) else value


def actor_or_none(user: Any) -> Any:
    """The user to record as author, or None for an anonymous or system change."""
    return user if getattr(user, "is_authenticated", False) else None
