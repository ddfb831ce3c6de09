"""The first bad moment and the last known good state, each with its reason in words."""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass

from timeline.correlation.config_state import StateInterval, fmt_duration, fmt_time
from timeline.correlation.symptoms import Load
from timeline.correlation.types import Marks, Params, Symptom


@dataclass(frozen=True)
class Moment:
    """A moment the engine settled on (None: could not), and why, in words."""

    at: dt.datetime | None
    reason: str


def find_first_bad(symptoms: Sequence[Symptom], marks: Marks) -> Moment:
    """The operator's mark if set, else the earliest symptom."""
    if marks.first_bad is not None:
        return Moment(
            marks.first_bad, f"operator mark: first bad set to {fmt_time(marks.first_bad)}"
        )
    if not symptoms:
        return Moment(None, "no symptom was found, so the first bad moment is unknown")
    first = min(symptoms, key=lambda s: s.at)
    return Moment(first.at, f"the earliest symptom, at {fmt_time(first.at)}: {first.title}")


class _Symptoms:
    """Whether any symptom overlaps [start, end) (``s.at < end`` and ``(s.ends_at or s.at) >=
    start``), by a binary search: a big incident holds a hundred thousand symptoms and every
    configuration state asks. Among the symptoms that begin before ``end`` one reaches
    ``start`` exactly when the latest reach among them does."""

    def __init__(self, symptoms: Sequence[Symptom]) -> None:
        ordered = list(symptoms)
        ats = [s.at for s in ordered]
        if not all(map(operator.le, ats, ats[1:])):
            ordered.sort(key=operator.attrgetter("at"))
            ats = [s.at for s in ordered]
        self._ats = ats
        self._reach = list(itertools.accumulate((s.ends_at or s.at for s in ordered), max))

    def any_between(self, start: dt.datetime, end: dt.datetime) -> bool:
        k = bisect.bisect_left(self._ats, end)
        return k > 0 and self._reach[k - 1] >= start


def find_last_good(
    intervals: Sequence[StateInterval],
    symptoms: Sequence[Symptom],
    load: Load | None,
    first_bad: dt.datetime | None,
    marks: Marks,
    params: Params,
) -> Moment:
    """The operator's mark if set, else the start of the latest qualifying configuration state.

    A state qualifies when it ended (the next change) at or before the first bad moment, held no
    symptom, and carried load for at least ``params.stable_load_min``.
    """
    if marks.last_good is not None:
        return Moment(
            marks.last_good, f"operator mark: last good set to {fmt_time(marks.last_good)}"
        )
    if not intervals:
        return Moment(
            None, "no configuration change is known, so no configuration state can be named"
        )
    if load is None:
        return Moment(
            None,
            "there is no load data (no running-requests metric and no server log requests), "
            "so no configuration state can be shown to have carried load without a symptom",
        )
    need = params.stable_load_min
    overlapping = _Symptoms(symptoms)
    best: tuple[dt.timedelta, StateInterval] | None = None
    for interval in reversed(intervals):
        end = interval.end
        if end is None or (first_bad is not None and end > first_bad):
            continue
        if overlapping.any_between(interval.start, end):
            continue
        carried = load.loaded(interval.start, end)
        if carried >= need:
            return Moment(
                interval.start,
                f"the configuration in force from {fmt_time(interval.start)} carried load for "
                f"{fmt_duration(carried)} without a symptom (until the next change at "
                f"{fmt_time(end)}; load read from {load.source})",
            )
        if best is None or carried > best[0]:
            best = (carried, interval)
    if best is None:
        return Moment(
            None,
            "no configuration state ended before the first bad moment without a symptom, "
            "so there is no last known good state",
        )
    carried, interval = best
    return Moment(
        None,
        f"no configuration state before the first bad moment carried load for "
        f"{fmt_duration(need)} without a symptom; the most was {fmt_duration(carried)}, "
        f"from {fmt_time(interval.start)}",
    )
