"""The postmortem export: sections, the culprit with its reasons, determinism, one offline HTML
file, hostile input (real Postgres, the sample incident)."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.urls import reverse

from evidence.vocabulary import EventKind, HarnessStatus, Lane
from tests.conftest import ARTIFACTS
from timeline import postmortem, services
from timeline.analysis import current_analysis
from timeline.choices import FindingKind
from timeline.models import Event, Incident

CULPRIT = "SGLANG_SM120_MMA_TARGET_CTAS"
HOSTILE = "</script><script>alert(1)</script> <img src=x onerror=alert(2)> [x](javascript:alert(3))"


@pytest.fixture
def worked(loaded, user) -> Incident:
    """The sample incident after the team's work: model quality refuted, the CTAS change
    confirmed with the suspect finding as evidence, a note, a summary and action items."""
    incident = loaded
    analysis = current_analysis(incident)
    ruled_out = analysis.findings.get(kind=FindingKind.RULED_OUT)
    services.hypothesis_from_finding(finding=ruled_out, user=user)
    suspect = analysis.findings.get(kind=FindingKind.SUSPECT, rank=1)
    h = services.hypothesis_create(
        incident=incident,
        user=user,
        title="The CTAS target starves decode under agentic load",
        body="Introduced after the last stable state; matches the scheduling symptoms.",
    )
    services.evidence_add(
        hypothesis=h, user=user, stance="supports", finding=suspect, note="top suspect"
    )
    services.hypothesis_set_status(hypothesis=h, user=user, status="confirmed")
    services.note_add(
        incident=incident,
        user=user,
        at=dt.datetime(2026, 11, 20, 23, 45, tzinfo=dt.UTC),
        body="paged on-call",
    )
    services.incident_update(
        incident=incident,
        user=user,
        title=incident.title,
        status="resolved",
        summary="Running requests were silently dropped while GPUs sat idle.",
        resolved_at=dt.datetime(2026, 11, 21, 2, 0, tzinfo=dt.UTC),
        action_items="- [ ] remove SGLANG_SM120_MMA_TARGET_CTAS\n- [ ] alert on idle GPUs",
    )
    return incident


def _section(markdown: str, title: str) -> str:
    start = markdown.index(f"## {title}\n")
    end = markdown.find("\n## ", start + 3)
    return markdown[start : end if end != -1 else None]


def test_the_markdown_names_the_culprit_with_reasons_and_every_section(worked):
    md = postmortem.to_markdown(postmortem.document(worked))
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "postmortem.md").write_text(md, encoding="utf-8")
    assert md.startswith("# Postmortem: ")
    for title in (
        "Summary",
        "Impact window",
        "Timeline of key events",
        "Root cause",
        "Hypotheses ruled out",
        "What changed between last known good and first bad",
        "Action items",
    ):
        assert f"\n## {title}\n" in md, title
    assert "silently dropped" in _section(md, "Summary")
    impact = _section(md, "Impact window")
    assert "first bad: 2026-11-20 23:39:58 UTC" in impact
    assert "resolved: 2026-11-21 02:00 UTC (2 h 20 min after first bad)" in impact
    root = _section(md, "Root cause")
    assert "### The CTAS target starves decode under agentic load" in root
    assert f"`{CULPRIT}`: (unset) → `512`" in root
    assert "suspect #1" in root and "high relevance" in root and "a new setting" in root
    ruled_out = _section(md, "Hypotheses ruled out")
    assert "### Model quality caused the incident" in ruled_out
    assert "**refutes**: model quality ruled out" in ruled_out
    assert "76 harness runs" in ruled_out
    diff = _section(md, "What changed between last known good and first bad")
    assert f"| `{CULPRIT}` | (unset) | `512` |" in diff
    assert "| `--chunked-prefill-size` | `8192` | `16384` |" in diff
    events = _section(md, "Timeline of key events")
    assert events.index("Last known good") < events.index(CULPRIT) < events.index("First bad")
    assert "paged on-call" in events and "Resolved" in events
    assert "alert on idle GPUs" in _section(md, "Action items")


def test_the_same_stored_data_gives_byte_identical_exports(alice_client, worked):
    urls = {fmt: reverse("postmortem_export", args=[worked.slug, fmt]) for fmt in ("md", "json")}
    first = {fmt: alice_client.get(url) for fmt, url in urls.items()}
    second = {fmt: alice_client.get(url) for fmt, url in urls.items()}
    for fmt in urls:
        assert first[fmt].status_code == 200
        assert first[fmt].content == second[fmt].content, fmt
        assert first[fmt]["Content-Disposition"] == (
            f'attachment; filename="dsv4-postmortem.{fmt}"'
        )
    doc = json.loads(first["json"].content)
    assert doc["root_cause"][0]["changes"][0]["key"] == CULPRIT
    assert doc["ruled_out"][0]["status"] == "refuted"
    assert {"key": CULPRIT, "before": None, "after": "512"} in doc["config_diff"]
    assert [e["at"] for e in doc["key_events"]] == sorted(e["at"] for e in doc["key_events"])
    assert postmortem.to_markdown(doc) == first["md"].content.decode()


def test_the_html_export_is_one_offline_file_with_the_figure_and_no_raw_user_html(
    alice_client, user, worked
):
    services.note_add(
        incident=worked,
        user=user,
        at=dt.datetime(2026, 11, 20, 23, 50, tzinfo=dt.UTC),
        body=HOSTILE,
    )
    h = services.hypothesis_create(incident=worked, user=user, title="<b>x</b>", body=HOSTILE)
    services.hypothesis_set_status(hypothesis=h, user=user, status="refuted", note=HOSTILE)
    response = alice_client.get(reverse("postmortem_export", args=[worked.slug, "html"]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    html = response.content.decode()
    # Self-contained: no file or script is fetched from anywhere.
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", html, re.I)
    assert "@import" not in html
    # plotly.js, the figure data and the drawing script: exactly three script elements, so a
    # hostile note could not open or close one.
    assert html.count("<script") == 3 and html.count("</script>") == 3
    assert "Plotly.newPlot" in html and '"name":"Notes"' in html
    assert "<img src=x" not in html and 'href="javascript:' not in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html
    assert CULPRIT in html and "<h2>Root cause</h2>" in html
    assert html.index('<div id="pm-figure">') > html.index("<h2>Timeline of key events</h2>")


def test_an_incident_without_analysis_exports_the_unknowns(alice_client, incident):
    md = alice_client.get(reverse("postmortem_export", args=[incident.slug, "md"])).content.decode()
    assert "_No hypothesis is confirmed yet._" in md
    assert "nothing to compare" in md
    assert "- first bad: unknown" in md
    response = alice_client.get(reverse("postmortem_export", args=[incident.slug, "pdf"]))
    assert response.status_code == 404


def _drawn(figure: dict) -> dict[str, object]:
    """What a timeline figure draws on its event lanes: each marker's lane and whether it is
    drawn as a failure (black), and the last-good / first-bad lines."""
    markers = {}
    for trace in figure["data"]:
        if "customdata" not in trace:  # a metric panel
            continue
        for (marker_id, lane, *_), colour in zip(
            trace["customdata"], trace["marker"]["color"], strict=True
        ):
            markers[str(marker_id)] = (lane, colour == "#000")
    lines = sorted(
        (s["x0"], s["line"]["color"]) for s in figure["layout"]["shapes"] if s["type"] == "line"
    )
    return {"markers": markers, "lines": lines}


def test_the_postmortem_draws_the_same_timeline_as_the_page(alice_client, loaded):
    page = json.loads(alice_client.get(reverse("timeline_data", args=[loaded.slug])).content)
    html = alice_client.get(reverse("postmortem_export", args=[loaded.slug, "html"])).content
    data = re.search(rb'id="pm-figure-data">(.*?)</script>', html, re.S)
    assert data is not None
    on_page, in_postmortem = _drawn(page["figure"]), _drawn(json.loads(data.group(1)))
    assert on_page["markers"] and on_page["lines"]
    assert in_postmortem == on_page
    # lm-eval runs carry a score and no verdict: healthy, never drawn as failures.
    scored = Event.objects.filter(
        incident=loaded, kind=EventKind.HARNESS_RUN, attrs__status=HarnessStatus.SCORED
    ).values_list("pk", flat=True)
    assert len(scored) >= 3
    for pk in scored:
        assert in_postmortem["markers"][str(pk)] == (Lane.HARNESS, False)
    assert not any(failed for _, failed in in_postmortem["markers"].values())


@pytest.fixture
def alice_client(client, user):
    client.force_login(user)
    return client
