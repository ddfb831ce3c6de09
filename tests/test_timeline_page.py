"""The timeline page: views with the test client (query counts) and a real browser."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.conftest import screenshot


def test_timeline_page_lists_the_suspects_with_reasons(client, user, loaded):
    client.force_login(user)
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("incident_timeline", args=[loaded.slug]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "SGLANG_SM120_MMA_TARGET_CTAS" in html
    assert "model quality ruled out" in html
    assert len(queries) <= 12, [q["sql"][:120] for q in queries]


def test_timeline_data_is_bounded_per_trace(client, user, loaded):
    client.force_login(user)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("timeline_data", args=[loaded.slug]))
    assert response.status_code == 200
    payload = json.loads(response.content)
    traces = payload["figure"]["data"]
    names = {t.get("name") for t in traces}
    assert "Config changes" in names
    harness = next(t for t in traces if t.get("name") == "Harness")
    assert "#000" not in harness["marker"]["color"]  # green all day: no run drawn as failed
    for shown, total in payload["meta"]["points"].values():
        assert shown <= 1500
        assert total >= shown
    assert len(response.content) < 100_000 * len(traces)
    assert len(queries) <= 20


def test_zoomed_window_returns_full_detail_when_it_fits(client, user, loaded):
    client.force_login(user)
    response = client.get(
        reverse("timeline_data", args=[loaded.slug]),
        {"start": "2026-11-20T23:30:00Z", "end": "2026-11-20T23:50:00Z"},
    )
    points = json.loads(response.content)["meta"]["points"]
    running = [v for k, v in points.items() if k.startswith("sglang:num_running_reqs")]
    assert running and all(shown == total for shown, total in running)
    assert all(total <= 100 for _, total in running)


def test_event_detail_renders_markdown_without_raw_html(client, user, loaded):
    from timeline.models import Event

    client.force_login(user)
    event = Event.objects.filter(incident=loaded, kind="config_change").first()
    event.body = "<script>alert(1)</script> [x](javascript:alert(1))"
    event.save()
    html = client.get(reverse("event_detail", args=[loaded.slug, event.pk])).content.decode()
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;" in html
    assert 'href="javascript:' not in html


def test_event_table_full_text_search(client, user, loaded):
    client.force_login(user)
    html = client.get(
        reverse("event_table", args=[loaded.slug]), {"q": "SGLANG_SM120_MMA_TARGET_CTAS"}
    ).content.decode()
    assert "SGLANG_SM120_MMA_TARGET_CTAS" in html
    html = client.get(
        reverse("event_table", args=[loaded.slug]), {"lane": "harness"}
    ).content.decode()
    assert "stability" in html


@pytest.mark.browser
def test_browser_renders_the_figure_opens_details_and_refetches_on_zoom(
    logged_in_page, live_server, loaded
):
    page = logged_in_page
    page.goto(f"{live_server.url}/incidents/{loaded.slug}/")
    page.wait_for_selector("#timeline-chart[data-state=ready]")
    assert page.locator("#timeline-chart .main-svg").count() > 0
    assert "SGLANG_SM120_MMA_TARGET_CTAS" in page.locator("#suspects").inner_text()
    screenshot(page, "timeline")

    page.locator(".suspect-link").first.click()
    page.wait_for_selector("#detail .finding-detail")
    assert "SGLANG_SM120_MMA_TARGET_CTAS" in page.locator("#detail").inner_text()
    page.wait_for_function("() => document.querySelector('#timeline-chart').dataset.loads >= '2'")

    # A click on a config-change marker opens its detail in the side panel.
    page.evaluate(
        """() => {
          const el = document.getElementById('timeline-chart');
          const trace = el.data.findIndex(t => t.name === 'Config changes');
          el.emit('plotly_click', {points: [{customdata: el.data[trace].customdata[0]}]});
        }"""
    )
    page.wait_for_selector("#detail .event-detail")
    assert "Before" in page.locator("#detail").inner_text()

    loads = int(page.locator("#timeline-chart").get_attribute("data-loads"))
    page.evaluate(
        """() => Plotly.relayout('timeline-chart',
             {'xaxis.range[0]': '2026-11-20 23:30:00', 'xaxis.range[1]': '2026-11-20 23:50:00'})"""
    )
    page.wait_for_function(
        f"() => Number(document.querySelector('#timeline-chart').dataset.loads) > {loads}"
    )
    page.wait_for_selector("#timeline-chart[data-state=ready]")
    screenshot(page, "timeline-zoomed")


def test_incident_list_shows_first_bad_and_top_suspect(client, user, loaded):
    client.force_login(user)
    html = client.get(reverse("incident_list")).content.decode()
    assert "2026-11-20 23:39:58" in html
    assert "SGLANG_SM120_MMA_TARGET_CTAS" in html
    assert "Training" not in html


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("doc_revision", ["Edited sections of", "SGLANG_SM120_MMA_TARGET_CTAS"]),
        ("commit", ["Files changed", "launch.sh"]),
        ("harness_run", ["stability", "pass"]),
        ("stack_dump", ["Goroutine groups", "net/http.(*persistConn).roundTrip"]),
    ],
)
def test_each_kind_of_event_opens_a_readable_detail(client, user, loaded, kind, expected):
    from timeline.models import Event

    client.force_login(user)
    events = Event.objects.filter(incident=loaded, kind=kind).order_by("at")
    if kind == "doc_revision":
        events = events.filter(body__contains="SGLANG_SM120_MMA_TARGET_CTAS")
    if kind == "commit":
        events = events.filter(body__contains="launch.sh")
    if kind == "stack_dump":
        events = events.filter(attrs__format="goroutines")
    event = events.first()
    assert event is not None
    html = client.get(reverse("event_detail", args=[loaded.slug, event.pk])).content.decode()
    for text in expected:
        assert text in html, text
