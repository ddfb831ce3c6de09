"""When each recorded change went live, and what ran that nothing recorded (drift).

A change a doc or commit records at 12:30 goes live at the first start after it whose logged
configuration shows it. With no ServerArgs line (or for an env var, which ServerArgs never
shows) it is assumed live at the first start after it, and that is said. A change no start ever
showed is "documented, not deployed". A value that differs from the start before and that no
record explains is drift: a change of its own, sourced from the start's log line.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from evidence.vocabulary import Source
from timeline.correlation import keys
from timeline.correlation.config_state import fmt_time
from timeline.correlation.live import LiveInterval, canonical_change, diff, known_fields
from timeline.correlation.types import Change


@dataclass(frozen=True)
class Transition:
    """A key whose effective value changed at a start: ``before`` ran until it, ``after`` from
    it. ``change`` is the record that explains it, or the drift change made up for it."""

    key: str
    before: str | None
    after: str | None
    interval: LiveInterval
    change: Change
    drift: bool
    assumed: bool


@dataclass(frozen=True)
class Deployment:
    """What became of one recorded change: live at ``interval`` (None: never seen live)."""

    change: Change
    key: str
    interval: LiveInterval | None
    status: str  # "live", "assumed", "no effect", "not deployed", "already live"
    words: str


def _record_kind(change: Change) -> str:
    kinds = [s.split(":", 1)[0] for s in change.sources]
    return "+".join(dict.fromkeys(kinds)) or "record"


def matches(recorded: str | None, live: str | None, scope: str) -> bool:
    """Whether a start's value shows a recorded value: the same meaning, or a removed flag
    where the server ran false or None (a boolean flag's default)."""
    if keys.same_value(recorded, live, scope):
        return True
    return recorded is None and keys.effective(live, scope) in (None, "false")


def _drift_change(key: str, before: str | None, after: str | None, at: LiveInterval) -> Change:
    scope = "env" if keys.is_env(key) else "flag"
    return Change(
        ref=at.start.ref,
        key=keys.display(key),
        old=before,
        new=after,
        at=at.begin,
        scope=scope,
        sources=(f"{Source.LIVE}:{at.where}",),
    )


def transitions(
    intervals: Sequence[LiveInterval], changes: Sequence[Change]
) -> tuple[list[Transition], list[Deployment]]:
    """Every value change between consecutive starts, each explained by the latest matching
    record made before the start (else by a record made after it, else drift), and what became
    of each record."""
    fields = known_fields([i.start for i in intervals])
    recorded = sorted(changes, key=lambda c: c.at)
    by_key: dict[str, list[Change]] = {}
    for c in recorded:
        by_key.setdefault(canonical_change(c, fields), []).append(c)
    used: dict[int, Transition] = {}
    out: list[Transition] = []
    for previous, current in zip(intervals, intervals[1:], strict=False):
        for key, before, after in diff(previous, current):
            scope = "env" if keys.is_env(key) else ""
            candidates = [
                c for c in by_key.get(key, []) if matches(c.new, after, scope) and id(c) not in used
            ]
            earlier = [c for c in candidates if c.at <= current.begin]
            later = [c for c in candidates if c.at > current.begin]
            explained = earlier[-1] if earlier else (later[0] if later else None)
            assumed = key in current.assumed
            if explained is None and key in keys.VOLATILE:
                continue  # SGLang's own draw at the start (a seed), not drift
            if explained is None:
                t = Transition(
                    key,
                    before,
                    after,
                    current,
                    _drift_change(key, before, after, current),
                    True,
                    assumed,
                )
            else:
                t = Transition(key, before, after, current, explained, False, assumed)
                used[id(explained)] = t
            out.append(t)
    deployments = [_deployment(c, canonical_change(c, fields), intervals, used) for c in recorded]
    return out, deployments


def _deployment(
    change: Change,
    key: str,
    intervals: Sequence[LiveInterval],
    used: dict[int, Transition],
) -> Deployment:
    what = (
        f"{change.key} {keys.shown(change.old)} -> {keys.shown(change.new)} "
        f"({_record_kind(change)}, {fmt_time(change.at)})"
    )
    t = used.get(id(change))
    if t is not None:
        if t.assumed:
            return Deployment(
                change,
                key,
                t.interval,
                "assumed",
                f"{what}: assumed live from {t.interval.label()}, the first start after it "
                "(the log does not show this setting)",
            )
        return Deployment(
            change, key, t.interval, "live", f"{what}: went live at {t.interval.label()}"
        )
    scope = "env" if keys.is_env(key) else ""
    after = [i for i in intervals if i.begin >= change.at]
    before = [i for i in intervals if i.begin < change.at]
    showing = [i for i in intervals if keys.same_value(i.value(key), change.new, scope)]
    if before and keys.same_value(before[-1].value(key), change.new, scope):
        first = next(
            (i for i in reversed(before) if not keys.same_value(i.value(key), change.new, scope)),
            None,
        )
        since = before[0] if first is None else intervals[first.index + 1]
        return Deployment(
            change,
            key,
            since,
            "already live",
            f"{what}: the server already ran {keys.shown(before[-1].value(key))} from "
            f"{since.label()}, before it was recorded",
        )
    ran_before = before[-1].value(key) if before else change.old
    if after and change.new is None and keys.same_value(after[0].value(key), ran_before, scope):
        return Deployment(
            change,
            key,
            after[0],
            "no effect",
            f"{what}: no effective change, the server still ran {keys.shown(ran_before)} "
            f"(its default) from {after[0].label()}",
        )
    if not after:
        return Deployment(
            change,
            key,
            None,
            "not deployed",
            f"{what}: documented, not deployed (no start after it was logged)",
        )
    ran = after[-1].value(key)
    shown_live = [i for i in showing if i.begin >= change.at]
    if shown_live:
        return Deployment(
            change, key, shown_live[0], "live", f"{what}: live from {shown_live[0].label()}"
        )
    return Deployment(
        change,
        key,
        None,
        "not deployed",
        f"{what}: documented, not deployed: no start after it ran it (the last one, "
        f"{after[-1].label()}, ran {keys.shown(ran)})",
    )


def drift_lines(
    transitions_: Sequence[Transition],
    deployments: Sequence[Deployment],
    intervals: Sequence[LiveInterval],
) -> list[str]:
    """Doc-vs-live in words: values that ran without a record, records that never ran ("the doc
    said X, the server ran Y from 14:05"), and records that went live well after they were made."""
    lines = []
    for t in transitions_:
        if t.drift:
            lines.append(
                f"{keys.display(t.key)}: no doc or commit records {keys.shown(t.after)}, but the "
                f"server ran it from {fmt_time(t.interval.begin)} ({t.interval.where}; "
                f"{keys.shown(t.before)} before)"
            )
    for d in deployments:
        if d.status == "not deployed":
            after = [i for i in intervals if i.begin >= d.change.at]
            ran = after[-1] if after else (intervals[-1] if intervals else None)
            text = (
                f"{d.change.key}: the {_record_kind(d.change)} said {keys.shown(d.change.new)} "
                f"from {fmt_time(d.change.at)}"
            )
            if ran is not None:
                since = ran
                for i in reversed(intervals[: ran.index]):
                    if keys.same_value(i.value(d.key), ran.value(d.key)):
                        since = i
                    else:
                        break
                text += (
                    f", the server ran {keys.shown(ran.value(d.key))} from "
                    f"{fmt_time(since.begin)} ({since.where})"
                )
            lines.append(text + ": documented, not deployed")
        elif d.status == "live" and d.interval is not None and d.interval.index > 0:
            gap = d.interval.begin - d.change.at
            if -gap >= dt.timedelta(minutes=1):
                lines.append(
                    f"{d.change.key}: the server ran {keys.shown(d.change.new)} from "
                    f"{fmt_time(d.interval.begin)} ({d.interval.where}), but the "
                    f"{_record_kind(d.change)} recorded it only at {fmt_time(d.change.at)}"
                )
            if gap >= dt.timedelta(minutes=1):
                lines.append(
                    f"{d.change.key}: recorded as {keys.shown(d.change.new)} at "
                    f"{fmt_time(d.change.at)}, but the server ran it only from "
                    f"{fmt_time(d.interval.begin)} ({d.interval.where})"
                )
    return lines
