"""The push API: token auth, team scope, validation, idempotency, one transaction."""

from __future__ import annotations

import json

import pytest

from ingest.push import token_create
from timeline.models import Artifact, ConfigChange, Event

URL = "/api/v1/incidents/{slug}/{kind}"


@pytest.fixture
def token(team) -> str:
    return token_create(team=team, name="ci")


def _post(client, slug: str, kind: str, body: object, token: str | None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    data = body if isinstance(body, bytes) else json.dumps(body)
    return client.post(
        URL.format(slug=slug, kind=kind), data=data, content_type="application/json", **headers
    )


def test_pushing_harness_runs_loads_them_once(client, incident, token):
    body = {
        "runs": [
            {
                "ts": "2026-11-20T12:00:00-08:00",
                "suite": "stability",
                "case": "long_context",
                "status": "pass",
                "score": 0.95,
                "threshold": 0.9,
            },
            {
                "ts": "2026-11-20T12:30:00-08:00",
                "suite": "stability",
                "case": "long_context",
                "status": "fail",
                "score": 0.5,
                "threshold": 0.9,
            },
        ]
    }
    response = _post(client, incident.slug, "harness-runs", body, token)
    assert response.status_code == 201, response.content
    assert response.json()["counts"]["events"] == 2
    runs = Event.objects.filter(incident=incident, kind="harness_run").order_by("at")
    assert [r.attrs["status"] for r in runs] == ["pass", "fail"]
    assert runs[0].at.isoformat() == "2026-11-20T20:00:00+00:00"
    again = _post(client, incident.slug, "harness-runs", body, token)
    assert again.status_code == 201
    assert Event.objects.filter(incident=incident).count() == 2
    assert Artifact.objects.filter(incident=incident).count() == 1


def test_pushing_config_changes_and_events(client, incident, token):
    changes = {
        "changes": [
            {
                "key": "SGLANG_SM120_MMA_TARGET_CTAS",
                "old": None,
                "new": "512",
                "at": "2026-11-20T21:10:00Z",
                "ref": "deploy-42",
            }
        ]
    }
    assert _post(client, incident.slug, "config-changes", changes, token).status_code == 201
    change = ConfigChange.objects.get(incident=incident)
    assert (change.key, change.old_value, change.new_value, change.source) == (
        "SGLANG_SM120_MMA_TARGET_CTAS",
        None,
        "512",
        "api",
    )
    events = {
        "events": [
            {
                "at": "2026-11-20T23:41:00Z",
                "title": "pager fired",
                "lane": "server",
                "kind": "log_error",
                "body": "p1 page",
            }
        ]
    }
    assert _post(client, incident.slug, "events", events, token).status_code == 201
    assert Event.objects.filter(incident=incident, title="pager fired").exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "not valid JSON"),
        ({"runs": []}, "'runs' is empty"),
        (
            {
                "runs": [
                    {"ts": "2026-11-20T12:00:00Z", "suite": "s", "case": "c", "status": "pass"},
                    {"ts": "yesterday", "suite": "s", "case": "c", "status": "pass"},
                ]
            },
            "runs[1]: ",
        ),
        ({"items": []}, '{"runs": [...]}'),
    ],
)
def test_a_bad_push_is_rejected_whole_with_a_clear_error(client, incident, token, body, message):
    response = _post(client, incident.slug, "harness-runs", body, token)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert Event.objects.filter(incident=incident).count() == 0
    assert Artifact.objects.filter(incident=incident).count() == 0


def test_a_naive_time_is_refused(client, incident, token):
    body = {"changes": [{"key": "K", "new": "1", "at": "2026-11-20T21:10:00"}]}
    response = _post(client, incident.slug, "config-changes", body, token)
    assert response.status_code == 400
    assert "has no zone" in response.json()["error"]


def test_no_token_or_a_wrong_one_is_401_and_another_team_is_404(
    client, incident, token, other_team
):
    body = {"events": [{"at": "2026-11-20T23:41:00Z", "title": "x"}]}
    assert _post(client, incident.slug, "events", body, None).status_code == 401
    assert _post(client, incident.slug, "events", body, "itl_wrong").status_code == 401
    theirs = token_create(team=other_team, name="theirs")
    assert _post(client, incident.slug, "events", body, theirs).status_code == 404
    assert Event.objects.count() == 0


def test_the_analysis_endpoint_returns_the_public_shape(client, incident, token):
    response = client.get(
        f"/api/v1/incidents/{incident.slug}/analysis", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200
    assert set(response.json()) == {
        "incident",
        "first_bad",
        "first_bad_reason",
        "last_good",
        "last_good_reason",
        "warnings",
        "suspects",
        "excluded",
        "ruled_out",
        "bisect",
        "drift",
        "restarts",
        "weights",
    }
    assert response.json()["weights"] is None  # no analysis yet
