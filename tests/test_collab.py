"""Hypotheses, evidence, notes, operator marks, the audit log and permissions (test client and
services, real Postgres)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evidence.vocabulary import EventKind, Lane
from timeline import services
from timeline.analysis import analysis_run, current_analysis
from timeline.choices import FindingKind, HypothesisStatus
from timeline.models import AuditEntry, Event, Evidence, Hypothesis, Incident, Note

HX = {"HTTP_HX_REQUEST": "true"}
HOSTILE = (
    "<script>alert(1)</script> <img src=x onerror=alert(2)> "
    "[click](javascript:alert(3)) [data](data:text/html;base64,PHNjcmlwdD4=)"
)


def _url(name: str, incident: Incident, *args: object) -> str:
    return reverse(name, args=[incident.slug, *args])


def _event(incident: Incident, title: str = "SGLANG_X: (unset) → 1", **kw: object) -> Event:
    return Event.objects.create(
        incident=incident,
        at=kw.pop("at", dt.datetime(2026, 11, 20, 21, 10, tzinfo=dt.UTC)),
        kind=kw.pop("kind", EventKind.CONFIG_CHANGE),
        lane=kw.pop("lane", Lane.CONFIG),
        title=title,
        key=title,
        fingerprint=title[:64],
    )


@pytest.fixture
def alice(client: Client, user) -> Client:
    client.force_login(user)
    return client


# --- hypotheses ----------------------------------------------------------------------------------


def test_adding_a_hypothesis_starts_its_history_and_is_audited(alice, user, incident):
    response = alice.post(
        _url("hypothesis_board", incident),
        {"title": "The new CTAS setting starves decode", "body": "See *the* suspects."},
        **HX,
    )
    assert response.status_code == 204
    assert response["HX-Trigger"] == "collab-changed"
    h = Hypothesis.objects.get(incident=incident)
    assert (h.title, h.status, h.author) == (
        "The new CTAS setting starves decode",
        HypothesisStatus.OPEN,
        user,
    )
    history = list(h.status_changes.values_list("old_status", "new_status", "actor"))
    assert history == [("", "open", user.pk)]
    entry = AuditEntry.objects.get(incident=incident, action="hypothesis.create")
    assert entry.actor == user and entry.target == f"hypothesis:{h.pk}"


def test_status_changes_are_dated_and_name_who_made_them(alice, user, incident):
    h = services.hypothesis_create(incident=incident, user=user, title="CTAS")
    for status in ("supported", "confirmed"):
        response = alice.post(
            _url("hypothesis_status", incident, h.pk), {"status": status, "note": "why"}, **HX
        )
        assert response.status_code == 204
    h.refresh_from_db()
    assert h.status == HypothesisStatus.CONFIRMED
    steps = list(h.status_changes.order_by("at", "id"))
    assert [(s.old_status, s.new_status) for s in steps] == [
        ("", "open"),
        ("open", "supported"),
        ("supported", "confirmed"),
    ]
    assert all(s.actor == user and s.at is not None for s in steps)
    assert steps[0].at <= steps[1].at <= steps[2].at
    audited = AuditEntry.objects.filter(incident=incident, action="hypothesis.status")
    assert sorted(e.data["status"][1] for e in audited) == ["confirmed", "supported"]
    # The board shows the history.
    html = alice.get(_url("hypothesis_board", incident)).content.decode()
    assert "supported → <strong>confirmed</strong> by alice" in html


def test_bad_input_gets_a_clear_error_and_changes_nothing(alice, user, incident, other_team):
    h = services.hypothesis_create(incident=incident, user=user, title="CTAS")
    foreign = services.incident_create(team=other_team, title="Elsewhere")
    foreign_event = _event(foreign)
    audit_before = AuditEntry.objects.count()
    cases = [
        (_url("hypothesis_board", incident), {"title": "   "}, "title"),
        (_url("hypothesis_status", incident, h.pk), {"status": "proven"}, "status"),
        (_url("hypothesis_status", incident, h.pk), {"status": "open"}, "open already"),
        (
            _url("hypothesis_evidence_add", incident, h.pk),
            {"stance": "supports", "event": foreign_event.pk},
            "no event",
        ),
        (_url("hypothesis_evidence_add", incident, h.pk), {"stance": "supports"}, "needs"),
        (
            _url("hypothesis_evidence_add", incident, h.pk),
            {"stance": "maybe", "note": "x"},
            "stance",
        ),
        (_url("note_add", incident), {"at": "yesterday", "body": "x"}, "is not a time"),
        (_url("note_add", incident), {"at": "2026-11-20T21:00", "body": ""}, "body"),
        (_url("incident_marks", incident), {"action": "set_first_bad"}, "time of the mark"),
        (_url("incident_marks", incident), {"action": "clear_first_bad"}, "No mark to clear"),
    ]
    for url, data, expected in cases:
        response = alice.post(url, data, **HX)
        assert response.status_code == 422, (url, data)
        assert expected in response.content.decode(), (url, data, response.content)
    assert Evidence.objects.count() == 0
    assert Note.objects.count() == 0
    assert Hypothesis.objects.get(pk=h.pk).status == HypothesisStatus.OPEN
    assert AuditEntry.objects.count() == audit_before
    # Without htmx: a redirect back with the error as a message.
    response = alice.post(_url("hypothesis_board", incident), {"title": ""}, follow=True)
    assert "title" in response.content.decode()
    assert Hypothesis.objects.count() == 1


def test_accepting_the_ruled_out_finding_gives_a_refuted_hypothesis_with_its_evidence(
    alice, loaded
):
    analysis = current_analysis(loaded)
    ruled_out = analysis.findings.get(kind=FindingKind.RULED_OUT)
    panel = alice.get(_url("hypothesis_panel", loaded)).content.decode()
    assert f'data-finding="{ruled_out.pk}"' in panel
    response = alice.post(_url("finding_accept", loaded, ruled_out.pk), **HX)
    assert response.status_code == 204
    h = Hypothesis.objects.get(incident=loaded)
    assert h.title == "Model quality caused the incident"
    assert h.status == HypothesisStatus.REFUTED
    evidence = h.evidence.get()
    assert (evidence.finding, evidence.stance) == (ruled_out, "refutes")
    assert "harness runs" in h.body
    # Once accepted, it is not offered again and a second click changes nothing.
    panel = alice.get(_url("hypothesis_panel", loaded)).content.decode()
    assert f'data-finding="{ruled_out.pk}"' not in panel
    again = alice.post(_url("finding_accept", loaded, ruled_out.pk), **HX)
    assert again.status_code == 422 and "already" in again.content.decode()
    assert Hypothesis.objects.filter(incident=loaded).count() == 1


def test_evidence_links_an_event_or_finding_and_can_be_removed(alice, user, incident):
    h = services.hypothesis_create(incident=incident, user=user, title="CTAS")
    event = _event(incident)
    response = alice.post(
        _url("evidence_add", incident),
        {"hypothesis": h.pk, "event": event.pk, "stance": "supports", "note": "made 2 h before"},
        **HX,
    )
    assert response.status_code == 204
    evidence = Evidence.objects.get(hypothesis=h)
    assert (evidence.event, evidence.stance, evidence.note, evidence.author) == (
        event,
        "supports",
        "made 2 h before",
        user,
    )
    html = alice.get(_url("hypothesis_board", incident), **HX).content.decode()
    assert "SGLANG_X: (unset) → 1" in html and "made 2 h before" in html
    response = alice.post(_url("evidence_remove", incident, evidence.pk), **HX)
    assert response.status_code == 204
    assert not Evidence.objects.filter(pk=evidence.pk).exists()
    actions = list(
        AuditEntry.objects.filter(incident=incident).order_by("id").values_list("action", flat=True)
    )
    assert actions[-2:] == ["evidence.add", "evidence.remove"]


def test_editing_and_deleting_a_hypothesis_is_audited(alice, user, incident):
    h = services.hypothesis_create(incident=incident, user=user, title="CTAS", body="old")
    alice.post(_url("hypothesis_edit", incident, h.pk), {"title": "CTAS=512", "body": "new"}, **HX)
    h.refresh_from_db()
    assert (h.title, h.body) == ("CTAS=512", "new")
    entry = AuditEntry.objects.get(action="hypothesis.update")
    assert entry.data == {"title": ["CTAS", "CTAS=512"], "body": ["old", "new"]}
    alice.post(_url("hypothesis_delete", incident, h.pk), **HX)
    assert not Hypothesis.objects.filter(pk=h.pk).exists()
    assert AuditEntry.objects.get(action="hypothesis.delete").data["title"] == "CTAS=512"


# --- notes ---------------------------------------------------------------------------------------


def test_notes_are_pinned_to_a_moment_and_drawn_on_the_notes_lane(alice, user, incident):
    response = alice.post(
        _url("note_add", incident),
        {"at": "2026-11-20T23:41:00", "body": "restarted pod <b>2</b>"},
        **HX,
    )
    assert response.status_code == 204
    note = Note.objects.get(incident=incident)
    assert note.at == dt.datetime(2026, 11, 20, 23, 41, tzinfo=dt.UTC)  # no zone given: UTC
    figure = json.loads(alice.get(_url("timeline_data", incident)).content)["figure"]
    lane = next(t for t in figure["data"] if t.get("name") == "Notes")
    assert lane["customdata"] == [[f"n{note.pk}", "notes", "2026-11-20T23:41:00Z"]]
    assert lane["hovertext"] == ["restarted pod &lt;b&gt;2&lt;/b&gt;"]
    # A zoomed window without the note leaves the lane out.
    figure = json.loads(
        alice.get(
            _url("timeline_data", incident),
            {"start": "2026-11-20T10:00:00Z", "end": "2026-11-20T11:00:00Z"},
        ).content
    )["figure"]
    assert "Notes" not in {t.get("name") for t in figure["data"]}
    detail = alice.get(_url("note_detail", incident, note.pk)).content.decode()
    assert f'data-note="{note.pk}"' in detail and "restarted pod &lt;b&gt;2&lt;/b&gt;" in detail
    alice.post(
        _url("note_detail", incident, note.pk),
        {"at": "2026-11-20T23:42:00Z", "body": "restarted pod 2"},
        **HX,
    )
    note.refresh_from_db()
    assert note.at.minute == 42
    response = alice.post(_url("note_delete", incident, note.pk), **HX)
    assert response["HX-Retarget"] == "#detail"
    assert not Note.objects.exists()
    actions = list(AuditEntry.objects.filter(target=f"note:{note.pk}").values_list("action"))
    assert sorted(a for (a,) in actions) == ["note.add", "note.delete", "note.update"]


# --- marks ---------------------------------------------------------------------------------------


def test_marks_set_and_clear_rerun_the_analysis(
    alice, user, loaded, django_capture_on_commit_callbacks
):
    version = loaded.analysis_version
    with django_capture_on_commit_callbacks() as callbacks:
        response = alice.post(
            _url("incident_marks", loaded),
            {"action": "set_last_good", "at": "2026-11-20T21:20:00"},
        )
    assert response.status_code == 302
    assert len(callbacks) == 1  # the analysis run is enqueued after commit
    loaded.refresh_from_db()
    assert loaded.last_good_at == dt.datetime(2026, 11, 20, 21, 20, tzinfo=dt.UTC)
    assert loaded.analysis_version == version + 1
    run = analysis_run(incident_id=loaded.pk, version=loaded.analysis_version)
    assert run.result["last_good"] == "2026-11-20T21:20:00+00:00"
    # The CTAS change (21:10) is now before last good: no longer a suspect.
    assert "SGLANG_SM120_MMA_TARGET_CTAS" not in [s["key"] for s in run.result["suspects"]]
    page = alice.get(_url("incident_timeline", loaded)).content.decode()
    assert 'id="mark-last-good"' in page

    # Last good must stay before first bad: refused, nothing changes.
    bad = alice.post(
        _url("incident_marks", loaded),
        {"action": "set_first_bad", "at": "2026-11-20T21:00:00Z"},
        **HX,
    )
    assert bad.status_code == 422 and "before the first bad" in bad.content.decode()
    loaded.refresh_from_db()
    assert loaded.first_bad_at is None and loaded.analysis_version == version + 1

    alice.post(_url("incident_marks", loaded), {"action": "clear_last_good"}, **HX)
    loaded.refresh_from_db()
    assert loaded.last_good_at is None
    run = analysis_run(incident_id=loaded.pk, version=loaded.analysis_version)
    assert run.result["last_good"] == "2026-11-20T17:30:00+00:00"
    assert run.result["suspects"][0]["key"] == "SGLANG_SM120_MMA_TARGET_CTAS"
    audited = list(
        AuditEntry.objects.filter(incident=loaded, action__startswith="mark.")
        .order_by("id")
        .values_list("action", "data")
    )
    assert audited == [
        ("mark.set", {"last_good": [None, "2026-11-20T21:20:00+00:00"]}),
        ("mark.clear", {"last_good": ["2026-11-20T21:20:00+00:00", None]}),
    ]


# --- incident fields and the audit log -----------------------------------------------------------


def test_editing_the_incident_audits_each_changed_field(alice, user, incident):
    response = alice.post(
        _url("incident_edit", incident),
        {
            "title": incident.title,
            "status": "resolved",
            "summary": "Decode wedged.",
            "resolved_at": "2026-11-21T02:00:00Z",
            "action_items": "- alert on idle GPUs",
        },
    )
    assert response.status_code == 302
    incident.refresh_from_db()
    assert incident.status == "resolved"
    entry = AuditEntry.objects.get(incident=incident, action="incident.update")
    assert entry.data == {
        "status": ["open", "resolved"],
        "summary": ["", "Decode wedged."],
        "resolved_at": [None, "2026-11-21T02:00:00+00:00"],
        "action_items": ["", "- alert on idle GPUs"],
    }
    # Resolved without a time: refused, nothing changes.
    response = alice.post(
        _url("incident_edit", incident),
        {"title": "x", "status": "resolved", "resolved_at": ""},
    )
    assert response.status_code == 422
    assert "needs the time it was resolved" in response.content.decode()
    incident.refresh_from_db()
    assert incident.title == "DSV4 decode wedge"
    html = alice.get(_url("audit_log", incident)).content.decode()
    assert "incident.update" in html and "open → resolved" in html
    assert "incident.create" in html


def test_the_audit_log_is_append_only_in_the_database(user, incident, django_user_model):
    services.note_add(incident=incident, user=user, at=dt.datetime.now(dt.UTC), body="x")
    entry = AuditEntry.objects.filter(incident=incident).first()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(pk=entry.pk).update(action="forged")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(pk=entry.pk).delete()
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cur,
    ):
        cur.execute("UPDATE timeline_auditentry SET data = '{}' WHERE id = %s", [entry.pk])
    assert AuditEntry.objects.get(pk=entry.pk).action == entry.action
    # Deleting the user keeps the entries (actor nulled); deleting the incident takes them along.
    bob = django_user_model.objects.create_user("bob")
    services.note_add(incident=incident, user=bob, at=dt.datetime.now(dt.UTC), body="y")
    bob.delete()
    assert AuditEntry.objects.filter(incident=incident, actor__isnull=True).exists()
    services.incident_delete(incident=incident)
    assert not AuditEntry.objects.filter(incident_id=incident.pk).exists()


# --- permissions, CSRF, hostile input, query counts ----------------------------------------------


def test_other_teams_get_404_and_change_nothing(client, outsider, user, incident):
    h = services.hypothesis_create(incident=incident, user=user, title="CTAS")
    note = services.note_add(incident=incident, user=user, at=dt.datetime.now(dt.UTC), body="n")
    client.force_login(outsider)
    for name, args in [
        ("hypothesis_board", ()),
        ("hypothesis_panel", ()),
        ("audit_log", ()),
        ("incident_edit", ()),
        ("note_detail", (note.pk,)),
        ("postmortem_export", ("md",)),
        ("postmortem_export", ("html",)),
    ]:
        assert client.get(_url(name, incident, *args)).status_code == 404, name
    before = AuditEntry.objects.count()
    for name, args, data in [
        ("hypothesis_board", (), {"title": "mine now"}),
        ("hypothesis_status", (h.pk,), {"status": "refuted"}),
        ("hypothesis_edit", (h.pk,), {"title": "x"}),
        ("hypothesis_delete", (h.pk,), {}),
        ("evidence_add", (), {"hypothesis": h.pk, "stance": "refutes", "note": "x"}),
        ("note_add", (), {"at": "2026-11-20T21:00", "body": "x"}),
        ("note_delete", (note.pk,), {}),
        ("incident_marks", (), {"action": "set_first_bad", "at": "2026-11-20T21:00"}),
        ("incident_edit", (), {"title": "x", "status": "open"}),
    ]:
        assert client.post(_url(name, incident, *args), data).status_code == 404, name
    assert AuditEntry.objects.count() == before
    assert Hypothesis.objects.get(pk=h.pk).status == "open"
    assert Note.objects.filter(pk=note.pk).exists()
    # Anonymous visitors are sent to the login page.
    client.logout()
    response = client.get(_url("hypothesis_board", incident))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_writes_need_the_csrf_token(user, incident):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    response = strict.post(_url("hypothesis_board", incident), {"title": "no token"})
    assert response.status_code == 403
    assert not Hypothesis.objects.exists()


def test_hostile_markdown_is_rendered_without_raw_html_or_script_links(alice, user, incident):
    h = services.hypothesis_create(incident=incident, user=user, title="<b>bold</b>", body=HOSTILE)
    services.evidence_add(hypothesis=h, user=user, stance="context", note=HOSTILE)
    note = services.note_add(incident=incident, user=user, at=dt.datetime.now(dt.UTC), body=HOSTILE)
    pages = [
        alice.get(_url("hypothesis_board", incident)).content.decode(),
        alice.get(_url("hypothesis_panel", incident)).content.decode(),
        alice.get(_url("note_detail", incident, note.pk)).content.decode(),
        alice.get(_url("audit_log", incident)).content.decode(),
    ]
    for html in pages:
        assert "<script>alert" not in html
        assert "<img src=x" not in html
        assert 'href="javascript:' not in html and 'href="data:' not in html
        assert "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[0]
    assert "&lt;b&gt;bold&lt;/b&gt;" in pages[0]


def test_the_board_and_panel_need_a_bounded_number_of_queries(alice, user, incident):
    made = iter(range(1000))

    def add(n: int) -> None:
        for _ in range(n):
            i = next(made)
            h = services.hypothesis_create(incident=incident, user=user, title=f"H{i}")
            event = _event(incident, title=f"E{i}")
            services.evidence_add(hypothesis=h, user=user, stance="supports", event=event)
            services.hypothesis_set_status(hypothesis=h, user=user, status="supported")

    add(2)
    counts = []
    for _ in range(2):
        for name in ("hypothesis_board", "hypothesis_panel"):
            with CaptureQueriesContext(connection) as queries:
                assert alice.get(_url(name, incident)).status_code == 200
            counts.append(len(queries))
        add(8)
    assert counts[:2] == counts[2:], counts
    assert max(counts) <= 10, counts
