"""Issue 16 on the server side: the verdict, suspects on the charts, one marker per merged
change, the event table's symptoms and searches, honest warnings and empty states, the live
version endpoint (test client, real Postgres)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evidence.vocabulary import EventKind, Lane
from tests.conftest import CUSTOM_METRICS
from timeline import charts
from timeline.analysis import merged_changes
from timeline.figure_data import incident_span
from timeline.forms import parse_utc
from timeline.models import ConfigChange, Event
from timeline.services import incident_create, note_add
from timeline.verdict import contribution, strongest_reasons

CULPRIT = "SGLANG_SM120_MMA_TARGET_CTAS"
CUSTOM = CUSTOM_METRICS


@pytest.fixture
def alice(client, user):
    client.force_login(user)
    return client


def _figure(client, incident, **params):
    return json.loads(client.get(reverse("timeline_data", args=[incident.slug]), params).content)


def _page(alice, incident) -> str:
    """The timeline page's HTML without the soft line breaks long keys carry (softbreak)."""
    html = alice.get(reverse("incident_timeline", args=[incident.slug])).content.decode()
    return html.replace("<wbr>", "")


def test_the_verdict_says_first_bad_last_good_and_the_top_suspect_with_its_reasons(alice, loaded):
    html = _page(alice, loaded)
    verdict = html[
        html.index('id="verdict"') : html.index("</section>", html.index('id="verdict"'))
    ]
    assert "2026-11-20 23:39:58 UTC" in verdict  # first bad
    assert "2026-11-20 17:30:00 UTC" in verdict  # last known good
    assert f"{CULPRIT}: (unset) → 512" in verdict
    assert "high confidence" in verdict  # 2.345 against -1.324: a clear lead
    # the strongest reasons first: relevance (+2), then new setting (+1)
    assert verdict.index("high relevance (+2)") < verdict.index("was not set before")
    assert "(-1.25)" not in verdict  # a reason that lowered the score is not a "strongest" one


def test_strongest_reasons_rank_by_what_they_added():
    reasons = ["late (+0.5)", "relevant (+2)", "stable for hours (-1.25)", "new (+1)"]
    assert strongest_reasons(reasons) == ["relevant (+2)", "new (+1)", "late (+0.5)"]
    assert contribution("no number") == 0.0


def test_close_scores_say_the_evidence_cannot_separate_them(alice, loaded):
    from timeline.analysis import current_analysis
    from timeline.choices import FindingKind

    analysis = current_analysis(loaded)
    second = analysis.findings.get(kind=FindingKind.SUSPECT, rank=2)
    top = analysis.findings.get(kind=FindingKind.SUSPECT, rank=1)
    second.score = top.score - 0.2
    second.save()
    html = alice.get(reverse("incident_timeline", args=[loaded.slug])).content.decode()
    assert 'id="verdict-ambiguous"' in html
    assert "cannot separate them" in html and "Try first:" in html
    tried = html[html.index('class="reasons verdict-try"') :]
    assert tried.index(CULPRIT) < tried.index(second.title.split(":")[0])


def test_the_analysis_revert_plan_says_what_to_try_first(alice, loaded):
    """When the analysis cannot separate suspects it stores a revert plan (``bisect``); the
    verdict shows its words and follows its order, not the scores."""
    from timeline.analysis import current_analysis

    analysis = current_analysis(loaded)
    analysis.result = {
        **analysis.result,
        "bisect": [
            "The evidence cannot separate 2 suspects (METRICS_PORT, "
            f"{CULPRIT}): no start ran one of them without the others long enough to tell. "
            "Revert them one at a time, in this order:",
            "1. Revert METRICS_PORT to 9400 (keep the others), restart and run 2 h of load.",
            f"2. Revert {CULPRIT} to (unset) (keep the others), restart and run 2 h of load.",
            "If every one is reverted and the symptoms persist, the cause is not among these.",
        ],
    }
    analysis.save()
    html = _page(alice, loaded)
    assert 'id="verdict-ambiguous"' in html
    assert "The evidence cannot separate 2 suspects" in html
    assert "Try first:</strong> 1. Revert METRICS_PORT to 9400" in html
    tried = html[html.index('class="reasons verdict-try"') :]
    assert tried.index("METRICS_PORT: 9400") < tried.index(CULPRIT)
    assert 'id="verdict-plan"' in html


def test_top_suspects_are_labelled_lines_on_every_chart(alice, loaded):
    from timeline.analysis import current_analysis
    from timeline.choices import FindingKind

    figure = _figure(alice, loaded)["figure"]
    layout = figure["layout"]
    suspects = list(
        current_analysis(loaded).findings.filter(kind=FindingKind.SUSPECT).order_by("rank")[:3]
    )
    lines = [s for s in layout["shapes"] if s["line"].get("color") == charts.SUSPECT_COLOUR]
    assert sorted(parse_utc(str(s["x0"])) for s in lines) == sorted(f.at for f in suspects)
    # paper-high: the line crosses the event lanes and every metric panel
    assert all(s["yref"] == "paper" and (s["y0"], s["y1"]) == (0, 1) for s in lines)
    labels = [a["text"] for a in layout["annotations"] if a.get("name", "").startswith("suspect")]
    assert labels == [f"#{f.rank} {f.data['key']}" for f in suspects]
    # their own change markers stand out from the other (red) changes
    config = next(t for t in figure["data"] if t.get("name") == "Config changes")
    marked = [
        h
        for h, c in zip(config["hovertext"], config["marker"]["color"], strict=True)
        if c == charts.SUSPECT_COLOUR
    ]
    assert all(h.startswith("suspect #") for h in marked)
    assert len(marked) == len(suspects)


def test_one_config_marker_per_merged_change_with_its_sources(alice, loaded):
    data = _figure(alice, loaded)["figure"]["data"]
    config = next(t for t in data if t.get("name") == "Config changes")
    recorded = ConfigChange.objects.filter(incident=loaded).count()
    merged = merged_changes(loaded)
    assert len(merged) < recorded  # the sample records several changes twice (doc + commit)
    assert len(config["x"]) == len(merged)
    culprit = next(h for h in config["hovertext"] if h.startswith(f"suspect #1: {CULPRIT}"))
    assert "sources: doc:DSV4_DEPLOY.md" in culprit and "commit:" in culprit
    # its detail lists both sources too
    event_id = next(
        c[0] for c, h in zip(config["customdata"], config["hovertext"], strict=True) if CULPRIT in h
    )
    detail = alice.get(reverse("event_detail", args=[loaded.slug, event_id])).content.decode()
    assert "one change, recorded by 2 sources" in detail
    assert "doc:DSV4_DEPLOY.md" in detail and "commit:" in detail


def _table(client, incident, **params):
    return client.get(reverse("event_table", args=[incident.slug]), params, HTTP_HX_REQUEST="true")


def test_the_symptoms_lane_lists_the_events_the_analysis_flags(alice, loaded):
    html = _table(alice, loaded, lane=Lane.SYMPTOMS).content.decode()
    assert "No events match." not in html
    dropped = Event.objects.filter(incident=loaded, kind=EventKind.REQUEST, ends_at__isnull=True)
    assert dropped.first().title in html
    assert "16 events" in html  # the 16 dropped requests of the sample


def test_search_finds_a_full_request_id_and_symptom_words(alice, loaded):
    event = Event.objects.filter(
        incident=loaded, kind=EventKind.REQUEST, ends_at__isnull=True
    ).first()
    rid = event.attrs["rid"]
    assert len(rid) > len(event.title) - len("request ")  # the title holds only its prefix
    html = _table(alice, loaded, q=rid).content.decode()
    assert event.title in html and "1 events" in html
    html = _table(alice, loaded, q="timeout").content.decode()
    assert "No events match." not in html and event.title in html


def test_a_dropped_requests_detail_says_it_was_dropped(alice, loaded):
    event = Event.objects.filter(
        incident=loaded, kind=EventKind.REQUEST, ends_at__isnull=True
    ).first()
    html = alice.get(reverse("event_detail", args=[loaded.slug, event.pk])).content.decode()
    assert 'id="request-dropped"' in html
    assert "Dropped:" in html and "never finished" in html
    assert f"Received {event.at:%Y-%m-%d %H:%M:%S} UTC" in html
    assert "the server kept logging for" in html


def test_custom_metrics_are_not_called_missing_and_are_shown_and_kept(alice, custom):
    html = alice.get(reverse("incident_timeline", args=[custom.slug])).content.decode()
    assert "no metrics were given" not in html
    assert "none of the metrics the analysis reads" in html and CUSTOM[0] in html
    assert "1,200 samples" in html
    # shown without picking: both custom metrics are checked
    for name in CUSTOM:
        assert f'value="{name}" checked' in html
    # a choice in the address survives a reload
    html = alice.get(
        reverse("incident_timeline", args=[custom.slug]), {"series": CUSTOM[1]}
    ).content.decode()
    assert f'value="{CUSTOM[1]}" checked' in html
    assert f'value="{CUSTOM[0]}" checked' not in html


def test_an_empty_incident_says_no_data_yet(alice, team, user):
    empty = incident_create(team=team, title="Nothing yet", timezone="UTC", user=user)
    assert incident_span(empty) is None
    figure = _figure(alice, empty)["figure"]
    assert figure["data"] == []
    assert any(a.get("text") == charts.NO_DATA for a in figure["layout"]["annotations"])
    assert figure["layout"]["xaxis"]["visible"] is False  # no Jan-Nov 2000 axis
    html = alice.get(reverse("incident_timeline", args=[empty.slug])).content.decode()
    assert "No data yet" in html


def test_whole_incident_is_an_explicit_range_never_autorange(alice, loaded):
    layout = _figure(alice, loaded)["figure"]["layout"]
    lo, hi = incident_span(loaded)
    for key, axis in layout.items():
        if key.startswith("xaxis"):
            assert axis["autorange"] is False
            assert [parse_utc(str(t)) for t in axis["range"]] == [lo, hi]


def test_picked_times_read_the_iso_form_the_page_shows():
    assert parse_utc("2026-11-20 21:10:00 UTC") == parse_utc("2026-11-20T21:10:00Z")
    with pytest.raises(ValueError):
        parse_utc("11/20/2026, 9:10:00 PM")


def test_the_version_changes_with_the_evidence_and_answers_304_otherwise(
    alice, loaded, user, client, outsider
):
    url = reverse("incident_version", args=[loaded.slug])
    first = alice.get(url)
    assert first.status_code == 200 and first["ETag"] == f'"{first.json()["version"]}"'
    assert "no-cache" in first["Cache-Control"]
    same = alice.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert same.status_code == 304 and same.content == b""
    note_add(incident=loaded, user=user, at=parse_utc("2026-11-20 23:00:00"), body="look here")
    changed = alice.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed.json()["version"] != first.json()["version"]
    # the page carries the version it shows, so the first poll already sees a later change
    html = alice.get(reverse("incident_timeline", args=[loaded.slug])).content.decode()
    assert f'data-version="{changed.json()["version"]}"' in html
    client.force_login(outsider)
    assert client.get(url).status_code == 404
