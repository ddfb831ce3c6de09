"""Live intervals: the configurations that actually ran, one per server start.

Each start's configuration is what its ``server_args=ServerArgs(...)`` line logged. What the log
does not show is carried over from the interval before and updated with the changes recorded
(docs, commits) since, and marked as assumed: environment variables (never in ServerArgs: they
go live at the next start) and every setting of a start that logged no ServerArgs line.

Each interval also carries its load (how long the server was busy) and its symptoms, which is
the evidence the suspects are judged on.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evidence.vocabulary import SymptomKind
from timeline.correlation import keys
from timeline.correlation.config_state import fmt_duration, fmt_time
from timeline.correlation.symptoms import Load
from timeline.correlation.types import Change, Request, ServerStart, Symptom

CRASHES = frozenset(
    {SymptomKind.CRASH, SymptomKind.WATCHDOG_TIMEOUT, SymptomKind.CRASH_LOOP, SymptomKind.OOM}
)


@dataclass(frozen=True)
class LiveInterval:
    """One server start and the time it served, until the next start, its shutdown or the end
    of the data. ``values`` maps canonical keys (ServerArgs fields, env vars) to the value as
    logged or recorded; ``assumed`` are the keys whose value was not logged."""

    index: int
    start: ServerStart
    begin: dt.datetime
    end: dt.datetime | None
    values: Mapping[str, str]
    assumed: frozenset[str]
    logged_args: bool
    loaded: dt.timedelta
    symptoms: tuple[Symptom, ...] = ()
    finished: int = 0  # requests received in it that finished
    stalled: int = 0  # requests received in it that never finished
    recorded: tuple[Change, ...] = field(default=())  # recorded changes applied at this start

    def value(self, key: str) -> str | None:
        return self.values.get(key)

    def effective(self, key: str) -> str | None:
        return keys.effective(self.values.get(key), "env" if keys.is_env(key) else "")

    @property
    def where(self) -> str:
        name = self.start.where or "server log"
        return f"{name}:{self.start.line}" if self.start.line else name

    def contains(self, t: dt.datetime) -> bool:
        return self.begin <= t and (self.end is None or t < self.end)

    def clean(self) -> bool:
        return not self.symptoms

    def label(self) -> str:
        return f"the start at {fmt_time(self.begin)} ({self.where})"


def known_fields(starts: Sequence[ServerStart]) -> frozenset[str]:
    """Every ServerArgs field any start logged: what flags can map to."""
    return frozenset(f for s in starts for f in s.server_args)


def canonical_change(change: Change, fields: frozenset[str]) -> str:
    return keys.canonical(change.key, change.scope, fields)


def _apply(values: dict[str, str], key: str, new: str | None) -> None:
    if new is None:
        values.pop(key, None)
    else:
        values[key] = new


def _symptoms_in(
    symptoms: Sequence[Symptom], begin: dt.datetime, end: dt.datetime | None
) -> tuple[Symptom, ...]:
    return tuple(s for s in symptoms if begin <= s.at and (end is None or s.at < end))


def build_intervals(
    starts: Sequence[ServerStart],
    changes: Sequence[Change],
    symptoms: Sequence[Symptom],
    requests: Sequence[Request],
    load: Load | None,
    until: dt.datetime | None,
) -> list[LiveInterval]:
    """One live interval per start, in time order (``changes`` are the recorded ones, merged)."""
    ordered = sorted(starts, key=lambda s: (s.at, s.line))
    fields = known_fields(ordered)
    recorded = sorted(changes, key=lambda c: c.at)
    carried: dict[str, str] = {}
    intervals: list[LiveInterval] = []
    i = 0
    for n, start in enumerate(ordered):
        applied: list[Change] = []
        while i < len(recorded) and recorded[i].at <= start.at:
            c = recorded[i]
            _apply(carried, canonical_change(c, fields), c.new)
            applied.append(c)
            i += 1
        values = dict(carried)
        assumed = set(values)
        if start.server_args:
            # The logged ServerArgs is every flag that ran: a recorded flag that names no field
            # of it (argparse refuses an ambiguous prefix) did not run.
            for key in [k for k in values if not keys.is_env(k)]:
                del values[key]
                assumed.discard(key)
            values.update(start.server_args)
            assumed -= set(start.server_args)
        for key, value in start.env.items():
            values[key] = value
            assumed.discard(key)
        nxt = ordered[n + 1].at if n + 1 < len(ordered) else None
        end = nxt
        if start.ends_at is not None and (end is None or start.ends_at < end):
            end = start.ends_at
        if end is None and until is not None and until > start.at:
            end = until
        begin = start.at
        loaded = (
            load.loaded(begin, end) if load is not None and end is not None else dt.timedelta(0)
        )
        inside = [
            r for r in requests if begin <= r.received_at and (end is None or r.received_at < end)
        ]
        intervals.append(
            LiveInterval(
                index=n,
                start=start,
                begin=begin,
                end=end,
                values=values,
                assumed=frozenset(assumed),
                logged_args=bool(start.server_args),
                loaded=loaded,
                symptoms=_symptoms_in(symptoms, begin, end),
                finished=sum(1 for r in inside if r.finished_at is not None),
                stalled=sum(1 for r in inside if r.finished_at is None),
                recorded=tuple(applied),
            )
        )
        # What the log showed is what ran: the next start carries it over, not the records.
        carried = dict(values)
    return intervals


def interval_at(intervals: Sequence[LiveInterval], t: dt.datetime) -> LiveInterval | None:
    """The interval live at ``t`` (the latest start at or before it), or None before the first."""
    found = None
    for interval in intervals:
        if interval.begin <= t:
            found = interval
    return found


def cut_by_restart(
    symptoms: Sequence[Symptom],
    requests: Sequence[Request],
    intervals: Sequence[LiveInterval],
    timeout: dt.timedelta,
) -> tuple[list[Symptom], int]:
    """Drop the "dropped request" symptoms of requests a restart cut off: received in an
    interval that ended (a start or a shutdown) before their timeout ran out. A restart drops
    whatever is in flight; that is not the server failing to finish it. Returns the symptoms
    kept and how many were cut."""
    if not intervals:
        return list(symptoms), 0
    by_ref = {r.ref: r for r in requests}
    kept: list[Symptom] = []
    cut = 0
    for s in symptoms:
        request = (
            by_ref.get(s.refs[0]) if s.kind == SymptomKind.DROPPED_REQUEST and s.refs else None
        )
        if request is not None and request.finished_at is None:
            interval = interval_at(intervals, request.received_at)
            if (
                interval is not None
                and interval.end is not None
                and interval.end < request.received_at + timeout
                and interval.index + 1 < len(intervals)
            ):
                cut += 1
                continue
        kept.append(s)
    return kept, cut


def describe(interval: LiveInterval, previous: LiveInterval | None, need: dt.timedelta) -> str:
    """One line for the Live config story: when, what changed, load, symptoms."""
    parts = [f"{fmt_time(interval.begin)} start ({interval.where})"]
    if not interval.logged_args:
        parts.append("no ServerArgs line: configuration assumed from the records")
    if previous is not None:
        changed = diff(previous, interval)
        if changed:
            parts.append(
                "changed "
                + ", ".join(
                    f"{keys.display(k)} {keys.shown(a)} -> {keys.shown(b)}" for k, a, b in changed
                )
            )
        else:
            parts.append("same configuration as before")
    load = f"carried {fmt_duration(interval.loaded)} of load"
    if interval.symptoms:
        kinds = sorted({str(s.kind).replace("_", " ") for s in interval.symptoms})
        first = interval.symptoms[0]
        parts.append(f"{load}; symptoms from {fmt_time(first.at)}: {', '.join(kinds)}")
    elif interval.loaded >= need:
        parts.append(f"{load} without a symptom")
    else:
        parts.append(f"{load}, no symptom")
    if interval.finished or interval.stalled:
        parts.append(f"{interval.finished} request(s) finished, {interval.stalled} never did")
    return "; ".join(parts)


def diff(a: LiveInterval, b: LiveInterval) -> list[tuple[str, str | None, str | None]]:
    """The keys whose effective value differs between two intervals: (key, a's, b's), by key."""
    out = []
    for key in sorted(set(a.values) | set(b.values)):
        if a.effective(key) != b.effective(key):
            out.append((key, a.value(key), b.value(key)))
    return out
