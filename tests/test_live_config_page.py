"""The Live config lane (issue 13): a marker per server start whose hover says what changed
against the start before it, and a start's detail with the full diff; both escaped."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from evidence.vocabulary import LANES, EventKind, Lane
from tests.conftest import screenshot
from timeline.models import Event, Incident

LIVE = LANES[Lane.LIVE_CONFIG].label


def _live_trace(client: Any, slug: str) -> dict[str, Any]:
    response = client.get(reverse("timeline_data", args=[slug]))
    assert response.status_code == 200
    traces = json.loads(response.content)["figure"]["data"]
    return next(t for t in traces if t.get("name") == LIVE)


def test_the_sample_restart_is_a_marker_whose_hover_says_what_changed(client, user, loaded):
    client.force_login(user)
    trace = _live_trace(client, loaded.slug)
    assert len(trace["x"]) == 2
    first, second = trace["hovertext"]
    assert first.split("<br>")[1] == "first start seen"
    lines = second.split("<br>")
    assert lines[0].startswith("Server start (pid ")
    assert set(lines[1:]) == {
        "tokenizer_path: &#x27;/models/dsv4-tok-v1&#x27; -&gt; &#x27;/models/dsv4-tok-v2&#x27;",
        "mem_fraction_static: 0.85 -&gt; 0.88",
        "chunked_prefill_size: 8192 -&gt; 16384",
    }


def test_a_start_detail_lists_its_args_and_the_diff_against_the_previous(client, user, loaded):
    client.force_login(user)
    first, second = Event.objects.filter(incident=loaded, kind=EventKind.SERVER_START).order_by(
        "at"
    )
    html = client.get(reverse("event_detail", args=[loaded.slug, second.pk])).content.decode()
    assert "3 ServerArgs field(s) changed" in html
    assert "<code>chunked_prefill_size</code>" in html
    assert '<td class="old"><code>8192</code></td>' in html
    assert '<td class="new"><code>16384</code></td>' in html
    assert "disable_overlap_schedule=False" in html  # the full list, from the event body
    html = client.get(reverse("event_detail", args=[loaded.slug, first.pk])).content.decode()
    assert "first start seen" in html


@pytest.mark.django_db
def test_log_text_in_server_args_is_escaped_in_hover_and_detail(client, user, team, tmp_path):
    (tmp_path / "server.log").write_text(
        "[2026-11-20 08:00:00] server_args=ServerArgs(model_path='/m', chat_template=None)\n"
        "[2026-11-20 09:00:00] server_args=ServerArgs(model_path='/m', "
        "chat_template='<img src=x onerror=alert(1)>')\n"
        "[2026-11-20 09:30:00] The server is fired up and ready to roll!\n"
        "[2026-11-20 10:00:00] The server is fired up and ready to roll!\n"
    )
    call_command(
        "ingest",
        str(tmp_path),
        incident="xss",
        team=team.name,
        no_analyze=True,
        stdout=StringIO(),
        stderr=StringIO(),
    )
    client.force_login(user)
    trace = _live_trace(client, "xss")
    hover = trace["hovertext"]
    assert len(hover) == 3  # the 09:30 ready line belongs to the 09:00 start
    assert "<img" not in "".join(hover)
    assert "chat_template: None -&gt; &#x27;&lt;img src=x onerror=alert(1)&gt;&#x27;" in hover[1]
    assert "configuration not logged" in hover[2]
    incident = Incident.objects.get(slug="xss")
    second = Event.objects.filter(incident=incident, kind=EventKind.SERVER_START).order_by("at")[1]
    html = client.get(reverse("event_detail", args=["xss", second.pk])).content.decode()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


@pytest.mark.browser
def test_browser_draws_the_live_config_lane_and_opens_a_start(logged_in_page, live_server, loaded):
    page = logged_in_page
    page.goto(f"{live_server.url}/incidents/{loaded.slug}/")
    page.wait_for_selector("#timeline-chart[data-state=ready]")
    lanes = page.evaluate(
        "() => document.getElementById('timeline-chart').layout.yaxis.categoryarray"
    )
    assert LIVE in lanes
    assert LIVE in page.locator("#timeline-chart .yaxislayer-above").first.text_content()
    page.evaluate(
        """(name) => {
          const el = document.getElementById('timeline-chart');
          const trace = el.data.findIndex(t => t.name === name);
          el.emit('plotly_click', {points: [{customdata: el.data[trace].customdata[1]}]});
        }""",
        LIVE,
    )
    page.wait_for_selector("#detail .server-start")
    text = page.locator("#detail").inner_text()
    assert "chunked_prefill_size" in text and "16384" in text
    screenshot(page, "live-config-start")
