"""Reads for the timeline figure: the one place that decides what it draws.

The page's ``timeline.json`` and the postmortem export both draw the figure from
:func:`timeline_figure_data`, so the two cannot disagree about a marker (they once did: the
postmortem drew every harness run without "pass" in its title, lm-eval's scored runs included,
as a failure). ``timeline.charts`` turns the result into Plotly JSON.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace

from django.db.models import Max, Min

from evidence.vocabulary import EventKind, Lane, harness_failed
from timeline import charts, live_config, selectors, shared_cache
from timeline.analysis import change_title, current_analysis, merged_changes
from timeline.choices import FindingKind
from timeline.metrics import remote
from timeline.models import Event, Incident, Note, RemoteSeries, Series
from timeline.verdict import TOP_SUSPECTS_ON_CHARTS
from timeline.versions import incident_version

MAX_PICKED_SERIES = 12
NOTE_TITLE_CHARS = 160


@dataclass(frozen=True)
class TimelineFigure:
    """The figure's plain data, and the series it read (their sizes before downsampling)."""

    data: charts.TimelineData
    points: list[selectors.SeriesPoints]


def trace_name(labels: dict[str, str]) -> str:
    """A trace's labels as ``k=v,...``, leaving out those every sglang series carries."""
    interesting = {k: v for k, v in labels.items() if k not in {"model_name", "__name__"}}
    return ",".join(f"{k}={v}" for k, v in sorted(interesting.items()))


LEGEND_CHARS = 22


def legend_labels(labels: list[dict[str, str]], origins: list[str]) -> list[str]:
    """Short legend entries for the series of one panel (:func:`_legend_labels`), remembered
    per set of series: every window of a panel asks the same question."""
    return list(
        _legend_labels_of(tuple(tuple(sorted(lab.items())) for lab in labels), tuple(origins))
    )


@functools.lru_cache(maxsize=256)
def _legend_labels_of(
    labels: tuple[tuple[tuple[str, str], ...], ...], origins: tuple[str, ...]
) -> tuple[str, ...]:
    return tuple(_legend_labels([dict(lab) for lab in labels], list(origins)))


def _legend_labels(labels: list[dict[str, str]], origins: list[str]) -> list[str]:
    """Short legend entries for the series of one panel: what tells each from the others.

    Labels every series shares are left out; when one label alone tells them all apart, that
    label (the shortest such: ``gpu=3`` rather than a UUID); else the rest, cut to LEGEND_CHARS
    (the hover shows the whole name)."""
    if len(labels) < 2:
        return [""] * len(labels)
    pairs = [
        {k: v for k, v in lab.items() if k not in {"model_name", "__name__"}} for lab in labels
    ]
    common = set.intersection(*(set(p.items()) for p in pairs))
    distinct = sorted(
        (
            k
            for k in set.intersection(*(set(p) for p in pairs))
            if len({p[k] for p in pairs}) == len(pairs)
        ),
        key=lambda k: (max(len(f"{k}={p[k]}") for p in pairs), k),
    )
    rest = [{k: v for k, v in p.items() if (k, v) not in common} for p in pairs]
    if not distinct:
        # Leave out, one at a time, a label that the series having it all share, while the
        # rest still tells every series apart (source=server_log of two server-log series).
        shared = sorted(
            {(k, v) for p in rest for k, v in p.items() if all(q.get(k, v) == v for q in rest)}
        )
        for k, v in shared:
            trial = [{kk: vv for kk, vv in p.items() if (kk, vv) != (k, v)} for p in rest]
            texts = [_pairs_text(p) for p in trial]
            if all(texts) and len(set(texts)) == len(texts):
                rest = trial
    out = []
    for p, r, origin in zip(pairs, rest, origins, strict=True):
        if distinct:
            text = f"{distinct[0]}={p[distinct[0]]}"
        else:
            text = _pairs_text(r) or origin or "series"
        out.append(text if len(text) <= LEGEND_CHARS else text[: LEGEND_CHARS - 1] + "…")
    return out


def _pairs_text(pairs: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(pairs.items()))


SPAN_PADDING = 0.02


def incident_span(incident: Incident) -> tuple[dt.datetime, dt.datetime] | None:
    """From the first to the last thing recorded (events and metric samples), padded a little;
    None for an incident with no data yet."""
    events = Event.objects.filter(incident=incident).aggregate(
        lo=Min("at"), hi=Max("at"), end=Max("ends_at")
    )
    series = Series.objects.filter(incident=incident).aggregate(
        lo=Min("first_ts"), hi=Max("last_ts")
    )
    times = [t for t in (*events.values(), *series.values()) if t is not None]
    if not times:
        return None
    lo, hi = min(times), max(times)
    pad = max((hi - lo) * SPAN_PADDING, dt.timedelta(minutes=1))
    return lo - pad, hi + pad


@dataclass(frozen=True)
class Overlay:
    """What the figure draws that does not depend on the window asked for: the merged config
    changes, the start hovers, notes, the analysis' symptoms and marks, the top suspects, the
    incident's span and its series. Built once per version of the incident (cached in Redis,
    so every worker shares it) instead of six queries per request."""

    changes: list[charts.Marker]
    live: dict[int, str]
    notes: list[charts.Marker]
    symptoms: list[charts.Marker]
    spans: list[tuple[dt.datetime, dt.datetime]]
    found: dict[str, dt.datetime | None]
    suspects: list[charts.SuspectLine]
    rank_of: dict[int, int]
    span: tuple[dt.datetime, dt.datetime] | None
    series: list[Series]
    # Every marker event of the incident when they are few (most incidents), else None and
    # each window queries its own.
    events: list[tuple[charts.Marker, dt.datetime | None]] | None
    # Whether it has remote series (timeline.metrics.remote): they and their servers (URL,
    # secrets) are read fresh per build, never kept in Redis.
    has_remotes: bool

    @functools.cached_property
    def series_by_name(self) -> dict[str, list[Series]]:
        """The series under each name, names sorted: every window asks which of a fleet's
        series its panels hold (~25 us a window for 200 series when filtered each time)."""
        out: dict[str, list[Series]] = {}
        for s in sorted(self.series, key=lambda s: s.name):
            out.setdefault(s.name, []).append(s)
        return out


OVERLAY_CACHE_SECONDS = 3600


# The last few overlays this process used, in front of Redis: a key names one version of one
# incident, so an entry is never stale, and unpickling a fleet's Series rows per request cost
# more than the rest of a small window.
_RECENT: OrderedDict[str, Overlay] = OrderedDict()
RECENT_OVERLAYS = 16
_RECENT_LOCK = threading.Lock()


def overlay(incident: Incident, version: str) -> Overlay:
    """The incident's :class:`Overlay` at ``version`` (timeline.versions.incident_version)."""
    key = f"figure-overlay:v4:{incident.pk}:{version}"
    with _RECENT_LOCK:
        got = _RECENT.get(key)
        if got is not None:
            _RECENT.move_to_end(key)
            return got
    got = shared_cache.cache_get(key)
    if got is None:
        got = _overlay(incident)
        shared_cache.cache_set(key, got, OVERLAY_CACHE_SECONDS)
    with _RECENT_LOCK:
        _RECENT[key] = got
        while len(_RECENT) > RECENT_OVERLAYS:
            _RECENT.popitem(last=False)
    return got


def _overlay(incident: Incident) -> Overlay:
    # Config changes are drawn once per merged change (a doc and a commit recording the same
    # change are one marker, its sources in the hover), as the analysis sees them.
    changes = [
        charts.Marker(
            id=c.ref,
            at=c.at,
            lane=Lane.CONFIG,
            title=charts.plotly_text(change_title(c))
            + "<br>sources: "
            + charts.plotly_text(", ".join(c.sources)),
        )
        for c in merged_changes(incident)
    ]
    # Operators' notes on their own lane; a click opens "n<id>". Escaped, as every title from
    # evidence or users: plotly renders a few HTML tags in hover text.
    notes = [
        charts.Marker(
            id=f"n{pk}", at=at, lane=Lane.NOTES, title=charts.plotly_text(body[:NOTE_TITLE_CHARS])
        )
        for pk, at, body in Note.objects.filter(incident=incident)
        .order_by("at", "id")
        .values_list("id", "at", "body")
    ]
    analysis = current_analysis(incident)
    findings = (
        list(
            analysis.findings.filter(
                kind__in=[FindingKind.SYMPTOM, FindingKind.FIRST_BAD, FindingKind.LAST_GOOD]
            ).order_by("kind", "rank", "id")
        )
        if analysis
        else []
    )
    symptoms, spans = [], []
    for f in findings:
        if f.kind != FindingKind.SYMPTOM or f.at is None:
            continue
        symptoms.append(
            charts.Marker(
                id=f"f{f.pk}", at=f.at, lane=Lane.SYMPTOMS, title=charts.plotly_text(f.title)
            )
        )
        ends = (f.data or {}).get("ends_at")
        if ends:
            spans.append((f.at, dt.datetime.fromisoformat(ends)))
    top = list(
        analysis.findings.filter(
            kind=FindingKind.SUSPECT, rank__lte=TOP_SUSPECTS_ON_CHARTS, at__isnull=False
        ).order_by("rank")
        if analysis
        else []
    )
    return Overlay(
        changes=changes,
        live=live_config.hover_texts(incident),
        notes=notes,
        symptoms=symptoms,
        spans=spans,
        found={f.kind: f.at for f in findings if f.kind != FindingKind.SYMPTOM},
        suspects=[
            charts.SuspectLine(
                rank=f.rank, key=str((f.data or {}).get("key") or f.title), at=f.at, title=f.title
            )
            for f in top
            if f.at is not None
        ],
        # A top suspect's own change marker stands out from the other changes.
        rank_of={f.event_id: f.rank for f in top if f.event_id},
        span=incident_span(incident),
        series=list(Series.objects.filter(incident=incident).order_by("name", "id")),
        events=_event_markers(incident, None, None, limit=OVERLAY_EVENTS),
        has_remotes=RemoteSeries.objects.filter(incident=incident).exists(),
    )


OVERLAY_EVENTS = 3000


def _event_markers(
    incident: Incident,
    start: dt.datetime | None,
    end: dt.datetime | None,
    *,
    limit: int | None = None,
) -> list[tuple[charts.Marker, dt.datetime | None]] | None:
    """The marker events of a window (selectors.timeline_events) with their ends; None when
    ``limit`` is given and there are more than that."""
    if limit is None:
        rows = selectors.timeline_events(incident, start, end)
    else:  # one more than the limit tells "more than that" without reading them all
        rows = selectors.timeline_events(incident, start, end, limit=limit + 1)
        if len(rows) > limit:
            return None
    return [
        (
            charts.Marker(
                id=e["id"],
                at=e["at"],
                lane=e["lane"],
                title=charts.plotly_text(e["title"]),
                failed=e["kind"] == EventKind.HARNESS_RUN and harness_failed(e["status"]),
            ),
            e["ends_at"],
        )
        for e in rows
    ]


def zoom_is_small(
    layer: Overlay, start: dt.datetime | None, end: dt.datetime | None, series: list[str]
) -> bool:
    """Whether a zoom is surely quick to build: its events are the overlay's (no query), no
    remote series, and its panels hold fewer than ZOOM_SMALL_BELOW_ROWS samples in the window.
    (timeline.views.incidents.timeline_data neither asks Redis for such a zoom nor keeps it.)"""
    if start is None or layer.events is None or layer.has_remotes:
        return False
    rows = sum(
        selectors.estimated_rows(s, start, end)
        for name in _panel_names(layer, series)
        for s in layer.series_by_name[name]
    )
    return rows < ZOOM_SMALL_BELOW_ROWS


# ~1M samples take ~0.1 s to read and reduce: well below this, building beats keeping.
ZOOM_SMALL_BELOW_ROWS = 500_000


def _panel_names(layer: Overlay, asked: list[str]) -> list[str]:
    """:func:`picked_panels` of the overlay's series for the ``series`` parameters asked."""
    return picked_panels([n for n in asked if n], list(layer.series_by_name))


def picked_panels(asked: list[str], names: list[str]) -> list[str]:
    """The metric panels to show: those asked for that the incident holds (a choice survives a
    reload), else the usual ones it holds, else its first custom metrics (never an empty chart
    for an incident whose metrics are all custom)."""
    known = set(names)
    # each once: ?series=x&series=x is one panel
    picked = list(dict.fromkeys(n for n in asked if n in known))[:MAX_PICKED_SERIES]
    if picked:
        return picked
    usual = [name for name, _ in selectors.DEFAULT_PANELS if name in known]
    return usual or names[:DEFAULT_CUSTOM_PANELS]


DEFAULT_CUSTOM_PANELS = 4


def timeline_figure_data(
    incident: Incident,
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
    *,
    series: list[str] | None = None,
    max_points: int = selectors.MAX_POINTS_PER_TRACE,
    version: str | None = None,
) -> TimelineFigure:
    """Events, notes and symptom findings on their lanes; the picked metric panels (the default
    ones if none is picked: :func:`picked_panels`) downsampled to ``max_points`` per trace; last
    known good and first bad (an operator's mark, else the current analysis'), all within
    [start, end] when given. ``version``: the incident's, when the caller has it already."""
    layer = overlay(incident, version or incident_version(incident))

    def inside(at: dt.datetime) -> bool:
        return (start is None or at >= start) and (end is None or at <= end)

    # The window's events, as selectors.events_in_window picks them: begun by its end, and
    # begun or still going at its start.
    rows = layer.events
    if rows is None:
        rows = _event_markers(incident, start, end) or []
    else:
        rows = [
            (m, ends)
            for m, ends in rows
            if (start is None or m.at >= start or (ends is not None and ends >= start))
            and (end is None or m.at <= end)
        ]
    markers = [m for m, _ in rows]
    markers.extend(m for m in layer.changes if inside(m.at))
    # Server starts: the hover says what each changed against the start before it.
    markers = [
        dataclasses.replace(m, title=layer.live[m.id])
        if m.lane == Lane.LIVE_CONFIG and isinstance(m.id, int) and m.id in layer.live
        else m
        for m in markers
    ]
    markers.extend(m for m in layer.notes if inside(m.at))
    markers.extend(layer.symptoms)
    markers = [
        replace(m, colour=charts.SUSPECT_COLOUR, title=f"suspect #{layer.rank_of[m.id]}: {m.title}")
        if m.lane == Lane.CONFIG and m.id in layer.rank_of
        else m
        for m in markers
    ]

    titles = dict(selectors.DEFAULT_PANELS)
    order = {name: i for i, name in enumerate(titles)}
    # The usual panels first, in their usual order; any other picked series after them.
    names = sorted(_panel_names(layer, series or []), key=lambda n: (order.get(n, len(order)), n))
    points = selectors.series_downsampled(
        [s for name in names for s in layer.series_by_name[name]],
        start,
        end,
        max_points=max_points,
    )
    panels = []
    for name in names:
        mine = [p for p in points if p.name == name]
        labels = legend_labels([p.labels for p in mine], [p.origin for p in mine])
        traces = [
            charts.Trace(
                # two exporters' unlabelled series differ only by the file they came from
                name=" ".join(filter(None, [trace_name(p.labels) or name, p.origin])),
                ts_ms=p.ts,
                values=p.values,
                label=label,
            )
            for p, label in zip(mine, labels, strict=True)
        ]
        if traces:
            panels.append(charts.Panel(title=titles.get(name, name), traces=traces))
    # Remote series, asked of their servers for this window (timeline.metrics.remote).
    panels = remote.figure_panels(
        incident,
        panels,
        start,
        end,
        span=layer.span,
        titles=titles,
        max_points=max_points,
        remotes=remote.of_incident(incident) if layer.has_remotes else [],
    )
    return TimelineFigure(
        data=charts.TimelineData(
            markers=markers,
            panels=panels,
            first_bad=incident.first_bad_at or layer.found.get(FindingKind.FIRST_BAD),
            last_good=incident.last_good_at or layer.found.get(FindingKind.LAST_GOOD),
            symptom_spans=layer.spans,
            x_range=(start, end) if start and end else layer.span,
            suspects=layer.suspects,
        ),
        points=points,
    )
