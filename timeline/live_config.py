"""What each server start changed: the Live config lane's hover text and a start's detail.

A start's configuration is its ``server_args`` (ServerArgs fields -> values as logged, see
``ingest.parsers.serverargs``); a start is compared with the start before it in the incident,
whichever file logged either. Values are compared as logged text: mapping them to effective
values is the correlation's business.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from evidence.vocabulary import EventKind
from timeline.models import Event, Incident

HOVER_CHANGES = 8  # changes listed in a marker's hover; the detail lists them all
HOVER_VALUE_CHARS = 40


@dataclass(frozen=True)
class ArgChange:
    """One ServerArgs field that differs; ``None``: the field is not in that start's line."""

    field: str
    old: str | None
    new: str | None


def args_diff(before: dict[str, str], after: dict[str, str]) -> list[ArgChange]:
    """Fields whose logged value differs, in ``after``'s order, then the fields ``after`` lacks."""
    changes = [
        ArgChange(name, before.get(name), value)
        for name, value in after.items()
        if before.get(name) != value
    ]
    changes += [ArgChange(name, value, None) for name, value in before.items() if name not in after]
    return changes


@dataclass(frozen=True)
class StartDiff:
    """A start against the one before it: ``previous`` None for the first start seen."""

    previous: Event | None
    changes: list[ArgChange]
    known: bool  # both starts logged their ServerArgs, so the changes are all there is

    def summary(self) -> str:
        """One line: what a reader sees first."""
        return _summary(self.previous is None, self.changes, self.known)


def _compared(before: dict[str, str] | None, after: dict[str, str]) -> tuple[list[ArgChange], bool]:
    """The changes from ``before`` (None: no start before) to ``after``, and whether they are
    known (both starts logged their ServerArgs)."""
    if before is None:
        return [], True
    known = bool(before) and bool(after)
    return (args_diff(before, after) if known else []), known


def _summary(first: bool, changes: list[ArgChange], known: bool) -> str:
    if first:
        return "first start seen"
    if not known:
        return "configuration not logged (no ServerArgs line), so what changed is unknown"
    if not changes:
        return "no ServerArgs field changed"
    return f"{len(changes)} ServerArgs field(s) changed"


def _args(attrs: Any) -> dict[str, str]:
    args = (attrs or {}).get("server_args") or {}
    return {str(k): str(v) for k, v in args.items()}


def start_diff(event: Event) -> StartDiff:
    """``event`` (a server start) against the start before it in its incident."""
    previous = (
        Event.objects.filter(incident_id=event.incident_id, kind=EventKind.SERVER_START)
        .filter(at__lt=event.at)
        .order_by("-at", "-id")
        .first()
    )
    before = None if previous is None else _args(previous.attrs)
    changes, known = _compared(before, _args(event.attrs))
    return StartDiff(previous, changes, known)


def _short(value: str | None) -> str:
    if value is None:
        return "(not logged)"
    return value if len(value) <= HOVER_VALUE_CHARS else value[: HOVER_VALUE_CHARS - 1] + "…"


def hover_texts(incident: Incident) -> dict[int, str]:
    """Event id -> the hover of each start's marker: its title and what changed against the
    start before it (``field: old -> new``; the first start: "first start seen"). HTML-escaped
    here, lines joined by ``<br>``: plotly renders a few tags in hover
    text, and every value is log text."""
    rows = list(
        Event.objects.filter(incident=incident, kind=EventKind.SERVER_START)
        .order_by("at", "id")
        .values("id", "title", "attrs")
    )
    out: dict[int, str] = {}
    before: dict[str, str] | None = None
    for row in rows:
        after = _args(row["attrs"])
        changes, known = _compared(before, after)
        lines = [row["title"]]
        if changes:
            lines += [
                f"{c.field}: {_short(c.old)} -> {_short(c.new)}" for c in changes[:HOVER_CHANGES]
            ]
            if len(changes) > HOVER_CHANGES:
                lines.append(f"… and {len(changes) - HOVER_CHANGES} more")
        else:
            lines.append(_summary(before is None, changes, known))
        out[row["id"]] = "<br>".join(html.escape(line) for line in lines)
        before = after
    return out
