"""Reads for the timeline figure: the one place that decides what it draws.

The page's ``timeline.json`` and the postmortem export both draw the figure from
:func:`timeline_figure_data`, so the two cannot disagree about a marker (they once did: the
postmortem drew every harness run without "pass" in its title, lm-eval's scored runs included,
as a failure). ``timeline.charts`` turns the result into Plotly JSON.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, replace

from django.db.models import Max, Min

from evidence.vocabulary import EventKind, Lane, harness_failed
from timeline import charts, live_config, selectors
from timeline.analysis import change_title, current_analysis, merged_changes
from timeline.choices import FindingKind
from timeline.metrics import remote
from timeline.models import Event, Incident, Note, Series
from timeline.verdict import TOP_SUSPECTS_ON_CHARTS

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


def timeline_figure_data(
    incident: Incident,
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
    *,
    series: list[str] | None = None,
    max_points: int = selectors.MAX_POINTS_PER_TRACE,
) -> TimelineFigure:
    """Events, notes and symptom findings on their lanes; the picked metric panels (the default
    ones if none is picked) downsampled to ``max_points`` per trace; last known good and first bad
    (an operator's mark, else the current analysis'), all within [start, end] when given."""
    # Config changes are drawn once per merged change (a doc and a commit recording the same
    # change are one marker, its sources in the hover), as the analysis sees them.
    markers = [
        charts.Marker(
            id=e["id"],
            at=e["at"],
            lane=e["lane"],
            title=charts.plotly_text(e["title"]),
            failed=e["kind"] == EventKind.HARNESS_RUN and harness_failed(e["status"]),
        )
        for e in selectors.timeline_events(incident, start, end)
    ]
    markers.extend(
        charts.Marker(
            id=c.ref,
            at=c.at,
            lane=Lane.CONFIG,
            title=charts.plotly_text(change_title(c))
            + "<br>sources: "
            + charts.plotly_text(", ".join(c.sources)),
        )
        for c in merged_changes(incident)
        if (start is None or c.at >= start) and (end is None or c.at <= end)
    )
    # Server starts: the hover says what each changed against the start before it.
    if any(m.lane == Lane.LIVE_CONFIG for m in markers):
        live = live_config.hover_texts(incident)
        markers = [
            dataclasses.replace(m, title=live[m.id])
            if m.lane == Lane.LIVE_CONFIG and isinstance(m.id, int) and m.id in live
            else m
            for m in markers
        ]
    # Operators' notes on their own lane; a click opens "n<id>". Escaped, as every title from
    # evidence or users: plotly renders a few HTML tags in hover text.
    notes = Note.objects.filter(incident=incident)
    if start is not None:
        notes = notes.filter(at__gte=start)
    if end is not None:
        notes = notes.filter(at__lte=end)
    markers.extend(
        charts.Marker(
            id=f"n{pk}", at=at, lane=Lane.NOTES, title=charts.plotly_text(body[:NOTE_TITLE_CHARS])
        )
        for pk, at, body in notes.order_by("at", "id").values_list("id", "at", "body")
    )

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
    spans = []
    for f in findings:
        if f.kind != FindingKind.SYMPTOM or f.at is None:
            continue
        markers.append(
            charts.Marker(
                id=f"f{f.pk}", at=f.at, lane=Lane.SYMPTOMS, title=charts.plotly_text(f.title)
            )
        )
        ends = (f.data or {}).get("ends_at")
        if ends:
            spans.append((f.at, dt.datetime.fromisoformat(ends)))
    found = {f.kind: f.at for f in findings if f.kind != FindingKind.SYMPTOM}
    top = list(
        analysis.findings.filter(
            kind=FindingKind.SUSPECT, rank__lte=TOP_SUSPECTS_ON_CHARTS, at__isnull=False
        ).order_by("rank")
        if analysis
        else []
    )
    suspects = [
        charts.SuspectLine(
            rank=f.rank, key=str((f.data or {}).get("key") or f.title), at=f.at, title=f.title
        )
        for f in top
        if f.at is not None
    ]
    # A top suspect's own change marker stands out from the other changes.
    rank_of = {f.event_id: f.rank for f in top if f.event_id}
    markers = [
        replace(m, colour=charts.SUSPECT_COLOUR, title=f"suspect #{rank_of[m.id]}: {m.title}")
        if m.lane == Lane.CONFIG and m.id in rank_of
        else m
        for m in markers
    ]

    titles = dict(selectors.DEFAULT_PANELS)
    order = {name: i for i, name in enumerate(titles)}
    # The usual panels first, in their usual order; any other picked series after them.
    picked = [name for name in series or [] if name][:MAX_PICKED_SERIES]
    names = sorted(picked or list(titles), key=lambda n: (order.get(n, len(order)), n))
    points = selectors.series_downsampled(
        selectors.series_for_panels(incident, names), start, end, max_points=max_points
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
        incident, panels, start, end, span=incident_span, titles=titles, max_points=max_points
    )
    return TimelineFigure(
        data=charts.TimelineData(
            markers=markers,
            panels=panels,
            first_bad=incident.first_bad_at or found.get(FindingKind.FIRST_BAD),
            last_good=incident.last_good_at or found.get(FindingKind.LAST_GOOD),
            symptom_spans=spans,
            x_range=(start, end) if start and end else incident_span(incident),
            suspects=suspects,
        ),
        points=points,
    )
