"""Small builders for hand-made correlation timelines (all times UTC, on 2026-11-20)."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable

from timeline.correlation.types import Change, HarnessRun, LogSpan, Request, Series

UTC = dt.UTC
_refs = itertools.count(1)


def at(h: int, m: int = 0, s: int = 0) -> dt.datetime:
    """2026-11-20 h:m:s UTC."""
    return dt.datetime(2026, 11, 20, h, m, s, tzinfo=UTC)


def change(
    key: str,
    old: str | None,
    new: str | None,
    when: dt.datetime,
    *sources: str,
    scope: str = "env",
) -> Change:
    return Change(next(_refs), key, old, new, when, scope, tuple(sources) or ("commit:abc",))


def request(rid: str, received: dt.datetime, finished: dt.datetime | None) -> Request:
    return Request(next(_refs), rid, received, finished)


def span(start: dt.datetime, end: dt.datetime) -> LogSpan:
    return LogSpan(next(_refs), start, end)


def run(when: dt.datetime, status: str = "pass", score: float | None = 0.93) -> HarnessRun:
    return HarnessRun(next(_refs), when, "stability", "agentic", status, score)


def minutes(start: dt.datetime, end: dt.datetime) -> tuple[dt.datetime, ...]:
    """Every whole minute from start to end, inclusive."""
    count = int((end - start).total_seconds() // 60) + 1
    return tuple(start + dt.timedelta(minutes=i) for i in range(count))


def series(
    name: str,
    times: tuple[dt.datetime, ...],
    value: Callable[[dt.datetime], float],
    **labels: str,
) -> Series:
    return Series(name, tuple(sorted(labels.items())), times, tuple(value(t) for t in times))


def window(
    start: dt.datetime, end: dt.datetime, inside: float, outside: float
) -> Callable[[dt.datetime], float]:
    """A value function: ``inside`` for start <= t < end, else ``outside``."""
    return lambda t: inside if start <= t < end else outside


def healthy_metrics(
    start: dt.datetime,
    end: dt.datetime,
    wedges: tuple[tuple[dt.datetime, dt.datetime], ...] = (),
) -> tuple[Series, ...]:
    """Running/throughput series at 1-minute resolution, wedged (2 running, 0 tok/s) in wedges."""
    times = minutes(start, end)

    def wedged(t: dt.datetime) -> bool:
        return any(a <= t < b for a, b in wedges)

    return (
        series("sglang:num_running_reqs", times, lambda t: 2.0 if wedged(t) else 10.0),
        series("sglang:gen_throughput", times, lambda t: 0.0 if wedged(t) else 900.0),
    )
