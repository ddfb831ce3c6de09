"""Remote series: metrics an incident draws straight from its team's Prometheus-compatible
server (Prometheus, Thanos, Mimir, VictoriaMetrics), never copied into the store.

The timeline (:func:`fetch_window`, :func:`figure_panels`) asks ``query_range`` for the visible
window at a step that gives each trace about ``max_points`` points, and keeps peaks: each step
is asked for both its maximum and its minimum (``max_over_time`` / ``min_over_time`` over the
step, one request for both), drawn as two points, so a one-sample spike in a week-long window
still shows. A selector's step reads the raw samples; an expression's is a subquery at a finer
resolution. The window is quantised to the step and answers are cached in Django's cache, keyed
by data source, query, step and window: briefly for a window that reaches "now" (new samples
arrive), for hours for a window wholly in the past. A server that fails or does not answer
within a few seconds leaves its panel with the server's error and the rest of the figure draws.

The analysis (:func:`engine_series`) asks for the raw samples of the series it reads, for its
window only, in memory: they are handed to the engine exactly like stored series.

The HTTP client is ``ingest.clients.prometheus`` (no Django; the pulls use it too).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import math
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.db.models import Max, Min
from django.db.models.functions import Coalesce
from django.utils import timezone

from ingest.clients.prometheus import (
    SELECTOR,
    PrometheusError,
    Server,
    instant_query,
    public_url,
    query_fetch,
    range_query,
)
from ingest.parsers.series import dcgm_blank, is_dcgm
from timeline import charts, shared_cache
from timeline.correlation.types import Floats, Times
from timeline.correlation.types import Series as EngineSeries
from timeline.models import DataSource, Incident, RemoteSeries

log = logging.getLogger(__name__)

FIGURE_TIMEOUT_S = 4.0  # a page waits at most this long for a server
ANALYSIS_TIMEOUT_S = 60.0  # the analysis runs on a worker: it can wait
NOW_TTL_S = 30  # a window reaching "now": new samples keep arriving
PAST_TTL_S = 6 * 3600  # a window wholly in the past changes only if the server is backfilled
ERROR_TTL_S = 15  # a failing server is asked again this soon, not on every page view
RECENT_S = 300  # samples arrive late by up to a scrape or two: "now" is this wide
MAX_TRACES = 100  # series per remote query drawn; more asks for an aggregation
EXPR_SUBSTEPS = 20  # an expression is evaluated this many times per step (its peaks)
DEFAULT_SCRAPE_S = 15.0  # an expression's resolution for the analysis when none is known
FALLBACK_WINDOW = dt.timedelta(hours=6)  # an incident with nothing to take a window from
PEAK_LABEL = "timeline_peak"
# Steps are rounded up to one of these (then whole days), so that nearby windows share answers.
NICE_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600)
PROBE_RANGE_S = 600
FETCH_THREADS = 4


def server_for(source: DataSource, *, timeout: float = Server.timeout) -> Server:
    """How to reach a data source (its secret goes into the request only)."""
    return Server(
        url=source.url,
        bearer_token=source.bearer_token,
        username=source.username,
        password=source.password,
        timeout=timeout,
    )


def is_selector(query: str) -> bool:
    """A plain series selector (``name{...}``): its raw samples can be asked for."""
    return bool(query.strip() and SELECTOR.match(query))


def selector_name(query: str) -> str:
    """The metric name of a plain series selector, else empty."""
    match = SELECTOR.match(query)
    return (match.group(1) or "") if match and query.strip() else ""


def incident_window(incident: Incident) -> tuple[dt.datetime, dt.datetime] | None:
    """The span of the incident's events and marks, or None when it has neither (the window a
    pull copies and the analysis fetches remote series for)."""
    span = incident.events.aggregate(lo=Min("at"), hi=Max(Coalesce("ends_at", "at")))
    times = [t for t in (span["lo"], span["hi"]) if t is not None]
    times += [t for t in (incident.last_good_at, incident.first_bad_at) if t is not None]
    times += [t for t in (incident.resolved_at,) if t is not None and times]
    if not times:
        return None
    return min(times), max(times)


# --- adding one: ask the server once -----------------------------------------------------------


def probe(server: Server, query: str, *, at: float) -> float:
    """Ask the server once whether ``query`` works at ``at`` (unix seconds); the spacing of its
    samples in seconds when the query is a selector holding data there, else 0 (unknown).

    Raises :class:`PrometheusError` in the server's words about the query as written, or when
    the query answers with something a range query cannot draw (a range of samples, a string)."""
    if is_selector(query):
        try:
            answer = instant_query(
                server, f"max(count_over_time({query.strip()}[{PROBE_RANGE_S}s]))", at
            )
        except PrometheusError as exc:
            if str(exc).startswith("bad_data:"):
                instant_query(server, query, at)  # the error about the user's own text
            raise
        result = (answer.get("data") or {}).get("result") or []
        if isinstance(result, list) and result:
            count = float(result[0].get("value", [0, "0"])[1])
            if count > 1:
                return PROBE_RANGE_S / count
        return 0.0
    answer = instant_query(server, query, at)
    kind = (answer.get("data") or {}).get("resultType")
    if kind not in ("vector", "scalar"):
        raise PrometheusError(
            f"the query answers with a {kind}; a chart needs an instant vector or a scalar "
            "(leave out the [range] at its end)"
        )
    return 0.0


# --- the timeline: a window at a step, peaks kept, cached --------------------------------------


@dataclass(frozen=True)
class Trace:
    labels: dict[str, str]
    ts_ms: np.ndarray  # epoch milliseconds
    values: np.ndarray


@dataclass(frozen=True)
class Fetched:
    """A remote series' answer for a window: its traces, or the server's error."""

    step: float
    traces: list[Trace] = field(default_factory=list)
    error: str = ""
    total: int = 0  # series in the answer (more than MAX_TRACES are not drawn)
    cached: bool = False
    blanks: int = 0  # steps with a peak that was DCGM's "no reading" value (not drawn)


def step_for(start: float, end: float, *, max_points: int, resolution: float = 0.0) -> float:
    """Seconds per step: each step gives two points (its minimum and maximum), so a trace has
    at most ``max_points``; a nice value (nearby windows share answers), never below the data's
    resolution or one second."""
    raw = max(end - start, 1.0) * 2 / max(max_points, 2)
    step = next((float(s) for s in NICE_STEPS_S if s >= raw), 0.0)
    if not step:
        step = math.ceil(raw / 86400) * 86400.0
    return max(step, float(math.ceil(resolution)) if resolution > 0 else 0.0, 1.0)


def peak_query(query: str, step: float, resolution: float = 0.0) -> str:
    """One query for each step's maximum and minimum, told apart by a ``timeline_peak`` label.

    A selector's step covers its raw samples (``max_over_time(sel[step])``); any other
    expression is a subquery evaluated ``EXPR_SUBSTEPS`` times per step (never finer than the
    data or one second)."""
    # A millisecond short of the step: Prometheus 2 includes both ends of a range, and a
    # sample on a step boundary would be counted in two steps.
    s = f"{round(step * 1000) - 1}ms"
    if is_selector(query):
        inner = f"{query.strip()}[{s}]"
    else:
        sub = max(1, math.ceil(resolution), math.ceil(step / EXPR_SUBSTEPS))
        inner = f"({query})[{s}:{sub}s]"
    return (
        f'label_replace(max_over_time({inner}), "{PEAK_LABEL}", "max", "", "")'
        f' or label_replace(min_over_time({inner}), "{PEAK_LABEL}", "min", "", "")'
    )


def quantised(start: float, end: float, step: float) -> tuple[float, float]:
    """The window widened to whole steps (aligned to the epoch)."""
    return math.floor(start / step) * step, math.ceil(end / step) * step


def merge_peaks(result: list[dict[str, Any]], step: float) -> list[Trace]:
    """Each series' per-step maximum and minimum as one line: two points per step (the one
    nearer the next step's level second), one where they are equal; times inside the step."""
    groups: dict[tuple[tuple[str, str], ...], dict[str, dict[float, float]]] = {}
    for item in result:
        metric = dict(item.get("metric") or {})
        which = metric.pop(PEAK_LABEL, "max")
        ident = tuple(sorted(metric.items()))
        points = groups.setdefault(ident, {"max": {}, "min": {}})[which]
        for t, v in item.get("values") or []:
            points[float(t)] = float(v)
    traces = []
    for ident, peaks in groups.items():
        times = np.array(sorted(peaks["max"].keys() | peaks["min"].keys()), dtype=np.float64)
        if not times.size:
            continue
        hi = np.array([peaks["max"].get(t, peaks["min"].get(t, np.nan)) for t in times])
        lo = np.array([peaks["min"].get(t, peaks["max"].get(t, np.nan)) for t in times])
        # The step evaluated at t covers (t - step, t]: the two points sit at its quarters.
        mid = (hi + lo) / 2
        # Heading up to the next step: the minimum first (the last step goes on as it came).
        rising = np.diff(mid) >= 0
        rising = np.append(rising, rising[-1] if rising.size else True)
        first = np.where(rising, lo, hi)
        second = np.where(rising, hi, lo)
        same = (hi == lo) | np.isnan(hi) | np.isnan(lo)
        t1 = np.where(same, times - step / 2, times - step * 3 / 4)
        t2 = times - step / 4
        ts = np.column_stack([t1, t2]).ravel()
        values = np.column_stack([first, second]).ravel()
        keep = np.column_stack([np.ones_like(same), ~same]).ravel()
        traces.append(
            Trace(
                labels={k: v for k, v in ident if k != "__name__"},
                ts_ms=np.round(ts[keep] * 1000).astype(np.int64),
                values=values[keep],
            )
        )
    traces.sort(key=lambda tr: sorted(tr.labels.items()))
    return traces


def drop_dcgm_blanks(result: list[dict[str, Any]]) -> int:
    """Take DCGM's "no reading" values (``ingest.parsers.series.dcgm_blank``) out of a
    ``query_range`` result's points, as an ingested file's are; returns how many.

    A step's ``max_over_time`` is such a value whenever one sample in the step is: the step is
    then drawn from its minimum alone."""
    dropped = 0
    for item in result:
        points = item.get("values") or []
        kept = [p for p in points if not dcgm_blank(float(p[1]))]
        if len(kept) < len(points):
            dropped += len(points) - len(kept)
            item["values"] = kept
    return dropped


def _blank_steps(result: list[dict[str, Any]]) -> int:
    """The steps of a peak query's answer whose maximum or minimum is a DCGM blank."""
    return len(
        {
            (
                tuple(
                    sorted((k, v) for k, v in (item.get("metric") or {}).items() if k != PEAK_LABEL)
                ),
                t,
            )
            for item in result
            for t, v in item.get("values") or []
            if dcgm_blank(float(v))
        }
    )


def _is_dcgm_remote(remote: RemoteSeries) -> bool:
    return is_dcgm(remote.name or selector_name(remote.query))


def _cache_key(remote: RemoteSeries, step: float, lo: float, hi: float) -> str:
    # The server's address and credentials too: a token rotated or a basic-auth user changed
    # (a multi-tenant server picks the tenant by it) must not be answered from the old ones.
    source = remote.source
    who = hashlib.sha256(
        "\0".join([source.url, source.username, source.password, source.bearer_token]).encode()
    ).hexdigest()
    # (its name too: it decides whether DCGM's blank values are taken out)
    raw = "|".join(
        [str(remote.source_id), who, remote.query, remote.name, f"{step:g}", f"{lo:g}", f"{hi:g}"]
    )
    return f"remote_series:v2:{hashlib.sha256(raw.encode()).hexdigest()}"


def _ask(
    server: Server, query: str, lo: float, hi: float, step: float, res: float, dcgm: bool
) -> Fetched:
    """The HTTP part (no Django: it runs on a thread of its own)."""
    try:
        answer = range_query(server, peak_query(query, step, res), start=lo, end=hi, step=step)
        data = answer.get("data") or {}
        if data.get("resultType") != "matrix":
            raise PrometheusError(f"expected series (matrix), got {data.get('resultType')!r}")
        result = list(data.get("result") or [])
        blanks = _blank_steps(result) if dcgm else 0
        if blanks:
            drop_dcgm_blanks(result)
        traces = merge_peaks(result, step)
    except PrometheusError as exc:
        return Fetched(step=step, error=str(exc))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return Fetched(step=step, error=f"unexpected answer: {exc}")
    return Fetched(step=step, traces=traces[:MAX_TRACES], total=len(traces), blanks=blanks)


def fetch_window(
    remotes: Sequence[RemoteSeries],
    start: dt.datetime,
    end: dt.datetime,
    *,
    max_points: int,
    timeout: float = FIGURE_TIMEOUT_S,
) -> list[Fetched]:
    """Each remote series over [start, end] at about ``max_points`` points per trace, from the
    cache when it holds the answer, else from its server (several at once)."""
    now = timezone.now().timestamp()
    plans = []
    for remote in remotes:
        step = step_for(
            start.timestamp(),
            end.timestamp(),
            max_points=max_points,
            resolution=remote.resolution_s,
        )
        lo, hi = quantised(start.timestamp(), end.timestamp(), step)
        plans.append((remote, step, lo, hi, _cache_key(remote, step, lo, hi)))
    found: dict[str, Fetched] = shared_cache.cache_get_many([p[4] for p in plans]) if plans else {}
    missing = [p for p in plans if p[4] not in found]
    if missing:
        asks = [
            (
                server_for(r.source, timeout=timeout),
                r.query,
                lo,
                hi,
                step,
                r.resolution_s,
                _is_dcgm_remote(r),
            )
            for r, step, lo, hi, _key in missing
        ]
        with ThreadPoolExecutor(max_workers=min(FETCH_THREADS, len(missing))) as pool:
            answers = list(pool.map(lambda ask: _ask(*ask), asks))
        for (remote, step, _lo, hi, key), fetched in zip(missing, answers, strict=True):
            if fetched.error:
                log.warning(
                    "remote series %s from %s: %s",
                    remote.pk,
                    public_url(remote.source.url),
                    fetched.error,
                )
                ttl = ERROR_TTL_S
            else:
                ttl = NOW_TTL_S if hi >= now - max(RECENT_S, 2 * step) else PAST_TTL_S
            shared_cache.cache_set(key, fetched, ttl)
            found[key] = fetched
    asked = {p[4] for p in missing}
    return [replace(found[key], cached=key not in asked) for *_, key in plans]


def of_incident(incident: Incident) -> list[RemoteSeries]:
    """The incident's remote series with their servers, for figure_panels and figure_token."""
    return list(
        RemoteSeries.objects.filter(incident=incident).select_related("source").order_by("id")
    )


def figure_token(has_remotes: bool) -> str:
    """What a cached figure of an incident must also be keyed by: empty when it has no remote
    series, else the current NOW_TTL_S period (their answers for a window reaching "now", and
    a failed server's error, are good for about that long; the rest comes from this module's
    cache when the figure is built again)."""
    if not has_remotes:
        return ""
    return f"remote:{int(timezone.now().timestamp() // NOW_TTL_S)}"


def figure_panels(
    incident: Incident,
    panels: list[charts.Panel],
    start: dt.datetime | None,
    end: dt.datetime | None,
    *,
    span: tuple[dt.datetime, dt.datetime] | None,
    titles: dict[str, str],
    max_points: int,
    remotes: list[RemoteSeries],
) -> list[charts.Panel]:
    """``panels`` with the incident's remote series drawn in: on the panel of their metric when
    the figure has it (``titles`` names the usual ones), else on a panel of their own (one per
    title). A series whose server failed shows the server's words on its panel instead.
    ``remotes``: the incident's (:func:`of_incident`, kept in the figure's overlay).

    The window is [start, end]; a missing end is taken from ``span`` (the figure's own span of
    the incident), else from its marks, else it is the last few hours."""
    if not remotes:
        return panels
    now = timezone.now()
    whole = span or incident_window(incident) if start is None or end is None else None
    lo = start or (whole[0] if whole else now - FALLBACK_WINDOW)
    hi = end or (whole[1] if whole else now)
    if hi <= lo:
        hi = lo + dt.timedelta(seconds=1)
    fetched = fetch_window(remotes, lo, hi, max_points=max_points)
    out = list(panels)
    for remote, answer in zip(remotes, fetched, strict=True):
        title = remote.title or titles.get(remote.name, remote.name) or remote.query[:80]
        traces = [
            charts.Trace(
                name=" ".join(filter(None, [_labels_text(t.labels), f"({remote.source.name})"])),
                ts_ms=t.ts_ms,
                values=t.values,
                label=_labels_text(t.labels)[:21] or remote.source.name[:21],
            )
            for t in answer.traces
        ]
        message = _message(remote, answer)
        at = next((i for i, p in enumerate(out) if p.title == title), None)
        if at is None:
            out.append(charts.Panel(title=title, traces=traces, message=message))
        else:
            panel = out[at]
            joined = "; ".join(filter(None, [panel.message, message]))
            out[at] = charts.Panel(title=title, traces=panel.traces + traces, message=joined)
    # Plotly draws no axes for a panel without a trace: an empty one keeps its message in place.
    return [
        p
        if p.traces
        else charts.Panel(
            title=p.title,
            traces=[charts.Trace(name=p.title, ts_ms=np.zeros(0, np.int64), values=np.zeros(0))],
            message=p.message,
        )
        for p in out
    ]


def _labels_text(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k != "model_name")


def _message(remote: RemoteSeries, answer: Fetched) -> str:
    """Plain text for the panel (charts escapes it)."""
    where = f"{remote.source.name}, {remote.query[:120]}"
    if answer.error:
        return f"{where}: {answer.error}"[:600]
    if answer.total > MAX_TRACES:
        return (
            f"{where}: showing {MAX_TRACES} of {answer.total} series; "
            "aggregate the query (e.g. max by (job) (...)) to see them all"
        )
    if not answer.traces:
        return f"{where}: no samples in this window"
    if answer.blanks:
        return (
            f"{where}: {answer.blanks} steps held DCGM's 'blank / not supported' value, not a "
            "reading; it is not drawn"
        )
    return ""


# --- the analysis: raw samples of the series it reads, for its window --------------------------


def engine_series(
    incident: Incident, names: Iterable[str], *, timeout: float = ANALYSIS_TIMEOUT_S
) -> tuple[tuple[EngineSeries, ...], tuple[str, ...]]:
    """The raw samples of the incident's remote series named one of ``names`` over the
    incident's window, as the engine's series (never stored), and a warning for each that could
    not be fetched."""
    remotes = list(
        RemoteSeries.objects.filter(incident=incident, name__in=list(names)).select_related(
            "source"
        )
    )
    if not remotes:
        return (), ()
    window = incident_window(incident)
    if window is None:
        return (), (
            "remote series were not fetched: the incident has no events or marks to take a "
            "window from",
        )
    start, end = (t.timestamp() for t in window)
    out: list[EngineSeries] = []
    warnings: list[str] = []
    for remote in remotes:
        origin = public_url(remote.source.url)
        blanks = 0
        try:
            document = query_fetch(
                server_for(remote.source, timeout=timeout),
                remote.query,
                start=start,
                end=end,
                step=remote.resolution_s or DEFAULT_SCRAPE_S,
                origin=origin,
            )
        except PrometheusError as exc:
            log.warning("remote series %s from %s: %s", remote.pk, origin, exc)
            warnings.append(
                f"remote series {remote.name} ({remote.source.name}: {remote.query}) could not "
                f"be fetched, so the analysis went without it: {exc}"
            )
            continue
        for item in document["data"]["result"]:
            metric = dict(item["metric"])
            name = metric.pop("__name__", "") or remote.name
            if is_dcgm(name):
                blanks += drop_dcgm_blanks([item])
            points = item["values"]
            # As columns, the way stored series reach the engine (timeline.analysis): no
            # datetime per sample.
            out.append(
                EngineSeries(
                    name=name,
                    labels=tuple(sorted((str(k), str(v)) for k, v in metric.items())),
                    ts=Times(np.array([round(float(t) * 1000) for t, _ in points], dtype=np.int64)),
                    values=Floats(np.array([float(v) for _, v in points], dtype=np.float64)),
                )
            )
        if blanks:
            warnings.append(
                f"remote series {remote.name} ({remote.source.name}: {remote.query}): {blanks} "
                "samples held DCGM's 'blank / not supported' value, not a reading, and were "
                "left out"
            )
    return tuple(out), tuple(warnings)
