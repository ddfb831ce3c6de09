"""Live intervals: the configurations that actually ran, one per server start.

Each start's configuration is what its ``server_args=ServerArgs(...)`` line logged. What the log
does not show is carried over from the interval before and updated with the changes recorded
(docs, commits) since, and marked as assumed: environment variables (never in ServerArgs: they
go live at the next start), settings outside the server's flags (a compose file's ``image``:
:func:`keys.outside_server`) and every setting of a start that logged no ServerArgs line.

Each interval also carries its load (how long the server was busy) and its symptoms, which is
the evidence the suspects are judged on.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from evidence.vocabulary import SymptomKind
from timeline.correlation import keys
from timeline.correlation.config_state import fmt_duration, fmt_time
from timeline.correlation.symptoms import Load
from timeline.correlation.types import (
    Change,
    Request,
    Requests,
    ServerStart,
    Symptom,
    from_us,
    to_us,
)

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


class _ByTime:
    """Things sorted by a time, sliced by [begin, end) with a binary search: a crash loop can
    log hundreds of starts over a hundred thousand requests."""

    def __init__(self, items: Sequence[object], times: Sequence[dt.datetime]) -> None:
        order = sorted(range(len(items)), key=lambda i: times[i])
        self.items = [items[i] for i in order]
        self.times = [times[i] for i in order]

    def between(self, begin: dt.datetime, end: dt.datetime | None) -> list[object]:
        lo = bisect.bisect_left(self.times, begin)
        hi = len(self.times) if end is None else bisect.bisect_left(self.times, end)
        return self.items[lo:hi]


class RequestsByTime:
    """Requests in the order they were received (stable), as columns, sliced by [begin, end)
    with a binary search: a big incident holds a million requests, which are never made into
    objects here. ``finished_before[k]``: how many of the first k finished; ``last_done[k]``:
    the position of the last finished one up to k (-1: none). Built once per analysis and
    handed to :func:`build_intervals` and :func:`find_stalls` (:meth:`of`)."""

    def __init__(self, requests: Sequence[Request]) -> None:
        table = Requests.of(requests)
        us = table.received_us
        if us.size > 1 and not (us[1:] >= us[:-1]).all():
            table = table.take(np.argsort(us, kind="stable"))
        self.table = table
        self.received = table.received_us
        done = table.finished
        self.finished_before = np.concatenate(([0], np.cumsum(done))).astype(np.int64)
        positions = np.where(done, np.arange(done.size), -1)
        self.last_done = np.maximum.accumulate(positions) if done.size else positions

    @classmethod
    def of(cls, requests: Sequence[Request] | RequestsByTime) -> RequestsByTime:
        """The requests by time (itself when it already is)."""
        return requests if isinstance(requests, RequestsByTime) else cls(requests)

    def span(self, begin: dt.datetime, end: dt.datetime | None) -> tuple[int, int]:
        lo = int(np.searchsorted(self.received, to_us(begin), side="left"))
        if end is None:
            return lo, int(self.received.size)
        return lo, int(np.searchsorted(self.received, to_us(end), side="left"))


def build_intervals(
    starts: Sequence[ServerStart],
    changes: Sequence[Change],
    symptoms: Sequence[Symptom],
    requests: Sequence[Request] | RequestsByTime,
    load: Load | None,
    until: dt.datetime | None,
) -> list[LiveInterval]:
    """One live interval per start, in time order (``changes`` are the recorded ones, merged)."""
    ordered = sorted(starts, key=lambda s: (s.at, s.line))
    fields = known_fields(ordered)
    recorded = sorted(changes, key=lambda c: c.at)
    # Recorded keys no ServerArgs line can show (a container's image): assumed, like env vars.
    outside: set[str] = set()
    # What a doc's first revision states for such keys held before it too, as far as anyone
    # knows: the doc describes a deployment already running, not a change at that moment.
    carried = _first_doc_states(recorded, fields)
    outside.update(k for k in carried if not keys.is_env(k))
    intervals: list[LiveInterval] = []
    by_symptom = _ByTime(symptoms, [x.at for x in symptoms])
    by_request = RequestsByTime.of(requests)
    i = 0
    for n, start in enumerate(ordered):
        applied: list[Change] = []
        while i < len(recorded) and recorded[i].at <= start.at:
            c = recorded[i]
            key = canonical_change(c, fields)
            _apply(carried, key, c.new)
            if keys.outside_server(c.key, c.scope, fields):
                outside.add(key)
            applied.append(c)
            i += 1
        values = dict(carried)
        assumed = set(values)
        if start.server_args:
            # The logged ServerArgs is every flag that ran: a recorded flag that names no field
            # of it (argparse refuses an ambiguous prefix) did not run. What lies outside the
            # server's flags (env vars, a container's image) it cannot show: kept, assumed.
            for key in [k for k in values if not keys.is_env(k) and k not in outside]:
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
        lo, hi = by_request.span(begin, end)
        finished = int(by_request.finished_before[hi] - by_request.finished_before[lo])
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
                symptoms=tuple(x for x in by_symptom.between(begin, end) if isinstance(x, Symptom)),
                finished=finished,
                stalled=hi - lo - finished,
                recorded=tuple(applied),
            )
        )
        # What the log showed is what ran: the next start carries it over, not the records.
        carried = dict(values)
    return intervals


def _doc_path(source: str) -> str | None:
    """``doc:DSV4_DEPLOY.md@ab12`` -> ``DSV4_DEPLOY.md``; None for any other record."""
    if not source.startswith("doc:"):
        return None
    return source[4:].rsplit("@", 1)[0]


def _first_doc_states(recorded: Sequence[Change], fields: frozenset[str]) -> dict[str, str]:
    """The env vars (and keys outside the server's flags) a doc's first revision introduces
    when nothing recorded them before: their values, assumed to have run before it as well.
    Read as "unset -> value" at the next start, they were a change nobody made (the state
    before the first record is unknown, not unset). Only records made by docs alone count: a
    commit introducing a key is a change."""
    first_at: dict[str, dt.datetime] = {}
    for c in recorded:
        for source in c.sources:
            path = _doc_path(source)
            if path is not None and (path not in first_at or c.at < first_at[path]):
                first_at[path] = c.at
    states: dict[str, str] = {}
    seen: set[str] = set()
    for c in recorded:
        key = canonical_change(c, fields)
        if key in seen:
            continue
        seen.add(key)
        paths = [_doc_path(source) for source in c.sources]
        if (
            c.old is None
            and c.new is not None
            and paths
            and all(p is not None and first_at.get(p) == c.at for p in paths)
            and (keys.is_env(key) or keys.outside_server(c.key, c.scope, fields))
        ):
            states[key] = c.new
    return states


def interval_at(intervals: Sequence[LiveInterval], t: dt.datetime) -> LiveInterval | None:
    """The interval live at ``t`` (the latest start at or before it), or None before the first."""
    k = bisect.bisect_right([i.begin for i in intervals], t)
    return intervals[k - 1] if k else None


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
    table = Requests.of(requests)
    candidates = [
        k for k, s in enumerate(symptoms) if s.kind == SymptomKind.DROPPED_REQUEST and s.refs
    ]
    cut_at = np.zeros(len(symptoms), dtype=bool)
    if candidates and len(table):
        refs = np.array([symptoms[k].refs[0] for k in candidates], dtype=np.int64)
        # The request of each symptom's ref (the last one of that ref, as a dict would keep).
        by_ref = np.argsort(table.ref, kind="stable")
        sorted_refs = table.ref[by_ref]
        pos = np.searchsorted(sorted_refs, refs, side="right") - 1
        known = pos >= 0
        known &= sorted_refs[np.maximum(pos, 0)] == refs
        row = by_ref[np.maximum(pos, 0)]
        received = table.received_us[row]
        unfinished = known & ~table.finished[row]
        # The interval each was received in (the latest start at or before it).
        begins = np.array([to_us(i.begin) for i in intervals], dtype=np.int64)
        ends = np.array(
            [to_us(i.end) if i.end is not None else 0 for i in intervals], dtype=np.int64
        )
        ended = np.array([i.end is not None for i in intervals], dtype=bool)
        not_last = np.array([i.index + 1 < len(intervals) for i in intervals], dtype=bool)
        k = np.searchsorted(begins, received, side="right") - 1
        inside = k >= 0
        k = np.maximum(k, 0)
        timeout_us = timeout // dt.timedelta(microseconds=1)
        cut = unfinished & inside & ended[k] & (ends[k] < received + timeout_us) & not_last[k]
        cut_at[np.array(candidates)[cut]] = True
    kept = [s for s, was_cut in zip(symptoms, cut_at.tolist(), strict=True) if not was_cut]
    return kept, int(cut_at.sum())


def find_stalls(
    intervals: Sequence[LiveInterval],
    requests: Sequence[Request] | RequestsByTime,
    min_requests: int,
    min_span: dt.timedelta,
) -> list[Symptom]:
    """Per start: from the first of the requests received after the last one that finished,
    when at least ``min_requests`` of them went unfinished over at least ``min_span`` while the
    server stayed up (until the next start): the server stalled. Which requests kept finishing
    before it is said in the title."""
    by_request = RequestsByTime.of(requests)
    received = by_request.received
    stalls: list[Symptom] = []
    for interval in intervals:
        if interval.end is None or interval.index + 1 >= len(intervals):
            continue  # the log may simply end: a stall needs the server seen up after it
        lo, hi = by_request.span(interval.begin, interval.end)
        last = int(by_request.last_done[hi - 1]) if hi > lo else -1
        first_tail = last + 1 if last >= lo else lo  # after the last one that finished
        tail = hi - first_tail
        if tail < min_requests:
            continue
        tail_at = from_us(int(received[first_tail]))
        if interval.end - tail_at < min_span:
            continue
        title = (
            f"stall: {tail} requests received from {fmt_time(tail_at)} and none "
            f"finished until the restart at {fmt_time(interval.end)}; {first_tail - lo} finished "
            "before it"
        )
        refs = tuple(by_request.table.ref[first_tail : first_tail + min(tail, 50)].tolist())
        stalls.append(Symptom(SymptomKind.STALL, tail_at, interval.end, title, refs))
    return stalls


def describe(interval: LiveInterval, previous: LiveInterval | None, need: dt.timedelta) -> str:
    """One line for the Live config story: when, what changed, load, symptoms."""
    parts = [f"{fmt_time(interval.begin)} start ({interval.where})"]
    if not interval.logged_args:
        parts.append("no ServerArgs line: configuration assumed from the records")
    if previous is not None:
        changed = [c for c in diff(previous, interval) if c[0] not in keys.VOLATILE]
        if changed:
            parts.append(
                "changed "
                + ", ".join(
                    f"{keys.display(k)} {keys.shown(a)} -> {keys.shown(b)}" for k, a, b in changed
                )
            )
        else:
            parts.append("same configuration as before")
        other = version_fields(previous, interval)
        if other:
            parts.append(
                f"{len(other)} ServerArgs field(s) logged by only one of the two starts (another "
                f"SGLang version?), not compared: {', '.join(sorted(other)[:5])}"
            )
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


def version_fields(a: LiveInterval, b: LiveInterval) -> set[str]:
    """ServerArgs fields only one of two logged starts has: another SGLang version, not a
    setting anyone changed."""
    if not (a.logged_args and b.logged_args):
        return set()
    return set(a.start.server_args) ^ set(b.start.server_args)


def diff(a: LiveInterval, b: LiveInterval) -> list[tuple[str, str | None, str | None]]:
    """The keys whose effective value differs between two intervals: (key, a's, b's), by key.
    Fields that only one start's ServerArgs logs are left out (see :func:`version_fields`)."""
    skip = version_fields(a, b)
    out = []
    for key in sorted((set(a.values) | set(b.values)) - skip):
        if a.values.get(key) == b.values.get(key):
            continue  # the same text is the same value
        if a.effective(key) != b.effective(key):
            out.append((key, a.value(key), b.value(key)))
    return out
