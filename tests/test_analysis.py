"""The analysis glue: stored findings, stale runs, re-runs, config_diff, recorded weights."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from ingest.push import token_create
from timeline.analysis import analysis_run, current_analysis, public_json
from timeline.choices import FindingKind, RunStatus
from timeline.correlation import suspects
from timeline.correlation import weights as correlation_weights
from timeline.correlation.weights import WEIGHTS_VERSION, weights
from timeline.models import Analysis, Finding, Incident
from timeline.services import analysis_request


@pytest.fixture
def loaded(db, team, sample_bundle) -> Incident:
    call_command(
        "ingest",
        str(sample_bundle),
        incident="dsv4",
        team=team.name,
        no_analyze=True,
        stdout=StringIO(),
        stderr=StringIO(),
    )
    return Incident.objects.get(slug="dsv4")


def test_a_stale_run_never_overwrites_a_newer_one(loaded):
    old = analysis_request(incident_id=loaded.pk)
    new = analysis_request(incident_id=loaded.pk)
    assert new == old + 1
    assert analysis_run(incident_id=loaded.pk, version=old) is None  # superseded before start
    done = analysis_run(incident_id=loaded.pk, version=new)
    assert done is not None and done.status == RunStatus.DONE
    assert not Analysis.objects.filter(incident=loaded, version=old).exists()
    assert current_analysis(loaded) == done


def test_rerunning_replaces_the_findings(loaded):
    first = analysis_run(incident_id=loaded.pk, version=analysis_request(incident_id=loaded.pk))
    n = Finding.objects.filter(analysis=first).count()
    second = analysis_run(incident_id=loaded.pk, version=analysis_request(incident_id=loaded.pk))
    assert Finding.objects.filter(analysis=second).count() == n
    first.refresh_from_db()
    assert first.status == RunStatus.SUPERSEDED
    assert current_analysis(loaded) == second
    top = second.findings.get(kind=FindingKind.SUSPECT, rank=1)
    assert top.data["key"] == "SGLANG_SM120_MMA_TARGET_CTAS"
    assert top.event.config_change.new_value == "512"


def test_a_run_repeated_for_the_same_version_is_idempotent(loaded):
    version = analysis_request(incident_id=loaded.pk)
    a = analysis_run(incident_id=loaded.pk, version=version)
    b = analysis_run(incident_id=loaded.pk, version=version)
    assert a.pk == b.pk
    assert Analysis.objects.filter(incident=loaded).count() == 1


def test_operator_marks_override_the_engine(loaded):
    import datetime as dt

    loaded.first_bad_at = dt.datetime(2026, 11, 20, 23, 0, tzinfo=dt.UTC)
    loaded.save()
    run = analysis_run(incident_id=loaded.pk, version=analysis_request(incident_id=loaded.pk))
    assert run.result["first_bad"] == "2026-11-20T23:00:00+00:00"


def test_config_diff_prints_every_key_that_differs(loaded):
    out = StringIO()
    call_command(
        "config_diff",
        incident="dsv4",
        at="2026-11-20T17:31:00Z",
        vs="2026-11-20T23:39:00Z",
        stdout=out,
    )
    text = out.getvalue()
    assert "SGLANG_SM120_MMA_TARGET_CTAS  (unset)" in text
    for key in ("--chunked-prefill-size", "--tokenizer-path", "METRICS_PORT"):
        assert key in text
    assert "--mem-fraction-static" not in text


def test_the_page_polls_a_pending_analysis_and_refreshes_when_it_is_done(client, user, loaded):
    client.force_login(user)
    version = analysis_request(incident_id=loaded.pk)
    page = client.get(f"/incidents/{loaded.slug}/").content.decode()
    assert "re-running" in page
    status = client.get(f"/incidents/{loaded.slug}/analysis-status")
    assert status.status_code == 204 and "HX-Refresh" not in status
    analysis_run(incident_id=loaded.pk, version=version)
    status = client.get(f"/incidents/{loaded.slug}/analysis-status")
    assert status["HX-Refresh"] == "true"
    assert "re-running" not in client.get(f"/incidents/{loaded.slug}/").content.decode()


# --- the weights each analysis scored with -------------------------------------------------------


def test_every_analysis_records_the_weights_and_their_version(loaded):
    run = analysis_run(incident_id=loaded.pk, version=analysis_request(incident_id=loaded.pk))
    run.refresh_from_db()
    assert run.weights_version == WEIGHTS_VERSION
    assert run.weights == weights()
    assert run.weights["suspect_points"]["new_key"] == suspects.NEW_KEY_POINTS


def test_an_old_analysis_keeps_the_weights_it_was_scored_with_after_they_change(
    loaded, monkeypatch
):
    old = analysis_run(incident_id=loaded.pk, version=analysis_request(incident_id=loaded.pk))
    old_top = old.findings.get(kind=FindingKind.SUSPECT, rank=1)

    monkeypatch.setattr(suspects, "NEW_KEY_POINTS", suspects.NEW_KEY_POINTS + 2.0)
    monkeypatch.setattr(correlation_weights, "WEIGHTS_VERSION", WEIGHTS_VERSION + 1)
    new = analysis_run(incident_id=loaded.pk, version=analysis_request(incident_id=loaded.pk))

    old.refresh_from_db()
    new_top = new.findings.get(kind=FindingKind.SUSPECT, rank=1)
    assert old_top.data["key"] == new_top.data["key"] == "SGLANG_SM120_MMA_TARGET_CTAS"
    assert (old.weights_version, new.weights_version) == (WEIGHTS_VERSION, WEIGHTS_VERSION + 1)
    old_points = old.weights["suspect_points"]["new_key"]
    new_points = new.weights["suspect_points"]["new_key"]
    assert new_points == old_points + 2.0
    assert new_top.score == pytest.approx(old_top.score + new_points - old_points)
    assert public_json(loaded, old)["weights"] == {
        "version": WEIGHTS_VERSION,
        "values": old.weights,
    }


def test_the_api_the_json_command_and_the_page_show_the_weights(client, user, loaded):
    out = StringIO()
    call_command("analyze", loaded.slug, json=True, stdout=out, stderr=StringIO())
    printed = json.loads(out.getvalue())
    assert printed["weights"] == {"version": WEIGHTS_VERSION, "values": weights()}
    # The caveats and the reasons for first bad / last good travel with the verdict.
    stored = current_analysis(loaded)
    assert stored is not None
    assert printed["warnings"] == [
        f.explanation for f in stored.findings.filter(kind=FindingKind.WARNING).order_by("rank")
    ]
    assert printed["first_bad_reason"] and isinstance(printed["last_good_reason"], str)

    token = token_create(team=loaded.team, name="ci")
    response = client.get(
        f"/api/v1/incidents/{loaded.slug}/analysis", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.json()["weights"] == printed["weights"]

    client.force_login(user)
    page = client.get(f"/incidents/{loaded.slug}/").content.decode()
    assert f"weights v{WEIGHTS_VERSION}" in page
    assert f"Scored with correlation weights v{WEIGHTS_VERSION}" in page
    assert "&quot;exposure_cap&quot;: 1.5" in page


def test_an_analysis_stored_before_weights_were_versioned_says_so(client, user, loaded):
    run = analysis_run(incident_id=loaded.pk, version=analysis_request(incident_id=loaded.pk))
    Analysis.objects.filter(pk=run.pk).update(weights_version=None, weights={})
    run.refresh_from_db()
    assert public_json(loaded, run)["weights"] is None
    client.force_login(user)
    page = client.get(f"/incidents/{loaded.slug}/").content.decode()
    assert "Weights not recorded" in page
