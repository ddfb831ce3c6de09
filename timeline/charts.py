"""Plotly figures from plain data. Knows nothing of requests or the database.

Plotly renders a subset of HTML (links, bold, italics, line breaks) in hover text, trace
names, titles and annotations, and fills ``%{...}`` in hover templates: every string that comes
from evidence or users shows through :func:`plotly_text` as the text it is. A marker's title is
Plotly HTML made by its producer (timeline.figure_data escapes each part it takes from events,
notes and findings, and may join parts with ``<br>``); trace names, legend labels and panel
titles are plain text, escaped here.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import textwrap
from dataclasses import dataclass, field
from html import escape
from typing import Any

import numpy as np
import orjson
import plotly.io as pio
import pybase64

from evidence.vocabulary import LANES, Lane


@dataclass(frozen=True)
class Trace:
    name: str
    ts_ms: np.ndarray
    values: np.ndarray
    label: str = ""  # short, for the panel's legend (what tells it from its neighbours)


LEGEND_MARGIN = 150  # px right of the panels for their legends
LEGEND_ROW_PX = 19  # one legend entry at font size 10
PANEL_PX = 170  # a metric panel's height, unless its legend needs more


@dataclass(frozen=True)
class Panel:
    title: str
    traces: list[Trace]
    message: str = ""  # plain text shown on the panel (a remote server's error)


@dataclass(frozen=True)
class Marker:
    """An event on a lane; ``id`` is what a click opens."""

    id: int | str
    at: dt.datetime
    lane: str
    title: str
    failed: bool = False
    colour: str = ""  # instead of the lane's (a top suspect's change)


@dataclass(frozen=True)
class SuspectLine:
    """A ranked suspect, drawn as a labelled vertical line at the moment it took effect."""

    rank: int
    key: str
    at: dt.datetime
    title: str


@dataclass(frozen=True)
class TimelineData:
    markers: list[Marker]
    panels: list[Panel]
    last_good: dt.datetime | None = None
    first_bad: dt.datetime | None = None
    symptom_spans: list[tuple[dt.datetime, dt.datetime]] = field(default_factory=list)
    x_range: tuple[dt.datetime, dt.datetime] | None = None
    suspects: list[SuspectLine] = field(default_factory=list)


NO_DATA = "No data yet: upload evidence (logs, metrics, docs, harness results) to see it here"
SUSPECT_COLOUR = "#7c3aed"
SUSPECT_LABEL_RISE = 36  # px above the plot: clear of the "Events" title


def plotly_text(value: str) -> str:
    """Text Plotly shows as written: its HTML characters and template marks as entities."""
    return (
        value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("%", "&#37;")
    )


def figure_json(fig: dict[str, Any]) -> str:
    """JSON for Plotly.js: numpy arrays as plain numbers (NaN as null), datetimes as ISO 8601."""
    return figure_json_bytes(fig).decode()


def figure_json_bytes(fig: dict[str, Any]) -> bytes:
    """:func:`figure_json` as UTF-8 bytes, for a response body (no 3 MB string copies)."""
    return orjson.dumps(fig, option=orjson.OPT_SERIALIZE_NUMPY, default=_plain)


def typed_array(values: np.ndarray) -> dict[str, str]:
    """A numeric array as Plotly.js's typed-array spec (float64 bytes in base64, decoded by
    plotly.js into a Float64Array): 1,500 points cost the same bytes as JSON numbers but no
    number formatting on either side (formatting was the largest part of a zoom's build). Times
    on date axes go as float64 ms since the epoch, exact to the ms for any date; NaN is a gap,
    as null was."""
    data = np.ascontiguousarray(values, dtype="<f8")
    # pybase64: SIMD base64, 10x the standard library's (2 ms less per zoom of 88 series).
    return {"dtype": "f8", "bdata": pybase64.b64encode_as_string(data.tobytes())}


def from_typed_array(spec: Any) -> list[float]:
    """The numbers of :func:`typed_array`'s spec (or of a plain list), for readers in Python."""
    if isinstance(spec, dict) and "bdata" in spec:
        return [float(v) for v in np.frombuffer(base64.b64decode(spec["bdata"]), dtype="<f8")]
    return list(spec)


def _plain(value: Any) -> Any:
    """What orjson leaves to us: strided numpy arrays and numpy scalars."""
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value).tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


VERTICAL_SPACING = 0.035  # between the stacked charts, as a share of the figure's height


@functools.cache
def _template() -> dict[str, Any]:
    """Plotly's "plotly_white" template as plain data, built once per process."""
    return dict(pio.templates["plotly_white"].to_plotly_json())


def warm() -> None:
    """Build what the first figure of a process would (timeline.wsgi, before the fork)."""
    _template()


def _domains(heights: list[float]) -> list[list[float]]:
    """Each stacked chart's vertical share of the figure, top first, the charts
    ``VERTICAL_SPACING`` apart (what plotly's make_subplots gives for one column)."""
    usable = 1 - VERTICAL_SPACING * (len(heights) - 1)
    out = []
    y = 0.0
    for share in reversed(heights):
        top = y + share * usable
        out.append([y, top])
        y = top + VERTICAL_SPACING
    return out[::-1]


def timeline_figure(data: TimelineData) -> dict[str, Any]:
    """Lanes of events on top, metric panels below, one shared time axis; markers for last known
    good and first bad, and the suspect window between them shaded on every panel.

    Built as plain dicts for Plotly.js: plotly's Python figure objects validate every property
    and cost several times the rest of a request (issue 17)."""
    rows = 1 + len(data.panels)
    # The lanes keep their old share; a panel grows past PANEL_PX when its legend needs it.
    lanes_px = 0.34 * (260 + PANEL_PX * len(data.panels))
    panels_px = [max(PANEL_PX, LEGEND_ROW_PX * len(p.traces) + 70) for p in data.panels]
    total_px = lanes_px + sum(panels_px)
    domains = _domains([lanes_px / total_px] + [px / total_px for px in panels_px])
    bottom = "x" if rows == 1 else f"x{rows}"
    layout: dict[str, Any] = {}
    annotations: list[dict[str, Any]] = []
    for i, (domain, title) in enumerate(
        zip(domains, ["Events"] + [plotly_text(p.title) for p in data.panels], strict=True),
        start=1,
    ):
        n = "" if i == 1 else str(i)
        xaxis: dict[str, Any] = {"anchor": f"y{n}", "domain": [0.0, 1.0], "type": "date"}
        if i < rows:
            xaxis.update(matches=bottom, showticklabels=False)
        else:
            xaxis["showticklabels"] = True
        layout[f"xaxis{n}"] = xaxis
        layout[f"yaxis{n}"] = {"anchor": f"x{n}", "domain": domain, "fixedrange": True}
        if i > 1:
            layout[f"yaxis{n}"]["rangemode"] = "tozero"
        annotations.append(
            {
                "font": {"size": 16},
                "showarrow": False,
                "text": title,
                "x": 0.5,
                "xanchor": "center",
                "xref": "paper",
                "y": domain[1],
                "yanchor": "bottom",
                "yref": "paper",
            }
        )
    traces: list[dict[str, Any]] = []
    used_lanes = [lane for lane in LANES if any(m.lane == lane for m in data.markers)]
    for key, style in LANES.items():
        label, colour = style.label, style.colour
        markers = [m for m in data.markers if m.lane == key]
        if not markers:
            continue
        traces.append(
            {
                "type": "scatter",
                "x": [m.at for m in markers],
                "y": [label] * len(markers),
                "mode": "markers",
                "name": label,
                "marker": {
                    "size": 11,
                    "color": [("#000" if m.failed else m.colour or colour) for m in markers],
                    "symbol": "line-ns-open" if key == Lane.COMMITS else "diamond",
                    "line": {"width": 2, "color": colour},
                },
                # what a click opens, its lane, and its own time (a click picks the marker's
                # moment, not the mouse's)
                "customdata": [[m.id, key, _iso(m.at)] for m in markers],
                "hovertext": [m.title for m in markers],
                "hovertemplate": "%{x|%H:%M:%S}<br>%{hovertext}<extra></extra>",
                "showlegend": False,
                "xaxis": "x",
                "yaxis": "y",
            }
        )
    layout["yaxis"].update(
        type="category",
        categoryorder="array",
        categoryarray=[LANES[k].label for k in reversed(used_lanes)],
    )
    shapes: list[dict[str, Any]] = []
    if data.last_good and data.first_bad and data.last_good < data.first_bad:
        shapes.append(_band(data.last_good, data.first_bad, "rgba(214,39,40,0.07)"))
    for start, end in data.symptom_spans:
        shapes.append(_band(start, end, "rgba(255,127,14,0.12)"))
    for when, colour, text in (
        (data.last_good, "#2ca02c", "last known good"),
        (data.first_bad, "#d62728", "first bad"),
    ):
        if when is None:
            continue
        shapes.append(_line(when, colour, "dash"))
        annotations.append(
            {
                "x": when,
                "xref": "x",
                "y": 1.0,
                "yref": "paper",
                "text": text,
                "showarrow": False,
                "font": {"color": colour, "size": 11},
                "yanchor": "bottom",
            }
        )
    shapes.extend(_line(s.at, SUSPECT_COLOUR, "dot") for s in data.suspects)
    annotations.extend(_suspect_labels(data.suspects))
    annotations.extend(_panel_messages(data.panels))
    layout.update(
        template=_template(),
        shapes=shapes,
        height=round(total_px) if data.panels else 260,
        margin={
            "l": 130,
            "r": 20,
            "t": 40 + (SUSPECT_LABEL_RISE - 8 + 15 * len(data.suspects) if data.suspects else 0),
            "b": 40,
        },
        hovermode="closest",
        dragmode="zoom",
        uirevision="timeline",
        annotations=annotations,
    )
    if data.x_range:
        # Always an explicit range: an axis left to autorange after a zoom jumped to 2000.
        for i in range(1, rows + 1):
            layout["xaxis" if i == 1 else f"xaxis{i}"].update(
                range=list(data.x_range), autorange=False
            )
        layout["uirevision"] = "|".join(_iso(t) for t in data.x_range)
    if not data.markers and not data.panels:
        layout["xaxis"]["visible"] = False
        layout["yaxis"]["visible"] = False
        annotations.append(
            {
                "text": NO_DATA,
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "showarrow": False,
                "font": {"size": 15, "color": "#6b7280"},
                "name": "no-data",
            }
        )
    # x is epoch ms on date axes.
    for i, panel in enumerate(data.panels, start=2):
        # Several series on one panel (GPUs, ranks, sources) look alike: a legend of its own,
        # beside the panel, says which line is which.
        legend = f"legend{i}" if len(panel.traces) > 1 else ""
        if legend:
            layout[legend] = {
                "x": 1.01,
                "xanchor": "left",
                "y": layout[f"yaxis{i}"]["domain"][1],
                "yanchor": "top",
                "font": {"size": 10},
                "itemwidth": 30,
                "tracegroupgap": 0,
            }
        for trace in panel.traces:
            name = plotly_text(trace.name)
            traces.append(
                {
                    "type": "scatter",
                    "x": typed_array(trace.ts_ms),
                    "y": typed_array(trace.values),
                    "xaxis": f"x{i}",
                    "yaxis": f"y{i}",
                    "mode": "lines",
                    "name": plotly_text(trace.label or trace.name),
                    "line": {"width": 1.3},
                    "hovertemplate": "%{x|%H:%M:%S} %{y:.3g}<extra>" + name + "</extra>",
                    "showlegend": bool(legend),
                    **({"legend": legend} if legend else {}),
                }
            )
    if any(len(p.traces) > 1 for p in data.panels):
        layout["margin"]["r"] = LEGEND_MARGIN
    return {"data": traces, "layout": layout}


def _iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _line(when: dt.datetime, colour: str, dash: str) -> dict[str, Any]:
    """A vertical line across every chart of the figure (the panels share the time axis)."""
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": when,
        "x1": when,
        "y0": 0,
        "y1": 1,
        "line": {"color": colour, "width": 2, "dash": dash},
    }


def _suspect_labels(suspects: list[SuspectLine]) -> list[dict[str, Any]]:
    """The "#1 KEY" labels above the figure, each joined to its line by a short stem and
    stacked so close ones stay legible; the hover gives the whole change."""
    return [
        {
            "x": s.at,
            "xref": "x",
            "y": 1.0,
            "yref": "paper",
            "text": escape(f"#{s.rank} {s.key[:40]}"),
            "hovertext": f"suspect #{s.rank}: {escape(s.title)}<br>took effect {_iso(s.at)}",
            "showarrow": True,
            "arrowhead": 0,
            "arrowwidth": 1,
            "arrowcolor": SUSPECT_COLOUR,
            "ax": 0,
            "ay": -(SUSPECT_LABEL_RISE + 15 * (len(suspects) - 1 - i)),
            "font": {"color": SUSPECT_COLOUR, "size": 11},
            "bgcolor": "rgba(255,255,255,0.9)",
            "name": f"suspect-{s.rank}",
        }
        for i, s in enumerate(suspects)
    ]


def _panel_messages(panels: list[Panel]) -> list[dict[str, Any]]:
    """Each panel's message (escaped), in the middle of the panel (rows from 2: the lanes are 1)."""
    return [
        {
            "text": "<br>".join(textwrap.wrap(plotly_text(p.message), 110, break_long_words=False)),
            "xref": f"x{i} domain",
            "yref": f"y{i} domain",
            "x": 0.5,
            "y": 0.5,
            "showarrow": False,
            "font": {"size": 12, "color": "#b91c1c"},
            "name": f"panel-message-{i}",
        }
        for i, p in enumerate(panels, start=2)
        if p.message
    ]


def _band(start: dt.datetime, end: dt.datetime, colour: str) -> dict[str, Any]:
    return {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": start,
        "x1": end,
        "y0": 0,
        "y1": 1,
        "fillcolor": colour,
        "line": {"width": 0},
        "layer": "below",
    }
