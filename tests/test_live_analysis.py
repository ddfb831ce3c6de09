"""Issue 13 end to end: an incident written as real files (SGLang log with ServerArgs lines, the
DSV4 doc, Prometheus text, harness results) ingested into Postgres, analysed, and shown: the
suspects panel says when each change went live, what ran before and after, the evidence for and
against and the bisect plan; the postmortem says doc vs live."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from tests.conftest import screenshot
from tests.correlation.livestory import World, simulate
from tests.correlation.realformat import render
from tests.correlation.situations import scenario
from timeline.analysis import current_analysis
from timeline.choices import FindingKind
from timeline.models import Incident
from timeline.postmortem.document import document
from timeline.postmortem.markdown import to_markdown


def _bundle(world: World, root: Path) -> Path:
    root.mkdir()
    tz = getattr(world.scenario.tz, "key", "UTC")
    (root / "incident.toml").write_text(f'title = "Live config"\ntimezone = "{tz}"\n')
    for name, data in render(world).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def _ingest(world: World, tmp_path: Path, team) -> Incident:
    call_command(
        "ingest",
        str(_bundle(world, tmp_path / "bundle")),
        incident="live",
        team=team.name,
        stdout=StringIO(),
        stderr=StringIO(),
    )
    return Incident.objects.get(slug="live")


@pytest.fixture
def drift(db, team, tmp_path) -> tuple[World, Incident]:
    """A flag passed by hand at a restart, shipped with a doc-recorded plumbing change."""
    world = simulate(scenario("hand_launched_drift", 11))
    return world, _ingest(world, tmp_path, team)


def test_the_stored_analysis_names_the_hand_launched_flag_with_its_live_facts(drift):
    world, incident = drift
    analysis = current_analysis(incident)
    assert analysis is not None

    top = analysis.findings.get(kind=FindingKind.SUSPECT, rank=1)
    live = top.data["live"]
    assert live["key"] == world.scenario.culprit
    assert live["live_where"].startswith("logs/server.log:")
    assert live["recorded_at"] is None  # drift: no doc or commit records it
    assert top.event.kind == "server_start"  # the suspect links to the start that ran it
    assert analysis.result["bisect"][0].startswith("The evidence cannot separate 2 suspects")
    assert any("no doc or commit records" in line for line in analysis.result["drift"])
    assert len(analysis.result["restarts"]) == len(world.starts)


def test_the_suspects_panel_shows_when_it_went_live_and_the_bisect_plan(client, user, drift):
    world, incident = drift
    incident.team.members.add(user)
    client.force_login(user)

    html = client.get(reverse("incident_timeline", args=[incident.slug])).content.decode()

    assert "Went live" in html and "server.log:" in html
    assert 'id="bisect-plan"' in html and 'id="live-drift"' in html
    assert "no doc or commit records" in html


def test_the_postmortem_says_doc_vs_live_and_what_ran(drift):
    world, incident = drift

    md = to_markdown(document(incident))

    assert "## Doc vs live" in md
    assert "no doc or commit records" in md
    assert "Bisect plan:" in md
    assert "  - went live: " in md
    assert "## Live configuration, start by start" in md
    culprit = "--" + world.scenario.culprit.replace("_", "-")
    assert f"| `{culprit}` |" in md  # what changed: the live difference, not the records


def test_a_change_documented_but_not_deployed_is_said_so(db, team, tmp_path):
    world = simulate(scenario("committed_not_deployed", 11))
    incident = _ingest(world, tmp_path, team)

    ((_, key, value),) = world.scenario.unrun
    md = to_markdown(document(incident))
    flag = key if key.isupper() else "--" + key.replace("_", "-")
    assert f"{flag}: the changelog said {value}" in md
    assert "documented, not deployed" in md


def test_the_browser_shows_the_live_facts_of_the_suspects(logged_in_page, live_server, user, drift):
    world, incident = drift
    incident.team.members.add(user)
    page = logged_in_page

    page.goto(f"{live_server.url}/incidents/{incident.slug}/")
    panel = page.locator("#suspects")
    panel.locator(".live-facts").first.wait_for()

    text = panel.inner_text()
    assert "Went live" in text and "Bisect plan" in text and "Doc vs live" in text
    assert panel.locator(".suspect").count() == 2
    screenshot(page, "live-suspects")
