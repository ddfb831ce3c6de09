"""Server-log times a DST change made ambiguous, checked against epoch-stamped metrics.

The log parser reads a repeated or skipped local hour from the order of its lines and keeps
what it resolved on the log span (``attrs.clock``, see ``ingest.parsers.logclock``). Metrics
carry epoch times, so where both saw the same gauge (``sglang:num_running_reqs`` from the log's
batch lines and from /metrics) they can say whether the log was read right: if the log's values
match the metrics an offset-change later (or earlier) clearly better than where they were put,
the load says so. Run inside the loading transaction; checks only what this load can newly
compare: the windows of a log just loaded, or every stored window when metrics arrive.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np

from evidence.vocabulary import EventKind
from ingest.parsers.types import ParseResult
from timeline.metrics import reader
from timeline.models import Event, Incident, Series

GAUGES = ("sglang:num_running_reqs", "sglang:num_queue_reqs")
NEAR_MS = 90_000  # a metric sample this close to a log line's moment reads the same state
MIN_POINTS = 3
CLEARLY_BETTER = 0.5  # the shifted error at most this share of the error where the log was put


def check(incident: Incident, result: ParseResult | None) -> list[str]:
    """Warnings where a loaded log's resolved times disagree with the incident's metrics.
    ``result`` None: metrics were streamed in (no parse result): every stored window is
    checked."""
    if result is None:
        own, metrics_loaded = [], True
    else:
        own = [e for e in result.events if e.kind == EventKind.LOG_SPAN and e.attrs.get("clock")]
        metrics_loaded = any(
            b.key.name in GAUGES and ("source", "server_log") not in b.key.labels
            for b in result.samples
        )
    spans: list[tuple[str, list[dict[str, Any]]]] = [
        (e.title.removeprefix("server log "), e.attrs["clock"]) for e in own
    ]
    if metrics_loaded:
        stored = Event.objects.filter(
            incident=incident, kind=EventKind.LOG_SPAN, attrs__has_key="clock"
        ).values_list("title", "attrs")
        spans += [(title.removeprefix("server log "), attrs["clock"]) for title, attrs in stored]
    warnings: list[str] = []
    seen: set[tuple[str, str]] = set()
    for file, windows in spans:
        for window in windows:
            if (file, window["from"]) in seen:
                continue
            seen.add((file, window["from"]))
            note = _check_window(incident, file, window)
            if note:
                warnings.append(note)
    return warnings


def _check_window(incident: Incident, file: str, window: dict[str, Any]) -> str:
    start = dt.datetime.fromisoformat(window["from"])
    end = dt.datetime.fromisoformat(window["to"])
    shift = dt.timedelta(seconds=int(window["shift_s"]))
    for name in GAUGES:
        series = list(Series.objects.filter(incident=incident, name=name))
        logged = [
            s.pk
            for s in series
            if (s.labels or {}).get("source") == "server_log" and "batch" not in (s.labels or {})
        ]
        scraped = [s.pk for s in series if (s.labels or {}).get("source") != "server_log"]
        if not logged or not scraped:
            continue
        log_ts, log_v = _points(logged, start, end)
        margin = shift + dt.timedelta(minutes=5)
        met_ts, met_v = _points(scraped, start - margin, end + margin)
        if len(log_ts) < MIN_POINTS or not len(met_ts):
            continue
        errors = {}
        for sign in (0, 1, -1):
            error = _error(log_ts + sign * int(shift.total_seconds() * 1000), log_v, met_ts, met_v)
            if error is not None:
                errors[sign] = error
        if 0 not in errors or len(errors) < 2:
            continue
        best = min(errors, key=lambda k: errors[k])
        if best != 0 and errors[best] <= CLEARLY_BETTER * errors[0]:
            lines = window["lines"]
            which = {"repeated": f"pass {window['fold'] + 1} of a repeated hour"}.get(
                window["how"], "a skipped hour"
            )
            direction = "later" if best > 0 else "earlier"
            return (
                f"{file}:{lines[0]}: lines {lines[0]}-{lines[1]} (read as {which}) disagree with "
                f"the metrics: their {name} values match the metrics {shift} {direction} "
                f"(mean difference {errors[best]:.3g} there, {errors[0]:.3g} where they were "
                f"put); their times may be off by {shift}: check the incident's timezone"
            )
    return ""


def _points(
    series_ids: list[int], start: dt.datetime, end: dt.datetime
) -> tuple[np.ndarray, np.ndarray]:
    read = reader.samples_read(series_ids, start, end)
    if not read:
        return np.array([], dtype=np.int64), np.array([], dtype=np.float64)
    ts = np.concatenate([t for t, _ in read.values()]).astype(np.int64)
    values = np.concatenate([v for _, v in read.values()]).astype(np.float64)
    order = np.argsort(ts, kind="stable")
    return ts[order], values[order]


def _error(
    at: np.ndarray, values: np.ndarray, met_ts: np.ndarray, met_v: np.ndarray
) -> float | None:
    """Mean absolute difference between the log's values and the nearest metric sample (within
    NEAR_MS) at each moment; None with fewer than MIN_POINTS such pairs."""
    idx = np.clip(np.searchsorted(met_ts, at), 1, len(met_ts) - 1) if len(met_ts) > 1 else None
    if idx is None:
        nearest = np.zeros(len(at), dtype=np.int64)
    else:
        left_closer = np.abs(at - met_ts[idx - 1]) <= np.abs(met_ts[idx] - at)
        nearest = np.where(left_closer, idx - 1, idx)
    close = np.abs(met_ts[nearest] - at) <= NEAR_MS
    if int(close.sum()) < MIN_POINTS:
        return None
    return float(np.mean(np.abs(values[close] - met_v[nearest[close]])))
