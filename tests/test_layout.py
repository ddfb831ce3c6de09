"""Layout (issue 16, defect 8): the page never grows wider than the screen once hypotheses exist;
the Events and Upload pages keep the incident's tabs; long keys wrap at their separators, never
inside a word; panels that overlay several look-alike series have a legend (real Postgres, the
sample incident, Chromium at 1440x900 and 1280x720)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.conftest import screenshot
from tests.ui_helpers import VIEWPORTS, session_page
from timeline import services
from timeline.analysis import current_analysis
from timeline.choices import FindingKind
from timeline.figure_data import legend_labels
from timeline.templatetags.softbreaks import softbreak

LONG_TITLE = (
    "The CTAS setting starves decode: SGLANG_SM120_MMA_TARGET_CTAS=512 caps the CTAs per SM "
    "and the decode batch waits behind prefill for minutes at a time"
)

# Each word of the element's text on one line: a word is what lies between spaces and <wbr>s.
WORDS_SPLIT_ACROSS_LINES = """el => {
  const split = [];
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const m of node.textContent.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
      if (tops.size > 1) split.push(m[0]);
    }
  }
  return split;
}"""


def test_legend_labels_say_what_tells_the_series_apart():
    gpus = [
        {"gpu": str(i), "UUID": f"GPU-{i}9a853518-c295-4282", "Hostname": "dsv4-node-1"}
        for i in range(8)
    ]
    assert legend_labels(gpus, [""] * 8) == [f"gpu={i}" for i in range(8)]
    mixed = [
        {"batch": "prefill", "source": "server_log", "tp": "TP0"},
        {"source": "server_log", "tp": "TP0"},
        {"tp_rank": "0"},
    ]
    # Neither label alone tells the three apart: what the server-log series share is left out.
    assert legend_labels(mixed, ["", "", ""]) == ["batch=prefill,tp=TP0", "tp=TP0", "tp_rank=0"]
    assert legend_labels([{"a": "1"}, {"a": "1"}], ["x.prom", "y.prom"]) == ["x.prom", "y.prom"]
    assert legend_labels([{"gpu": "0"}], [""]) == [""]  # one series: no legend


def test_softbreak_breaks_after_separators_only_and_escapes():
    assert str(softbreak("SGLANG_SM120_MMA: (unset) → 512")) == (
        "SGLANG_<wbr>SM120_<wbr>MMA: (unset) → 512"
    )
    assert str(softbreak("--tp=8 /models/v1")) == "--tp=<wbr>8 /<wbr>models/<wbr>v1"
    assert str(softbreak("<b>x_y</b>")) == "&lt;b&gt;x_<wbr>y&lt;/<wbr>b&gt;"


def test_metric_panels_with_several_series_carry_a_legend(client, user, loaded):
    client.force_login(user)
    figure = json.loads(client.get(reverse("timeline_data", args=[loaded.slug])).content)["figure"]
    metric = [t for t in figure["data"] if t.get("mode") == "lines"]
    by_axis: dict[str, list] = {}
    for t in metric:
        by_axis.setdefault(t["yaxis"], []).append(t)
    crowded = {axis: traces for axis, traces in by_axis.items() if len(traces) > 1}
    assert crowded, by_axis.keys()
    for traces in crowded.values():
        legend = traces[0]["legend"]
        assert legend in figure["layout"]
        assert all(t["showlegend"] and t["legend"] == legend for t in traces)
        names = [t["name"] for t in traces]
        assert len(set(names)) == len(names) and all(len(n) <= 22 for n in names), names
    gpu = next(ts for ts in crowded.values() if any(t["name"] == "gpu=0" for t in ts))
    assert sorted(t["name"] for t in gpu) == [f"gpu={i}" for i in range(8)]


@pytest.mark.parametrize(("name", "tab"), [("event_table", "Events"), ("upload", "Upload")])
def test_events_and_upload_pages_keep_the_incident_tabs(client, user, incident, name, tab):
    client.force_login(user)
    html = client.get(reverse(name, args=[incident.slug])).content.decode()
    assert '<nav class="tabs">' in html
    assert f'class="active" href="{reverse(name, args=[incident.slug])}">{tab}</a>' in html
    assert reverse("hypothesis_board", args=[incident.slug]) in html


def _hypotheses(incident, user) -> None:
    for finding in current_analysis(incident).findings.filter(kind=FindingKind.SUSPECT):
        services.hypothesis_from_finding(finding=finding, user=user)
    services.hypothesis_create(incident=incident, user=user, title=LONG_TITLE, body="")


@pytest.mark.browser
@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_no_page_is_wider_than_the_screen_with_hypotheses(
    browser, live_server, client, user, loaded, viewport
):
    width, height = viewport
    _hypotheses(loaded, user)
    page, context = session_page(browser, live_server, client, user, viewport)
    fits = "document.documentElement.scrollWidth <= window.innerWidth"
    try:
        page.goto(f"{live_server.url}/incidents/{loaded.slug}/")
        page.wait_for_selector("#timeline-chart[data-state=ready]")
        page.wait_for_selector("#hypotheses-panel #link-evidence")
        page.locator(".suspect-link").first.click()  # fills the link form with its long title
        page.wait_for_selector("#link-evidence[data-ready=yes]")
        page.wait_for_selector("#timeline-chart[data-state=ready]")
        assert page.evaluate(fits), page.evaluate("document.documentElement.scrollWidth")
        # Suspect keys wrap at their separators, never inside a word.
        for link in page.locator(".suspect-link").all():
            assert link.evaluate(WORDS_SPLIT_ACROSS_LINES) == [], link.inner_text()
        assert page.locator(".suspect-link wbr").count() > 0
        # The crowded panels' legends are drawn, one entry per line.
        entries = page.locator("#timeline-chart .traces text[class^=legend]").all_text_contents()
        assert [f"gpu={i}" for i in range(8)] == [e for e in entries if e.startswith("gpu=")]
        screenshot(page, f"layout-timeline-{width}x{height}")

        for path, active, name in (
            ("events/", "Events", "events"),
            ("upload/", "Upload", "upload"),
            ("hypotheses/", "Hypotheses", "board"),
        ):
            page.goto(f"{live_server.url}/incidents/{loaded.slug}/{path}")
            page.wait_for_load_state("networkidle")
            assert page.locator(".tabs a.active").inner_text() == active
            assert page.evaluate(fits), (path, page.evaluate("document.body.scrollWidth"))
            screenshot(page, f"layout-{name}-{width}x{height}")
    finally:
        context.close()
