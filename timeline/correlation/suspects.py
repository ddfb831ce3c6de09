"""Rank the configuration changes between last known good and first bad as suspects.

Score (additive; rounded to 3 decimals; higher = more suspicious)::

    score = relevance + novelty + proximity + exposure + revert

    relevance  = +2.0 if the key names machinery of the symptom class (for dropped requests and
                 wedges: scheduling, batching, CUDA graphs, kernel launch, CTAs, MMA, PDL,
                 overlap, chunked prefill, max running, streams), -1.0 if it names plumbing
                 (logging, ports, paths, tokenizer), else +0.5 (see relevance.py)
    novelty    = +1.0 for a new key (old unset), +0.5 for a removed key, 0 for a tweak
    proximity  = +1.0 * (1 - d / W): d = first bad - change time, W = first bad - start of the
                 window (last good, or the earliest candidate change when there is none);
                 +1.0 when W is zero
    exposure   = -1.0 * min(E / stable_load_min, 1.5): E = time under load, without a symptom,
                 from the change to the first bad moment; 0 when there is no load data
    revert     = a later change sets the key back to its old value:
                 -3.0 if a symptom appeared while it was reverted ("reverted at 16:30 and the
                      wedge recurred at 16:55"),
                 +3.0 if none did and the reverted state carried load for stable_load_min,
                  0   otherwise (too little load to tell) or when never reverted;
                 then, if it was restored later, +1.5 if a symptom appeared after that

Each factor contributes exactly one reason line, with its figures and its points. Ties are broken
by time (later first), then key.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from evidence.vocabulary import SymptomKind
from timeline.correlation.config_state import fmt_duration, fmt_time, fmt_value
from timeline.correlation.relevance import HIGH, LOW, relevance
from timeline.correlation.symptoms import Load
from timeline.correlation.types import Change, Excluded, Params, Suspect, Symptom

RELEVANCE_POINTS = {HIGH: 2.0, LOW: -1.0, "neutral": 0.5}
NEW_KEY_POINTS = 1.0
REMOVED_KEY_POINTS = 0.5
PROXIMITY_POINTS = 1.0
EXPOSURE_POINTS = 1.0
EXPOSURE_CAP = 1.5
REVERT_CONTINUED_POINTS = -3.0
REVERT_STOPPED_POINTS = 3.0
RESTORE_RETURNED_POINTS = 1.5

_NOUN = {
    SymptomKind.WEDGE: "wedge",
    SymptomKind.DROPPED_REQUEST: "dropped requests",
    SymptomKind.HARNESS_FAILURE: "harness failures",
}
_CLASS = {
    SymptomKind.WEDGE: "dropped requests and wedges",
    SymptomKind.DROPPED_REQUEST: "dropped requests and wedges",
    SymptomKind.HARNESS_FAILURE: "harness failures",
}


def _pts(points: float) -> str:
    return f"({round(points, 3):+g})"


@dataclass(frozen=True)
class Ranking:
    """Suspects best first, and every other change with the reason it is not one."""

    suspects: list[Suspect]
    excluded: list[Excluded]


def _symptom_class(symptoms: Sequence[Symptom], first_bad: dt.datetime) -> SymptomKind:
    at_or_after = [s for s in symptoms if s.at >= first_bad]
    pool = at_or_after or list(symptoms)
    return min(pool, key=lambda s: s.at).kind if pool else SymptomKind.WEDGE


def _relevance_factor(change: Change, kind: SymptomKind) -> tuple[float, str]:
    verdict = relevance(change.key, kind)
    points = RELEVANCE_POINTS[verdict.level]
    words = ", ".join(verdict.words)
    target = _CLASS.get(kind, "the symptoms")
    if verdict.level == HIGH:
        text = f"{change.key} names {words}: machinery relevant to {target}, high relevance"
    elif verdict.level == LOW:
        text = f"{change.key} names {words}: plumbing, low relevance to {target}"
    else:
        text = f"{change.key} names nothing tied to {target}, neutral relevance"
    return points, f"{text} {_pts(points)}"


def _novelty_factor(change: Change) -> tuple[float, str]:
    if change.old is None:
        points = NEW_KEY_POINTS
        text = f"a new setting: {change.key} was not set before and became {fmt_value(change.new)}"
    elif change.new is None:
        points = REMOVED_KEY_POINTS
        text = f"a removed setting: {change.key} was {fmt_value(change.old)} and became unset"
    else:
        points = 0.0
        text = f"a tweak of an existing value: {fmt_value(change.old)} -> {fmt_value(change.new)}"
    return points, f"{text} {_pts(points)}"


def _proximity_factor(
    change: Change, first_bad: dt.datetime, window_start: dt.datetime
) -> tuple[float, str]:
    before = first_bad - change.at
    span = first_bad - window_start
    share = 1.0 if span <= dt.timedelta(0) else 1.0 - before / span
    share = min(max(share, 0.0), 1.0)
    points = PROXIMITY_POINTS * share
    text = (
        f"made {fmt_duration(before)} before the first bad moment at {fmt_time(first_bad)}, "
        f"{round(share * 100)}% of the way from {fmt_time(window_start)} to it"
    )
    return points, f"{text} {_pts(points)}"


def _exposure_factor(
    change: Change, first_bad: dt.datetime, load: Load | None, params: Params
) -> tuple[float, str]:
    if load is None:
        return 0.0, f"no load data, so its symptom-free exposure is unknown {_pts(0.0)}"
    carried = load.loaded(change.at, first_bad)
    need = params.stable_load_min
    ratio = carried / need if need > dt.timedelta(0) else EXPOSURE_CAP
    points = -EXPOSURE_POINTS * min(ratio, EXPOSURE_CAP)
    text = (
        f"served {fmt_duration(carried)} of load without a symptom before the first bad moment "
        f"(stable needs {fmt_duration(need)}; load read from {load.source})"
    )
    return points, f"{text} {_pts(points)}"


def _revert_factor(
    change: Change,
    same_key: Sequence[Change],
    symptoms: Sequence[Symptom],
    load: Load | None,
    params: Params,
    until: dt.datetime | None,
) -> tuple[float, str]:
    later = [c for c in same_key if c.at > change.at]
    revert = next((c for c in later if c.new == change.old), None)
    if revert is None:
        if change.old is None:
            return 0.0, f"never removed again, so no revert evidence {_pts(0)}"
        return 0.0, f"never set back to {fmt_value(change.old)}, so no revert evidence {_pts(0)}"
    restore = next((c for c in later if c.at > revert.at and c.new == change.new), None)
    reverted_until = restore.at if restore is not None else until
    text = f"reverted to {fmt_value(change.old)} at {fmt_time(revert.at)}"
    while_reverted = [
        s for s in symptoms if s.at > revert.at and (restore is None or s.at < restore.at)
    ]
    points = 0.0
    if while_reverted:
        first = while_reverted[0]
        verb = "recurred" if any(s.at <= revert.at for s in symptoms) else "still appeared"
        text += f" and the {_NOUN.get(first.kind, first.kind)} {verb} at {fmt_time(first.at)}"
        points += REVERT_CONTINUED_POINTS
    else:
        carried = dt.timedelta(0)
        if load is not None and reverted_until is not None:
            carried = load.loaded(revert.at, reverted_until)
        if load is not None and carried >= params.stable_load_min:
            text += f" and no symptom followed in {fmt_duration(carried)} of load"
            points += REVERT_STOPPED_POINTS
        else:
            text += (
                f" with no symptom after, but only {fmt_duration(carried)} of load followed: "
                "too little to tell"
            )
    if restore is not None:
        returned = [s for s in symptoms if s.at > restore.at]
        text += f"; restored to {fmt_value(change.new)} at {fmt_time(restore.at)}"
        if returned:
            noun = _NOUN.get(returned[0].kind, returned[0].kind)
            text += f" and the {noun} returned at {fmt_time(returned[0].at)}"
            points += RESTORE_RETURNED_POINTS
        else:
            text += " with no symptom after"
    return points, f"{text} {_pts(points)}"


def rank_changes(
    changes: Sequence[Change],
    symptoms: Sequence[Symptom],
    first_bad: dt.datetime | None,
    last_good: dt.datetime | None,
    load: Load | None,
    params: Params,
    until: dt.datetime | None = None,
) -> Ranking:
    """Score the changes after ``last_good`` and at or before ``first_bad``; exclude the rest.

    ``changes`` are all merged changes (later ones serve as revert evidence); ``until`` is the
    end of the data, for the load after a revert that was never undone.
    """
    ordered = sorted(changes, key=lambda c: (c.at, c.key))
    if first_bad is None:
        reason = "no first bad moment is known, so no change can be ranked"
        return Ranking([], [Excluded(c, reason) for c in ordered])
    by_key: dict[str, list[Change]] = defaultdict(list)
    for c in ordered:
        by_key[c.key].append(c)
    candidates = [
        c for c in ordered if (last_good is None or c.at > last_good) and c.at <= first_bad
    ]
    window_start = last_good
    if window_start is None:
        window_start = candidates[0].at if candidates else first_bad
    kind = _symptom_class(symptoms, first_bad)

    suspects: list[Suspect] = []
    for c in candidates:
        factors = [
            _relevance_factor(c, kind),
            _novelty_factor(c),
            _proximity_factor(c, first_bad, window_start),
            _exposure_factor(c, first_bad, load, params),
            _revert_factor(c, by_key[c.key], symptoms, load, params, until),
        ]
        score = round(sum(points for points, _ in factors), 3)
        suspects.append(Suspect(c, score, tuple(text for _, text in factors), c.sources))
    suspects.sort(key=lambda s: (-s.score, -s.change.at.timestamp(), s.change.key))

    chosen = set(map(id, candidates))
    excluded: list[Excluded] = []
    for c in ordered:
        if id(c) in chosen:
            continue
        if c.at > first_bad:
            reason = (
                f"made at {fmt_time(c.at)}, after the first bad moment ({fmt_time(first_bad)}), "
                "so it cannot have caused it"
            )
            reverted = [s for s in candidates if s.key == c.key and s.old == c.new]
            if reverted:
                reason += (
                    f"; it sets {c.key} back to {fmt_value(c.new)} and counts as revert "
                    f"evidence for the change at {fmt_time(reverted[-1].at)}"
                )
        elif last_good is not None and c.at == last_good:
            reason = (
                f"made at {fmt_time(c.at)}, when the last known good state began: it is part "
                "of that good configuration"
            )
        else:
            reason = (
                f"made at {fmt_time(c.at)}, before the last known good moment "
                f"({fmt_time(last_good or first_bad)})"
            )
        excluded.append(Excluded(c, reason))
    return Ranking(suspects, excluded)
