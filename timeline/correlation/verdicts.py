"""Suspects from what ran: the live differences between last known good and first bad, judged
by the evidence of every live interval.

Score (additive, rounded to 3 decimals; higher = more suspicious)::

    score = cleared + without + reverted + restored + prior

    cleared  = -3.0 * min(L / stable_load_min, 1.0): L = load carried, without a symptom, by
               intervals that ran the suspect's bad value ("ran 3 h clean under the same value")
    without  = -4.0 if symptoms appeared, after last known good, while the key ran its good
               value (the fix attempt that did not help)
    reverted = +3.0 * min(L / stable_load_min, 1.0): the key went back to its good value at a
               start after a symptomatic interval, and the next interval carried L of load
               without a symptom
    restored = +2.0 if the key went back to its bad value after a clean interval and the
               symptoms returned
    prior    = +0.5 / 0 / -0.5 when the key's name is of high / neutral / low relevance to the
               symptom (relevance.py): only orders keys the evidence cannot separate

Crashes (crash, watchdog timeout, crash loop, OOM) are symptoms like any other: an interval
with one is not clean. A crash is never itself a suspect.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from timeline.correlation import keys
from timeline.correlation.config_state import fmt_duration, fmt_time
from timeline.correlation.deployed import Deployment, Transition
from timeline.correlation.live import LiveInterval, diff, interval_at
from timeline.correlation.relevance import HIGH, LOW, relevance
from timeline.correlation.types import Change, Excluded, LiveFacts, Marks, Params, Suspect

CLEARED_POINTS = -3.0
WITHOUT_POINTS = -4.0
REVERTED_POINTS = 3.0
RESTORED_POINTS = 2.0
PRIOR_POINTS = {HIGH: 0.5, "neutral": 0.0, LOW: -0.5}
# Suspects whose scores differ by less than this are not separated by the evidence.
SEPARATION = 1.0

CONVICTED = "convicted"
OPEN = "open"
CLEARED = "cleared"


@dataclass(frozen=True)
class LiveRanking:
    good: LiveInterval | None
    bad: LiveInterval
    last_good_reason: str
    suspects: list[Suspect]
    excluded: list[Excluded]
    bisect: list[str]
    warnings: list[str]


def _pts(points: float) -> str:
    return f"({round(points, 3):+g})"


def find_good(
    intervals: Sequence[LiveInterval], bad: LiveInterval, marks: Marks, need: dt.timedelta
) -> tuple[LiveInterval | None, str]:
    """The operator's mark, else the last interval before the bad one that carried sustained
    load without a symptom."""
    ignored = ""
    if marks.last_good is not None:
        marked = interval_at(intervals, marks.last_good)
        if marked is not None and marked.index < bad.index:
            return marked, (
                f"operator mark: last good set to {fmt_time(marks.last_good)}, when "
                f"{marked.label()} was live"
            )
        ignored = (
            f"the operator's last good mark ({fmt_time(marks.last_good)}) is not in a start "
            "before the one live at first bad, so it cannot name an earlier configuration; "
        )
    best: LiveInterval | None = None
    for interval in reversed(intervals[: bad.index]):
        if not interval.clean():
            continue
        if interval.loaded >= need:
            end = fmt_time(interval.end) if interval.end is not None else "the end of the data"
            return interval, (
                f"{ignored}{interval.label()} carried {fmt_duration(interval.loaded)} of load "
                f"without a symptom (until {end})"
            )
        if best is None or interval.loaded > best.loaded:
            best = interval
    if best is not None and best.loaded > dt.timedelta(0):
        return best, (
            f"{ignored}no start before the first bad moment carried {fmt_duration(need)} of load "
            f"without a symptom; the most was {fmt_duration(best.loaded)}, by {best.label()}, "
            "taken as last known good"
        )
    return None, (
        f"{ignored}no start before the first bad moment carried load without a symptom, so "
        "there is no last known good configuration"
    )


def _went_live(
    key: str, good: LiveInterval, bad: LiveInterval, transitions: Sequence[Transition]
) -> Transition | None:
    scope = "env" if keys.is_env(key) else ""
    found = None
    for t in transitions:
        if (
            t.key == key
            and good.index < t.interval.index <= bad.index
            and keys.same_value(t.after, bad.value(key), scope)
        ):
            found = t
    return found


@dataclass
class _Evidence:
    points: float = 0.0
    convict: float = 0.0
    against: bool = False
    clean_load: dt.timedelta = dt.timedelta(0)
    for_lines: tuple[str, ...] = ()
    against_lines: tuple[str, ...] = ()


def _weigh(
    key: str,
    good: LiveInterval,
    bad: LiveInterval,
    intervals: Sequence[LiveInterval],
    need: dt.timedelta,
) -> _Evidence:
    ev = _Evidence()
    bad_value = bad.effective(key)
    good_value = good.effective(key)
    shown_bad, shown_good = keys.shown(bad.value(key)), keys.shown(good.value(key))
    clean: list[LiveInterval] = []
    for j in intervals:
        if j.index == good.index or j.index == bad.index:
            continue
        value = j.effective(key)
        if j.clean() and j.loaded > dt.timedelta(0) and value == bad_value:
            clean.append(j)
        if j.index > good.index and j.symptoms and value == good_value and not ev.against:
            first = j.symptoms[0]
            ev.against = True
            ev.points += WITHOUT_POINTS
            ev.against_lines += (
                f"symptoms appeared at {fmt_time(first.at)} ({first.title}) while it ran its good "
                f"value {shown_good} ({j.label()}) {_pts(WITHOUT_POINTS)}",
            )
        prev = intervals[j.index - 1] if j.index > 0 else None
        if prev is None or j.index <= bad.index:
            continue
        was, now = prev.effective(key), j.effective(key)
        if prev.symptoms and was == bad_value and now == good_value and j.clean():
            share = min(j.loaded / need, 1.0) if need > dt.timedelta(0) else 1.0
            if share > 0:
                points = REVERTED_POINTS * share
                ev.points += points
                ev.convict += points
                ev.for_lines += (
                    f"reverted to {shown_good} at {j.label()} and no symptom followed in "
                    f"{fmt_duration(j.loaded)} of load {_pts(points)}",
                )
        reverted_ran = prev.clean() and prev.loaded > dt.timedelta(0)
        if was == good_value and now == bad_value and j.symptoms and reverted_ran:
            ev.points += RESTORED_POINTS
            ev.convict += RESTORED_POINTS
            ev.for_lines += (
                f"restored to {shown_bad} at {j.label()} and the symptoms returned at "
                f"{fmt_time(j.symptoms[0].at)} {_pts(RESTORED_POINTS)}",
            )
    if clean:
        total = sum((j.loaded for j in clean), dt.timedelta(0))
        share = min(total / need, 1.0) if need > dt.timedelta(0) else 1.0
        points = CLEARED_POINTS * share
        ev.points += points
        ev.clean_load = total
        where = ", ".join(j.label() for j in clean[:3]) + (" ..." if len(clean) > 3 else "")
        ev.against_lines += (
            f"ran {shown_bad} for {fmt_duration(total)} of load without a symptom ({where}) "
            f"{_pts(points)}",
        )
    return ev


def _prior(key: str, kind: str) -> tuple[float, str]:
    verdict = relevance(key, kind)
    points = PRIOR_POINTS[verdict.level]
    if verdict.level == HIGH:
        text = f"its name ({', '.join(verdict.words)}) is relevant to the symptom"
    elif verdict.level == LOW:
        text = f"its name ({', '.join(verdict.words)}) is plumbing, of low relevance"
    else:
        text = "its name says nothing about the symptom"
    return (
        points,
        f"{text}: a weak prior that only orders what the evidence leaves open {_pts(points)}",
    )


DRIFT_ORIGIN = "drift: no doc or commit records this value; it is read from the server log"


def _suspect(
    key: str,
    good: LiveInterval,
    bad: LiveInterval,
    t: Transition | None,
    ev: _Evidence,
    kind: str,
    need: dt.timedelta,
) -> Suspect:
    before, after = good.value(key), bad.value(key)
    prior, prior_line = _prior(keys.display(key), kind)
    score = round(ev.points + prior, 3)
    live_at = t.interval if t is not None else bad
    assumed = key in bad.assumed or (t is not None and t.assumed)
    if assumed:
        live_line = (
            f"assumed live from {live_at.label()}, the first start after it was recorded "
            "(the log does not show this setting)"
        )
    else:
        live_line = f"went live at {live_at.label()}"
    live_line += f": {keys.shown(before)} ran before, {keys.shown(after)} after"
    record = t.change if t is not None else None
    if record is None or t is None or t.drift:
        origin = DRIFT_ORIGIN
        sources: tuple[str, ...] = (f"live:{live_at.where}",)
        recorded_at = None
    else:
        kinds = "+".join(dict.fromkeys(s.split(":", 1)[0] for s in record.sources))
        origin = f"recorded by {kinds} at {fmt_time(record.at)}"
        sources = tuple(record.sources) + (() if assumed else (f"live:{live_at.where}",))
        recorded_at = record.at
    if ev.against or (ev.clean_load >= need and ev.convict == 0):
        verdict = CLEARED
    else:
        verdict = CONVICTED if ev.convict > 0 else OPEN
    change = Change(
        ref=record.ref if record is not None else live_at.start.ref,
        key=keys.display(key),
        old=before,
        new=after,
        at=live_at.begin,
        scope="env" if keys.is_env(key) else "flag",
        sources=sources,
    )
    reasons = (live_line, origin, *ev.for_lines, *ev.against_lines, prior_line)
    facts = LiveFacts(
        key=key,
        before=before,
        after=after,
        live_at=live_at.begin,
        live_where=live_at.where,  # the start it went live at (assumed or shown)
        assumed=assumed,
        verdict=verdict,
        evidence_for=ev.for_lines,
        evidence_against=ev.against_lines,
        recorded_at=recorded_at,
        points=round(ev.points, 3),
    )
    return Suspect(change, score, reasons, sources, facts)


def _bisect(suspects: Sequence[Suspect], need: dt.timedelta) -> list[str]:
    """When the evidence leaves several suspects level (their scores without the name prior
    within SEPARATION of the best), the order to revert them in and what each outcome means."""
    remaining = [s for s in suspects if s.live is not None and s.live.verdict != CLEARED]
    if not remaining or remaining[0].live is None:
        return []
    best = max(s.live.points for s in remaining if s.live is not None)
    tied = [s for s in remaining if s.live is not None and best - s.live.points < SEPARATION]
    if len(tied) < 2:
        return []
    names = ", ".join(s.change.key for s in tied)
    plan = [
        f"The evidence cannot separate {len(tied)} suspects ({names}): no start ran one of them "
        "without the others long enough to tell, so only the weak name prior orders them. "
        "Revert them one at a time, in this order:"
    ]
    for n, s in enumerate(tied, start=1):
        plan.append(
            f"{n}. Revert {s.change.key} to {keys.shown(s.change.old)} (keep the others), restart "
            f"and run {fmt_duration(need)} of load. No symptom: {s.change.key} is the cause. "
            f"Symptoms again: {s.change.key} is cleared; restore it"
            + (" and go on with the next." if n < len(tied) else ".")
        )
    plan.append(
        "If every one is reverted and the symptoms persist, the cause is not among these settings."
    )
    return plan


def rank_live(
    intervals: Sequence[LiveInterval],
    transitions: Sequence[Transition],
    deployments: Sequence[Deployment],
    first_bad: dt.datetime,
    kind: str,
    marks: Marks,
    params: Params,
) -> LiveRanking | str:
    """The live suspects, or why the starts cannot tell (then the recorded changes are ranked
    by when they were recorded)."""
    bad = interval_at(intervals, first_bad)
    if bad is None:
        return (
            f"the first bad moment ({fmt_time(first_bad)}) is before the first logged server "
            "start: the recorded changes are ranked by when they were recorded"
        )
    need = params.stable_load_min
    warnings: list[str] = []
    good, reason = find_good(intervals, bad, marks, need)
    compare = good
    if compare is None and bad.index > 0:
        compare = intervals[0]
        warnings.append(
            f"no last known good start: the configuration at first bad is compared with the "
            f"first logged start ({compare.label()})"
        )
    if compare is None:
        return (
            f"the first bad moment ({fmt_time(first_bad)}) falls in the first logged start "
            f"({bad.label()}): no earlier start shows what ran before it, so the recorded "
            "changes are ranked by when they were recorded"
        )
    recorded = {t.key for t in transitions if not t.drift}
    # (a seed SGLang drew at the start is no suspect, unless a record set it)
    differences = [d for d in diff(compare, bad) if d[0] not in keys.VOLATILE or d[0] in recorded]
    suspects = []
    for key, _before, _after in differences:
        t = _went_live(key, compare, bad, transitions)
        ev = _weigh(key, compare, bad, intervals, need)
        suspects.append(_suspect(key, compare, bad, t, ev, kind, need))
    suspects.sort(
        key=lambda s: (
            -s.score,
            -(s.live.live_at.timestamp() if s.live and s.live.live_at else 0.0),
            s.change.key,
        )
    )
    if not differences:
        warnings.append(
            f"the configuration live at the first bad moment ({bad.label()}) is the one of last "
            f"known good ({compare.label()}): no logged or recorded setting differs, so the cause "
            "is not a configuration change the evidence shows"
        )
    excluded = _excluded(deployments, suspects, compare, bad, first_bad)
    return LiveRanking(good, bad, reason, suspects, excluded, _bisect(suspects, need), warnings)


def _excluded(
    deployments: Sequence[Deployment],
    suspects: Sequence[Suspect],
    good: LiveInterval,
    bad: LiveInterval,
    first_bad: dt.datetime,
) -> list[Excluded]:
    named = {s.change.ref for s in suspects}
    out = []
    for d in deployments:
        if d.change.ref in named:
            continue
        if d.interval is not None and d.interval.index <= good.index:
            why = f"{d.words}; part of the last known good configuration"
        elif d.interval is not None and d.interval.index > bad.index:
            why = (
                f"{d.words}, after the first bad moment ({fmt_time(first_bad)}): it cannot have "
                "caused it"
            )
        elif d.status == "not deployed" or d.interval is None:
            why = f"{d.words}: not a suspect for symptoms before it went live"
        else:
            why = f"{d.words}; no effective difference between last known good and first bad"
        out.append(Excluded(d.change, why))
    return out
