"""Event titles and label values reach Plotly as text, never as its HTML (issue 15.9).

Plotly renders links, bold and italics in hover text and trace names, and fills ``%{...}`` in
hover templates; titles and label values come from evidence anyone can upload or push. The
figure JSON holds them escaped, and a real Chromium hovering the marker shows the characters,
with no link or bold element made from them.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from ingest.push import token_create
from ingest.services import bundles, loading
from timeline.charts import plotly_text
from timeline.choices import RunStatus

TITLE = "<a href=x>link</a><b>bold</b> %{x}"
LABEL = "<i>it</i>"
OUR_TAGS = {"<br>", "<extra>", "</extra>"}


@pytest.fixture
def hostile(incident, tmp_path, client):
    token = token_create(team=incident.team, name="ci")
    body = {"events": [{"at": "2026-11-20T20:00:00Z", "title": TITLE, "lane": "server"}]}
    response = client.post(
        f"/api/v1/incidents/{incident.slug}/events",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201, response.content
    metrics = tmp_path / "hostile.prom"
    metrics.write_text(
        f'# TYPE m gauge\nm{{pod="{LABEL}"}} 1 1795204800000\nm{{pod="{LABEL}"}} 2 1795204860000\n'
    )
    (artifact,) = bundles.path_register(incident=incident, path=metrics).artifacts
    assert loading.artifact_ingest(artifact_id=artifact.pk).status == RunStatus.DONE
    return incident


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_plotly_text_escapes_html_and_template_marks():
    assert plotly_text(TITLE) == ("&lt;a href=x&gt;link&lt;/a&gt;&lt;b&gt;bold&lt;/b&gt; &#37;{x}")
    assert plotly_text("a & b") == "a &amp; b"


@pytest.mark.attack("HTML in hover text, names", count=2)
def test_the_figure_json_holds_titles_and_labels_escaped(client, user, hostile):
    client.force_login(user)
    response = client.get(reverse("timeline_data", args=[hostile.slug]), {"series": "m"})
    assert response.status_code == 200
    figure = json.loads(response.content)["figure"]
    server = next(t for t in figure["data"] if "hovertext" in t and t["name"] == "Server")
    assert plotly_text(TITLE) in server["hovertext"]
    metric = next(t for t in figure["data"] if t.get("yaxis") == "y2")
    assert metric["name"] == "pod=&lt;i&gt;it&lt;/i&gt;"
    assert "<extra>pod=&lt;i&gt;it&lt;/i&gt;</extra>" in metric["hovertemplate"]
    for text in _strings(figure):
        for tag in ("<a", "<b>", "<i>", "%{x}<"):
            shown = text
            for ours in OUR_TAGS:
                shown = shown.replace(ours, "")
            assert tag not in shown, text


@pytest.mark.browser
@pytest.mark.attack("HTML in hover text, rendered", count=2)
def test_hovering_the_marker_shows_the_title_as_text(logged_in_page, live_server, hostile):
    page = logged_in_page
    page.goto(f"{live_server.url}/incidents/{hostile.slug}/")
    page.wait_for_selector("#timeline-chart[data-state=ready]")
    page.evaluate(  # pick the hostile label's panel (the picker is folded away)
        """() => {
          document.querySelector('#panel-form input[name=series][value=m]').checked = true;
          document.getElementById('panel-form').requestSubmit();
        }"""
    )
    page.wait_for_function("() => document.querySelector('#timeline-chart').dataset.loads >= '2'")
    page.wait_for_selector("#timeline-chart[data-state=ready]")
    where = page.evaluate(
        """() => {
          const el = document.getElementById('timeline-chart');
          const box = el.getBoundingClientRect();
          const at = (trace, xaxis, yaxis) => {
            const xa = el._fullLayout[xaxis], ya = el._fullLayout[yaxis];
            return [box.left + xa._offset + xa.d2p(trace.x[0]),
                    box.top + ya._offset + ya.d2p(trace.y[0])];
          };
          // _fullData: the traces as drawn (metric traces come as base64 typed arrays)
          const server = el._fullData.find(t => t.name === 'Server');
          const metric = el._fullData.find(t => t.yaxis === 'y2');
          return {marker: at(server, 'xaxis', 'yaxis'), metric: at(metric, 'xaxis2', 'yaxis2')};
        }"""
    )
    shown = {}
    for key, (x, y) in where.items():
        page.mouse.move(x, y)  # a real pointer over the point: Plotly draws its hover label
        page.wait_for_function(
            "() => [...document.querySelectorAll('#timeline-chart .hoverlayer')]"
            ".some(l => l.textContent.length > 0)"
        )
        shown[key] = page.evaluate(
            """() => {
              const layers = [...document.querySelectorAll('#timeline-chart .hoverlayer')];
              const spans = layers.flatMap(l => [...l.querySelectorAll('tspan')]);
              const styled = word => spans.filter(
                t => (t.getAttribute('style') || '').includes(word)).length;
              return {
                text: layers.map(l => l.textContent).join(' '),
                links: layers.reduce((n, l) => n + l.querySelectorAll('a').length, 0),
                bold: styled('bold'),
                italic: styled('italic'),
              };
            }"""
        )
        page.mouse.move(1, 1)  # away, so the next label is the next point's
    assert "<a href=x>link</a><b>bold</b> %{x}" in shown["marker"]["text"], shown
    assert shown["marker"]["links"] == 0 and shown["marker"]["bold"] == 0, shown
    assert "pod=<i>it</i>" in shown["metric"]["text"], shown
    assert shown["metric"]["italic"] == 0, shown
