"""Reads: team-scoped incident lookups, events in a window, downsampled series."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db.models import Prefetch, Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from tsdownsample import MinMaxLTTBDownsampler

from evidence.vocabulary import EventKind, Lane
from timeline import shared_cache
from timeline.analysis import current_analysis
from timeline.choices import FindingKind
from timeline.metrics import reader
from timeline.models import Event, Evidence, Hypothesis, HypothesisStatusChange, Incident, Series

# The panels shown without asking, in order; any other series can be picked.
DEFAULT_PANELS: tuple[tuple[str, str], ...] = (
    ("sglang:num_running_reqs", "Running requests"),
    ("sglang:num_queue_reqs", "Queued requests"),
    ("sglang:gen_throughput", "Generation throughput (tok/s)"),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilisation (%)"),
)
MAX_POINTS_PER_TRACE = 1500
MAX_EVENTS_PER_LANE = 3000


def events_in_window(
    incident: Incident,
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
    *,
    lanes: list[str] | None = None,
    kinds: list[str] | None = None,
    search: str = "",
) -> QuerySet[Event]:
    """The incident's events, filtered. The Symptoms lane holds what the analysis found
    (dropped requests, wedges, failed harness runs...), not stored events: filtering by it
    brings the events those findings point at. A search matches words of the title and body,
    a part of the title, a request id, or the title of a symptom found in the event."""
    qs = Event.objects.filter(incident=incident)
    if start is not None:
        qs = qs.filter(Q(at__gte=start) | Q(ends_at__gte=start))
    if end is not None:
        qs = qs.filter(at__lte=end)
    if lanes:
        lane_q = Q(lane__in=lanes)
        if Lane.SYMPTOMS in lanes:
            lane_q |= Q(pk__in=symptom_event_ids(incident))
        qs = qs.filter(lane_q)
    if kinds:
        qs = qs.filter(kind__in=kinds)
    if search:
        # Same expression as the event_fulltext GIN index.
        matches = (
            Q(search=SearchQuery(search, config="english", search_type="websearch"))
            | Q(title__icontains=search)
            | Q(rid=search)
            | Q(pk__in=symptom_event_ids(incident, title_contains=search))
        )
        qs = qs.annotate(
            search=SearchVector("title", "body", config="english"),
            rid=KeyTextTransform("rid", "attrs"),
        ).filter(matches)
    return qs.order_by("at", "id")


def symptom_event_ids(incident: Incident, *, title_contains: str = "") -> set[int]:
    """Events the current analysis flags as symptoms (optionally only symptoms whose title
    holds some text, e.g. "timeout")."""
    analysis = current_analysis(incident)
    if analysis is None:
        return set()
    findings = analysis.findings.filter(kind=FindingKind.SYMPTOM)
    if title_contains:
        findings = findings.filter(title__icontains=title_contains)
    ids: set[int] = set()
    for event_id, data in findings.values_list("event_id", "data"):
        if event_id:
            ids.add(event_id)
        ids.update(int(r) for r in (data or {}).get("refs") or [] if isinstance(r, int))
    return ids


def timeline_events(
    incident: Incident,
    start: dt.datetime | None,
    end: dt.datetime | None,
    *,
    limit: int = MAX_EVENTS_PER_LANE * 8,
) -> list[dict[str, Any]]:
    """Events for the chart's lanes (at most ``limit``): requests only when they never finished
    (the symptoms); log spans are context, not markers; config changes are drawn once per
    merged change (figure_data), not per recording event."""
    qs = events_in_window(incident, start, end).exclude(
        kind__in=[EventKind.LOG_SPAN, EventKind.CONFIG_CHANGE]
    )
    qs = qs.exclude(kind=EventKind.REQUEST, ends_at__isnull=False)
    return [
        dict(row)
        for row in qs.values(
            "id",
            "at",
            "ends_at",
            "kind",
            "lane",
            "title",
            status=KeyTextTransform("status", "attrs"),
        )[:limit]
    ]


@dataclass(frozen=True)
class SeriesPoints:
    series_id: int
    name: str
    labels: dict[str, str]
    ts: np.ndarray  # epoch milliseconds
    values: np.ndarray
    total: int  # points in the window before downsampling
    origin: str = ""  # the file, for a series whose labels do not say where it came from


def series_for_panels(incident: Incident, names: list[str]) -> list[Series]:
    return list(Series.objects.filter(incident=incident, name__in=names).order_by("name", "id"))


def series_downsampled(
    series: list[Series],
    start: dt.datetime | None,
    end: dt.datetime | None,
    *,
    max_points: int = MAX_POINTS_PER_TRACE,
) -> list[SeriesPoints]:
    """Each series' samples in the window, reduced to at most ``max_points`` by MinMaxLTTB
    (keeps spikes and dips that plain striding would drop).

    The window's rows come back packed: one row per series whose timestamps and values the
    server concatenates into two binary strings, read by numpy with no Python object per sample
    (a day of one-second samples on the default panels is ~8M rows). The reduced points are
    cached per state of the series (their sample counts and last times) for the whole span,
    which every viewer opens and each new note or analysis redraws; loading more samples into
    a series changes the key. Zooms are not: their windows rarely repeat, and the built
    figure of one that was slow is kept by timeline.views.incidents.timeline_data."""
    if not series:
        return []
    whole = start is None and end is None
    key = _downsample_cache_key(series, start, end, max_points) if whole else ""
    cached = shared_cache.cache_get(key) if whole else None
    if cached is None:
        cached = _downsample(series, start, end, max_points)
        if whole and sum(total for *_, total in cached) >= DOWNSAMPLE_CACHE_MIN_ROWS:
            shared_cache.cache_set(key, cached, DOWNSAMPLE_CACHE_SECONDS)
    by_id = {s.pk: s for s in series}
    return [
        SeriesPoints(
            series_id=sid,
            name=by_id[sid].name,
            labels=dict(by_id[sid].labels or {}),
            ts=ts,
            values=values,
            total=total,
            origin=by_id[sid].origin,
        )
        for sid, ts, values, total in cached
        if sid in by_id
    ]


DOWNSAMPLE_CACHE_SECONDS = 600
DOWNSAMPLE_CACHE_MIN_ROWS = 200_000  # smaller windows are read again (~0.1 s)


def _downsample_cache_key(
    series: list[Series], start: dt.datetime | None, end: dt.datetime | None, max_points: int
) -> str:
    state = ",".join(
        f"{s.pk}:{s.sample_count}:{s.last_ts.timestamp() if s.last_ts else ''}"
        for s in sorted(series, key=lambda s: s.pk)
    )
    window = f"{start.timestamp() if start else ''}-{end.timestamp() if end else ''}"
    digest = hashlib.sha256(f"{state}|{window}|{max_points}".encode()).hexdigest()
    return f"series_downsampled:v2:{digest}"


# A series whose window holds more samples than this is drawn from its per-minute rollups.
ROLLUP_ABOVE_ROWS = 20_000


def estimated_rows(s: Series, start: dt.datetime | None, end: dt.datetime | None) -> float:
    """Samples of the series inside the window, assuming they are spread evenly."""
    if not s.sample_count or s.first_ts is None or s.last_ts is None:
        return 0.0
    span = (s.last_ts - s.first_ts).total_seconds()
    lo = max(s.first_ts, start) if start else s.first_ts
    hi = min(s.last_ts, end) if end else s.last_ts
    if hi < lo:
        return 0.0
    return s.sample_count * ((hi - lo).total_seconds() / span if span > 0 else 1.0)


def _downsample(
    series: list[Series], start: dt.datetime | None, end: dt.datetime | None, max_points: int
) -> list[tuple[int, np.ndarray, np.ndarray, int]]:
    """(series id, epoch-ms times, values, samples in the window) per series with samples.

    Big windows read the per-minute rollups (min and max at the times they occurred: the
    shape survives); windows that fit read the samples themselves, at full detail."""
    big = [s for s in series if estimated_rows(s, start, end) > ROLLUP_ABOVE_ROWS]
    columns = reader.rollups_window(big, start, end)  # series without rollups are read raw
    rolled = set(columns)
    # The rest through the process's chunk indexes and recently decoded chunks: zooms and pans
    # reread the same hours, and a window whose hours were read before costs no query.
    columns.update(
        (sid, (ts, values, len(ts)))
        for sid, (ts, values) in reader.samples_window(
            [s for s in series if s.pk not in columns], start, end
        ).items()
    )
    out = []
    for s in sorted(series, key=lambda s: s.pk):
        if s.pk not in columns:
            continue
        ts, values, total = columns[s.pk]
        # Samples come in time order (chunks are stored sorted, hour after hour); rollups'
        # minima and maxima are checked (reader.rollups_read).
        if s.pk in rolled and ts.size > 1 and not (ts[1:] >= ts[:-1]).all():
            order = np.argsort(ts, kind="stable")
            ts, values = ts[order], values[order]
        if len(ts) > max_points:
            finite = (
                values
                if np.isfinite(values).all()
                else np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
            )
            idx = minmax_lttb(np.ascontiguousarray(ts, dtype=np.int64), finite, max_points)
            # (Indices as intp: numpy indexes with tsdownsample's uint64 ones at half the speed.)
            idx = idx.astype(np.intp, copy=False)
            ts, values = ts[idx], values[idx]
        out.append((s.pk, np.ascontiguousarray(ts), np.ascontiguousarray(values), total))
    return out


def _rust_minmax_lttb() -> Any:
    """tsdownsample's compiled MinMaxLTTB for int64 times and float64 values, or None if this
    version of it does not have it where 0.1.5 does."""
    try:
        from tsdownsample.downsamplers import _tsdownsample_rs  # type: ignore[attr-defined]

        return _tsdownsample_rs.minmaxlttb.sequential.downsample_i64_f64
    except (ImportError, AttributeError):
        return None


_MINMAX_LTTB = _rust_minmax_lttb()
MINMAX_RATIO = 4  # tsdownsample's default: min-max preselection of 4 points per LTTB bucket


def minmax_lttb(ts: np.ndarray, values: np.ndarray, n_out: int) -> np.ndarray:
    """Indices of the ``n_out`` points MinMaxLTTB keeps. The compiled function directly when
    the arrays are int64 and float64 (a window of 88 series: its Python argument checks cost
    ~0.15 ms a call, more than the downsampling), tsdownsample's public API otherwise; both
    give the same indices (tests/metrics/test_downsample.py)."""
    if _MINMAX_LTTB is not None and ts.dtype == np.int64 and values.dtype == np.float64:
        return np.asarray(
            _MINMAX_LTTB(
                np.ascontiguousarray(ts), np.ascontiguousarray(values), n_out, MINMAX_RATIO
            )
        )
    downsampler = MinMaxLTTBDownsampler()  # type: ignore[no-untyped-call]
    return np.asarray(downsampler.downsample(ts, values, n_out=n_out, minmax_ratio=MINMAX_RATIO))


def series_names(incident: Incident) -> list[str]:
    """Distinct metric names of the incident, for the panel picker."""
    return list(
        Series.objects.filter(incident=incident)
        .order_by("name")
        .values_list("name", flat=True)
        .distinct()
    )


def hypotheses_for(incident: Incident) -> list[Hypothesis]:
    """The incident's hypotheses with their evidence and status history, oldest first, in
    three queries whatever their number (the board, the panel and the postmortem read these)."""
    return list(
        Hypothesis.objects.filter(incident=incident)
        .select_related("author")
        .prefetch_related(
            Prefetch(
                "evidence",
                queryset=Evidence.objects.select_related(
                    "event", "finding", "finding__analysis", "author"
                ).order_by("created_at", "id"),
            ),
            Prefetch(
                "status_changes",
                queryset=HypothesisStatusChange.objects.select_related("actor").order_by(
                    "at", "id"
                ),
            ),
        )
        .order_by("created_at", "id")
    )
