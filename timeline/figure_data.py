"""Reads for the timeline figure: the one place that decides what it draws.

The page's ``timeline.json`` and the postmortem export both draw the figure from
:func:`timeline_figure_data`, so the two cannot disagree about a marker (they once did: the
postmortem drew every harness run without "pass" in its title, lm-eval's scored runs included,
as a failure). ``timeline.charts`` turns the result into Plotly JSON.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from evidence.vocabulary import EventKind, Lane, harness_failed
from timeline import charts, selectors
from timeline.analysis import current_analysis
from timeline.choices import FindingKind
from timeline.models import Incident, Note

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
    markers = [
        charts.Marker(
            id=e["id"],
            at=e["at"],
            lane=e["lane"],
            title=e["title"],
            failed=e["kind"] == EventKind.HARNESS_RUN and harness_failed(e["status"]),
        )
        for e in selectors.timeline_events(incident, start, end)
    ]
    # Operators' notes on their own lane; a click opens "n<id>". charts escapes every title.
    notes = Note.objects.filter(incident=incident)
    if start is not None:
        notes = notes.filter(at__gte=start)
    if end is not None:
        notes = notes.filter(at__lte=end)
    markers.extend(
        charts.Marker(id=f"n{pk}", at=at, lane=Lane.NOTES, title=body[:NOTE_TITLE_CHARS])
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
        markers.append(charts.Marker(id=f"f{f.pk}", at=f.at, lane=Lane.SYMPTOMS, title=f.title))
        ends = (f.data or {}).get("ends_at")
        if ends:
            spans.append((f.at, dt.datetime.fromisoformat(ends)))
    found = {f.kind: f.at for f in findings if f.kind != FindingKind.SYMPTOM}

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
        traces = [
            charts.Trace(
                # two exporters' unlabelled series differ only by the file they came from
                name=" ".join(filter(None, [trace_name(p.labels) or name, p.origin])),
                ts_ms=p.ts,
                values=p.values,
            )
            for p in points
            if p.name == name
        ]
        if traces:
            panels.append(charts.Panel(title=titles.get(name, name), traces=traces))
    return TimelineFigure(
        data=charts.TimelineData(
            markers=markers,
            panels=panels,
            first_bad=incident.first_bad_at or found.get(FindingKind.FIRST_BAD),
            last_good=incident.last_good_at or found.get(FindingKind.LAST_GOOD),
            symptom_spans=spans,
            x_range=(start, end) if start and end else None,
        ),
        points=points,
    )
