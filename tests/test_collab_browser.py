"""The collaboration flow in a real browser: hypotheses, evidence, status, notes, marks and the
postmortem export (Chromium through Playwright, live server, real Postgres)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ARTIFACTS, screenshot
from tests.ui_helpers import htmx_settled
from timeline.models import Evidence, Hypothesis, Note

CULPRIT = "SGLANG_SM120_MMA_TARGET_CTAS"


def _chart_ready(page) -> None:
    page.wait_for_selector("#timeline-chart[data-state=ready]")


@pytest.mark.browser
def test_hypothesis_evidence_confirmation_and_postmortem_in_the_browser(
    logged_in_page, live_server, loaded, browser
):
    page = logged_in_page
    page.goto(f"{live_server.url}/incidents/{loaded.slug}/")
    _chart_ready(page)
    panel = page.locator("#hypotheses-panel")
    panel.locator("text=No hypotheses yet.").wait_for()
    htmx_settled(page)  # the panel's buttons are wired by htmx after its swap

    # One click turns "model quality ruled out" into a refuted hypothesis.
    panel.locator(".accept-finding", has_text="model quality ruled out").click()
    panel.locator(".hyp-row", has_text="Model quality caused the incident").wait_for()
    htmx_settled(page)
    assert "Refuted" in panel.locator(".hyp-row").first.inner_text()

    # A new hypothesis from the panel.
    panel.locator("summary", has_text="New hypothesis").click()
    panel.get_by_label("Hypothesis title").fill("The CTAS setting starves decode")
    panel.get_by_label("Hypothesis description").fill("Scheduling change right before the wedge.")
    panel.get_by_role("button", name="Add").click()
    row = panel.locator(".hyp-row", has_text="The CTAS setting starves decode")
    row.wait_for()
    htmx_settled(page)

    # Open the top suspect, then link it as supporting evidence.
    page.locator(".suspect-link").first.click()
    page.wait_for_selector("#detail .finding-detail")
    form = page.locator("#link-evidence")
    page.wait_for_selector("#link-evidence[data-ready=yes]")
    assert CULPRIT in form.locator(".link-target").inner_text()
    hypothesis = Hypothesis.objects.get(title="The CTAS setting starves decode")
    form.locator("select[name=hypothesis]").select_option(str(hypothesis.pk))
    form.locator("select[name=stance]").select_option("supports")
    form.get_by_label("Evidence note").fill("introduced 2 h 29 min before the first drop")
    form.get_by_role("button", name="Link evidence").click()
    row.locator("text=1 evidence").wait_for()
    htmx_settled(page)
    evidence = Evidence.objects.get(hypothesis=hypothesis)
    assert evidence.finding.title.startswith(CULPRIT) and evidence.stance == "supports"

    # Confirm it from the panel's status menu.
    row.locator("select[name=status]").select_option("confirmed")
    panel.locator(".hyp-row", has_text="The CTAS setting starves decode").locator(
        ".badge", has_text="Confirmed"
    ).wait_for()

    # A click on empty chart space picks the moment; the note lands on the notes lane.
    box = page.evaluate(
        """() => { const el = document.getElementById('timeline-chart');
                   const xa = el._fullLayout.xaxis, r = el.getBoundingClientRect();
                   return {x: r.left + xa._offset + xa._length * 0.8,
                           y: r.top + el._fullLayout._size.t + 8}; }"""
    )
    page.mouse.click(box["x"], box["y"])
    picked = page.locator("#add-note input[name=at]").input_value()
    assert picked.startswith("2026-11-"), picked
    page.locator("#add-note textarea[name=body]").fill("rolled back **CTAS** on pod 3")
    page.locator("#add-note").get_by_role("button", name="Add note").click()
    # The chart redraws the same window with the notes lane.
    page.wait_for_function(
        "() => document.getElementById('timeline-chart').data.some(t => t.name === 'Notes')"
    )
    note = Note.objects.get(incident=loaded)
    assert note.at.strftime("%Y-%m-%d %H:%M:%S UTC") == picked
    # A click on the note marker opens it in the side panel, rendered from Markdown.
    page.evaluate(
        """() => { const el = document.getElementById('timeline-chart');
                   const t = el.data.find(t => t.name === 'Notes');
                   const pt = {x: t.x[0], customdata: t.customdata[0]};
                   el.emit('plotly_click', {points: [pt]}); }"""
    )
    page.wait_for_selector("#detail .note-detail strong")
    assert "rolled back CTAS on pod 3" in page.locator("#detail").inner_text()
    screenshot(page, "collab-timeline")

    # The board shows the columns and the status history.
    page.locator(".tabs a", has_text="Hypotheses").click()
    confirmed = page.locator(".board-col[data-status=confirmed]")
    assert "The CTAS setting starves decode" in confirmed.inner_text()
    assert "Model quality" in page.locator(".board-col[data-status=refuted]").inner_text()
    screenshot(page, "collab-board")

    # Export: the Markdown names the culprit as the root cause.
    with page.expect_download() as info:
        page.locator("#export-md").click()
    markdown = Path(info.value.path()).read_text(encoding="utf-8")
    root = markdown[markdown.index("## Root cause") : markdown.index("## Hypotheses ruled out")]
    assert "### The CTAS setting starves decode" in root
    assert f"`{CULPRIT}`: (unset) → `512`" in root
    assert "Model quality caused the incident" in markdown

    # The HTML export opens offline and draws the figure.
    with page.expect_download() as info:
        page.locator("#export-html").click()
    html_path = ARTIFACTS / "postmortem.html"
    ARTIFACTS.mkdir(exist_ok=True)
    info.value.save_as(html_path)
    offline = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
    try:
        doc = offline.new_page()
        doc.goto(html_path.as_uri())
        doc.wait_for_selector("body[data-figure=ready]", timeout=30_000)
        assert doc.locator("#pm-figure .main-svg").count() > 0
        assert CULPRIT in doc.locator("main").inner_text()
        screenshot(doc, "collab-postmortem")
    finally:
        offline.close()


@pytest.mark.browser
def test_marks_are_set_and_cleared_from_the_timeline(logged_in_page, live_server, loaded):
    page = logged_in_page
    page.goto(f"{live_server.url}/incidents/{loaded.slug}/")
    _chart_ready(page)
    # Pick the moment by clicking a harness marker, then mark it as last known good.
    page.evaluate(
        """() => { const el = document.getElementById('timeline-chart');
                   const t = el.data.find(t => t.name === 'Harness');
                   const pt = {x: t.x[3], customdata: t.customdata[3]};
                   el.emit('plotly_click', {points: [pt]}); }"""
    )
    page.locator("#marks summary").click()
    picked = page.locator("#marks input[name=at]").input_value()
    assert picked.startswith("2026-11-20 "), picked
    page.locator("#mark-last-good-set").click()
    page.wait_for_selector("#mark-last-good")
    loaded.refresh_from_db()
    assert loaded.last_good_at.strftime("%Y-%m-%d %H:%M:%S UTC") == picked
    assert "re-running" in page.locator(".summary-bar").inner_text()
    screenshot(page, "collab-marks")
    page.locator("#marks summary").click()
    page.locator("#mark-last-good-clear").click()
    page.wait_for_selector("#verdict:not(:has(#mark-last-good))")
    loaded.refresh_from_db()
    assert loaded.last_good_at is None
