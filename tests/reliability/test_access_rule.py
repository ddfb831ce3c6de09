"""One permission rule for every action (issue 15.7): a member of the incident's team and a
superuser outside it may do everything, anyone else nothing (a 404, as for no incident).

Walked over every URL under an incident, GET and POST, each role on an incident of its own (a
delete by one role must not turn the next role's request into a 404): the member's and the
superuser's answers are the same, the outsider's is a 404 (or a 405 for a method no one may use)
and leaves the incident as it was.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from ingest import push
from ingest.services import bundles, loading
from tests.reliability.test_security import _path, _routes
from timeline.choices import FindingKind, RunStatus
from timeline.models import (
    Analysis,
    Artifact,
    AuditEntry,
    DataSource,
    Event,
    Evidence,
    Finding,
    Hypothesis,
    Incident,
    Note,
    RemoteSeries,
)
from timeline.services import incident_create

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ROUTES = sorted({(r, n) for r, n in _routes() if r.startswith("incidents/<slug:slug>/")})
ROLES = ("member", "superuser", "outsider")


def _world(incident, user) -> tuple[dict[str, str], dict[str, str]]:
    """One of everything a URL can name in the incident; the URL values and a POST body that
    every write accepts."""
    bundles.path_register(incident=incident, path=FIXTURES / "docs" / "DSV4_DEPLOY.md")
    artifact = Artifact.objects.get(incident=incident)
    assert loading.artifact_ingest(artifact_id=artifact.pk).status == RunStatus.DONE
    event = Event.objects.filter(incident=incident).first()
    analysis = Analysis.objects.create(incident=incident, version=1, status=RunStatus.DONE)
    finding = Finding.objects.create(
        analysis=analysis, kind=FindingKind.SUSPECT, rank=1, event=event, title="suspect"
    )
    hypothesis = Hypothesis.objects.create(incident=incident, title="CTAS=512", author=user)
    evidence = Evidence.objects.create(
        hypothesis=hypothesis, event=event, stance="supports", author=user
    )
    note = Note.objects.create(
        incident=incident, at=dt.datetime(2026, 11, 20, 23, 40, tzinfo=dt.UTC), body="hi"
    )
    source, _ = DataSource.objects.get_or_create(
        team=incident.team, name="prom", defaults={"url": "http://127.0.0.1:9/"}
    )
    remote = RemoteSeries.objects.create(
        incident=incident, source=source, query="up", name="up", created_by=user
    )
    values = {
        "slug": incident.slug,
        "event_id": str(event.pk),
        "finding_id": str(finding.pk),
        "hypothesis_id": str(hypothesis.pk),
        "evidence_id": str(evidence.pk),
        "note_id": str(note.pk),
        "series_id": str(remote.pk),
        "fmt": "md",
        "kind": "events",
    }
    data = {
        "title": "written",
        "body": "written",
        "status": "refuted",
        "note": "written",
        "at": "2026-11-20T21:00",
        "action": "set_first_bad",
        "stance": "refutes",
        "event": str(event.pk),
        "hypothesis": str(hypothesis.pk),
    }
    return values, data


@pytest.fixture
def users(user, outsider, django_user_model) -> dict[str, object]:
    """Alice (a member), a superuser in no team, and Mallory (of another team)."""
    root = django_user_model.objects.create_superuser("root", password="correct horse battery")
    return {"member": user, "superuser": root, "outsider": outsider}


def _state(incident: Incident) -> tuple:
    incident.refresh_from_db()
    return (
        Hypothesis.objects.filter(incident=incident).count(),
        Evidence.objects.filter(hypothesis__incident=incident).count(),
        Note.objects.filter(incident=incident).count(),
        AuditEntry.objects.filter(incident=incident).count(),
        Artifact.objects.filter(incident=incident).count(),
        (incident.title, incident.status, incident.first_bad_at),
    )


def _change(answer: tuple) -> tuple:
    """What a request changed: rows added or removed per table, incident fields changed."""
    _, before, after = answer
    counts = tuple(b - a for a, b in zip(before[:5], after[:5], strict=True))
    fields = tuple(a != b for a, b in zip(before[5], after[5], strict=True))
    return counts + fields


@pytest.mark.attack("action URL x role", count=len(ROLES))
@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize(("route", "name"), ROUTES, ids=[n for _, n in ROUTES])
def test_one_rule_for_every_action(client, team, user, users, route, name, method):
    """Each role on a fresh incident: the answers of the member and of the superuser outside
    the team are the same, the outsider's a 404 (or a 405) that changed nothing."""
    assert not team.members.filter(pk=users["superuser"].pk).exists()
    answers = {}
    for role in ROLES:
        # A fresh incident per role (the audit log is append-only: incidents stay).
        incident = incident_create(team=team, title=f"DSV4 decode wedge {role}", user=user)
        values, data = _world(incident, user)
        before = _state(incident)
        client.force_login(users[role])
        path = _path(route, values)
        response = client.get(path) if method == "get" else client.post(path, data)
        answers[role] = (response.status_code, before, _state(incident))
    member, superuser, outsider = (answers[r] for r in ROLES)
    where = f"{method.upper()} {name}"
    assert member[0] not in (403, 404), (where, member[0])
    assert superuser[0] == member[0], (where, "superuser", superuser[0], "member", member[0])
    assert _change(superuser) == _change(member), (where, "the same write, the same change")
    assert outsider[0] in (404, 405), (where, outsider[0])
    if member[0] != 405:
        assert outsider[0] == 404, where
    assert outsider[1] == outsider[2], where  # the outsider changed nothing


def test_everyone_the_rule_allows_may_create_incidents_in_the_team(client, team, users):
    for role, allowed in (("member", True), ("superuser", True), ("outsider", False)):
        client.force_login(users[role])
        before = Incident.objects.filter(team=team).count()
        client.post("/incidents/new", {"title": f"by {role}", "team": team.pk})
        assert Incident.objects.filter(team=team).count() == before + allowed, role


def test_a_token_acts_for_its_team_only(client, incident, other_team):
    body = b'{"events": [{"at": "2026-11-20T20:00:00Z", "title": "t"}]}'
    for team, status in ((incident.team, 201), (other_team, 404)):
        token = push.token_create(team=team, name="ci")
        response = client.post(
            f"/api/v1/incidents/{incident.slug}/events",
            data=body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        assert response.status_code == status
