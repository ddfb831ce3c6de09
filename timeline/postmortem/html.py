"""The postmortem as HTML (templates/timeline/postmortem.html): a page the app serves, or one
self-contained file to download.

The Markdown rendered safely (raw HTML off) and the timeline figure as a JSON data block; the
download inlines the styles, plotly.js and the drawing script, so the file opens offline. The
figure comes from the same builder as the timeline page's, so the export draws what it draws.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from timeline import charts
from timeline.figure_data import timeline_figure_data
from timeline.markdown import render as md_render
from timeline.models import Incident
from timeline.postmortem.markdown import to_markdown

PLOTLY = "vendor/plotly-basic.min.js"
FIGURE_POINTS = 600  # per metric trace in the exported figure: enough to see the wedge
_FIGURE_AFTER = "<h2>Timeline of key events</h2>"
_FIGURE_DIV = '<div id="pm-figure"></div>\n'


def figure(incident: Incident) -> str:
    """The timeline figure as Plotly JSON: the page's figure over the whole incident, with
    fewer points per metric trace."""
    data = timeline_figure_data(incident, max_points=FIGURE_POINTS).data
    return charts.figure_json(charts.timeline_figure(data))


def _static(relative: str) -> str:
    path = finders.find(relative)
    if not path:
        raise FileNotFoundError(relative)
    return Path(str(path)).read_text(encoding="utf-8")


def _script_safe(text: str) -> str:
    """JSON or code placed inside <script>: no '</' can close the element early."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def to_html(doc: dict[str, Any], figure_json: str, *, inline: bool = True) -> str:
    """The postmortem page. ``inline`` (the download): one self-contained file, styles, plotly.js
    and the drawing script inline, no external URL, so it opens offline from disk. Otherwise (the
    page served by the app): the same document loading those from the app's static files, with
    no inline script, so it runs under the Content-Security-Policy ``script-src 'self'``."""
    body = str(md_render(to_markdown(doc)))
    body = (
        body.replace(_FIGURE_AFTER, _FIGURE_AFTER + "\n" + _FIGURE_DIV, 1)
        if _FIGURE_AFTER in body
        else (_FIGURE_DIV + body)
    )
    context: dict[str, Any] = {
        "title": doc["incident"]["title"],
        "inline": inline,
        # Our own HTML escaped already: the body by the Markdown renderer (raw HTML off), the
        # figure by _script_safe (a JSON data block: never run, so the policy allows it).
        "body": mark_safe(body),  # noqa: S308
        "figure_json": mark_safe(_script_safe(figure_json)),  # noqa: S308
    }
    if inline:
        plotly_js = _static(PLOTLY)
        if "</script" in plotly_js.lower():  # would end the inline element early
            raise ValueError(f"{PLOTLY} contains '</script'; it cannot be inlined")
        css = _static("app/app.css") + "\n" + _static("app/postmortem.css")
        context |= {  # our own static files, as they are
            "css": mark_safe(css),  # noqa: S308
            "plotly_js": mark_safe(plotly_js),  # noqa: S308
            "figure_js": mark_safe(_static("app/postmortem.js")),  # noqa: S308
        }
    return render_to_string("timeline/postmortem.html", context)
