"""Configuration state over time.

Sources (deployment docs, commits, changelog items) each record the changes they saw. Here the
same change seen by several sources becomes one change, and the effective configuration at any
moment -- and what differs between two moments -- can be asked for. Also holds the small wording
helpers every correlation module uses, so that times and durations read the same everywhere.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from timeline.correlation.types import Change

UTC = dt.UTC


def _in_time_order(changes: Iterable[Change]) -> list[Change]:
    # sorted() is stable: changes at the same moment keep the order they were given in.
    return sorted(changes, key=lambda c: c.at)


def merge_changes(changes: Sequence[Change], window: dt.timedelta) -> list[Change]:
    """Fold records of the same change into one change, in time order.

    Two records are the same change when they set the same key to the same new value (removal
    included) within ``window`` of the first record, with no other value of that key recorded
    in between. The merged change keeps the earliest record's time, ref, old value and scope;
    its sources are the union of all records' sources in time order.
    """
    groups: list[list[Change]] = []
    latest_group_of_key: dict[str, int] = {}
    for change in _in_time_order(changes):
        index = latest_group_of_key.get(change.key)
        if index is not None:
            group = groups[index]
            first = group[0]
            if first.new == change.new and change.at - first.at <= window:
                group.append(change)
                continue
        latest_group_of_key[change.key] = len(groups)
        groups.append([change])
    return [_fold(group) for group in groups]


def _fold(group: list[Change]) -> Change:
    first = group[0]
    if len(group) == 1:
        return first
    sources: list[str] = []
    for record in group:
        for source in record.sources:
            if source not in sources:
                sources.append(source)
    return Change(
        ref=first.ref,
        key=first.key,
        old=first.old,
        new=first.new,
        at=first.at,
        scope=first.scope,
        sources=tuple(sources),
    )


def _apply(state: dict[str, str], change: Change) -> None:
    if change.new is None:
        state.pop(change.key, None)
    else:
        state[change.key] = change.new


def state_at(changes: Sequence[Change], t: dt.datetime) -> dict[str, str]:
    """The effective value of every key at ``t`` (changes at exactly ``t`` included).

    Removed keys are absent.
    """
    state: dict[str, str] = {}
    for change in _in_time_order(changes):
        if change.at > t:
            break
        _apply(state, change)
    return state


def diff_states(
    changes: Sequence[Change], a: dt.datetime, b: dt.datetime
) -> list[tuple[str, str | None, str | None]]:
    """Every key whose value differs between ``a`` and ``b``: (key, value at a, value at b).

    None stands for "not set". Sorted by key.
    """
    before = state_at(changes, a)
    after = state_at(changes, b)
    keys = sorted(set(before) | set(after))
    return [
        (key, before.get(key), after.get(key)) for key in keys if before.get(key) != after.get(key)
    ]


@dataclass(frozen=True)
class StateInterval:
    """A stretch of time over which the configuration did not change.

    ``end`` is the next change's time, the horizon given to :func:`state_intervals`, or None
    when open-ended. ``opened_by`` are the changes made at ``start``.
    """

    start: dt.datetime
    end: dt.datetime | None
    state: Mapping[str, str]
    opened_by: tuple[Change, ...] = field(default=())


def state_intervals(
    changes: Sequence[Change], until: dt.datetime | None = None
) -> list[StateInterval]:
    """The configuration states between changes, in time order.

    The first interval starts at the earliest change (before it nothing is known). The last one
    ends at ``until`` when that is later than its start, else it is open-ended.
    """
    ordered = _in_time_order(changes)
    intervals: list[StateInterval] = []
    state: dict[str, str] = {}
    i = 0
    while i < len(ordered):
        start = ordered[i].at
        opened: list[Change] = []
        while i < len(ordered) and ordered[i].at == start:
            _apply(state, ordered[i])
            opened.append(ordered[i])
            i += 1
        end = ordered[i].at if i < len(ordered) else None
        if end is None and until is not None and until > start:
            end = until
        intervals.append(StateInterval(start, end, dict(state), tuple(opened)))
    return intervals


# --- wording ------------------------------------------------------------------------------------


def fmt_time(t: dt.datetime) -> str:
    """A UTC moment for reasons: ``2026-11-20 23:39:58 UTC`` (seconds only when not zero)."""
    t = t.astimezone(UTC)
    if t.second or t.microsecond:
        return t.strftime("%Y-%m-%d %H:%M:%S UTC")
    return t.strftime("%Y-%m-%d %H:%M UTC")


def fmt_duration(d: dt.timedelta) -> str:
    """A duration for reasons: ``3 h 35 min``, ``29 min``, ``45 s``, ``2 d 3 h``."""
    seconds = int(d.total_seconds())
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{sign}{seconds} s"
    minutes, _ = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days >= 2:
        return f"{sign}{days} d {hours} h" if hours else f"{sign}{days} d"
    hours += days * 24
    if hours == 0:
        return f"{sign}{minutes} min"
    return f"{sign}{hours} h {minutes} min" if minutes else f"{sign}{hours} h"


def fmt_value(value: str | None) -> str:
    """A setting's value for reasons: quoted, or ``unset`` for None."""
    return "unset" if value is None else repr(value)


def source_kinds(sources: Iterable[str]) -> list[str]:
    """The kinds of a change's sources (``doc:X@1`` -> ``doc``), first-seen order, no repeats."""
    kinds: list[str] = []
    for source in sources:
        kind = source.split(":", 1)[0]
        if kind not in kinds:
            kinds.append(kind)
    return kinds


def unmerged_duplicates(
    merged: Sequence[Change], window: dt.timedelta
) -> list[tuple[Change, Change]]:
    """Pairs of merged changes that look like one change whose sources' clocks disagree.

    A pair is the same key set to the same value twice in a row, by different kinds of source,
    further apart than ``window`` (closer ones were merged already). The second record changes
    nothing, so the likeliest story is that one source's time is off.
    """
    pairs: list[tuple[Change, Change]] = []
    previous: dict[str, Change] = {}
    for change in _in_time_order(merged):
        before = previous.get(change.key)
        previous[change.key] = change
        if before is None or before.new != change.new:
            continue
        if change.at - before.at <= window:
            continue
        if set(source_kinds(before.sources)) != set(source_kinds(change.sources)):
            pairs.append((before, change))
    return pairs
