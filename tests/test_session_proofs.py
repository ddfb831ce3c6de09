"""Proofs kept per process (timeline.proofs): a session's proven access to an incident answers
its next timeline.json and version polls with no query, and is forgotten when anything it rests
on changes, whoever changes it: another process (Postgres's announcement, migration 0021) or
this one (its own writes, at once). Real Postgres, real LISTEN/NOTIFY; the other process is a
connection of its own."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from django.contrib.auth.hashers import make_password
from django.db import connection
from django.urls import reverse

from timeline import access, proofs
from timeline.models import Incident

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the fused query ran (the real query, counted)."""
    calls: list[int] = []
    real = access._FUSED.row

    def row(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(access._FUSED, "row", row)
    return calls


def _until(predicate: Callable[[], bool], timeout: float = 5.0) -> float:
    began = time.monotonic()
    while not predicate():
        assert time.monotonic() - began < timeout, "not announced in time"
        time.sleep(0.001)
    return time.monotonic() - began


def _poll(client: Any, slug: str) -> Any:
    return client.get(reverse("incident_version", args=[slug]))


def _proven_then_kept(client: Any, user: Any, slug: str, counted: list[int]) -> None:
    client.force_login(user)
    assert _poll(client, slug).status_code == 200
    assert proofs.PROOFS.kept() == 1
    counted.clear()
    assert _poll(client, slug).status_code == 200
    assert counted == []


def test_a_kept_proof_answers_with_no_query(
    client: Any, user: Any, custom: Incident, counted: list[int]
) -> None:
    client.force_login(user)
    path = reverse("timeline_data", args=[custom.slug])
    first = client.get(path)
    assert first.status_code == 200 and counted  # proved by the query
    assert proofs.PROOFS.listening() and proofs.PROOFS.kept() == 1
    counted.clear()
    for _ in range(3):
        again = client.get(path)
        assert again.status_code == 200 and again["ETag"] == first["ETag"]
        assert again.content == first.content
    poll = _poll(client, custom.slug)
    assert poll.status_code == 200
    assert counted == []  # neither the figure nor the poll asked Postgres who this is


WRITES_ELSEWHERE = {
    # what another process commits -> what the same session gets next
    "logout": ("DELETE FROM django_session WHERE session_key = %(key)s", 302),
    "expired": (
        "UPDATE django_session SET expire_date = now() - interval '1 s' "
        "WHERE session_key = %(key)s",
        302,
    ),
    "removed from team": (
        "DELETE FROM timeline_team_members WHERE user_id = %(user)s",
        404,
    ),
    "deactivated": ("UPDATE auth_user SET is_active = false WHERE id = %(user)s", 302),
    "new password": ("UPDATE auth_user SET password = %(password)s WHERE id = %(user)s", 302),
    "incident moved": (
        "UPDATE timeline_incident SET team_id = %(other_team)s WHERE id = %(incident)s",
        404,
    ),
}


@pytest.mark.parametrize("change", list(WRITES_ELSEWHERE))
def test_a_change_committed_elsewhere_forgets_the_proof(
    change: str,
    client: Any,
    user: Any,
    other_team: Any,
    custom: Incident,
    counted: list[int],
    elsewhere: psycopg.Connection[Any],
) -> None:
    _proven_then_kept(client, user, custom.slug, counted)
    sql, status = WRITES_ELSEWHERE[change]
    key = client.cookies["sessionid"].value
    elsewhere.execute(
        sql,
        {
            "key": key,
            "user": user.pk,
            "password": make_password("another secret phrase"),
            "other_team": other_team.pk,
            "incident": custom.pk,
        },
    )
    took = _until(lambda: proofs.PROOFS.kept() == 0)  # read by the process's listening thread
    assert took < 5.0
    refused = _poll(client, custom.slug)
    assert refused.status_code == status, change
    assert counted  # proved again, and refused
    assert proofs.PROOFS.kept() == 0


def test_new_evidence_elsewhere_gives_the_new_version(
    client: Any, user: Any, custom: Incident, counted: list[int], elsewhere: Any
) -> None:
    _proven_then_kept(client, user, custom.slug, counted)
    before = _poll(client, custom.slug)["ETag"]
    elsewhere.execute("INSERT INTO timeline_incidentchange (incident_id) VALUES (%s)", (custom.pk,))
    _until(lambda: proofs.PROOFS.kept() == 0)
    after = _poll(client, custom.slug)
    assert after.status_code == 200 and after["ETag"] != before


def test_this_process_own_write_forgets_at_once(
    client: Any, user: Any, team: Any, custom: Incident, counted: list[int]
) -> None:
    """No wait for the announcement: this process's write through Django forgets first."""
    _proven_then_kept(client, user, custom.slug, counted)
    team.members.remove(user)
    assert proofs.PROOFS.kept() == 0
    assert _poll(client, custom.slug).status_code == 404


def test_logging_out_forgets_at_once(
    client: Any, user: Any, custom: Incident, counted: list[int]
) -> None:
    _proven_then_kept(client, user, custom.slug, counted)
    key = client.cookies["sessionid"].value
    assert client.post(reverse("logout")).status_code in (200, 302)
    client.cookies["sessionid"] = key  # the old cookie, replayed
    assert _poll(client, custom.slug).status_code == 302


def test_a_lost_listener_keeps_nothing_until_it_listens_again(
    client: Any, user: Any, custom: Incident, counted: list[int], elsewhere: Any
) -> None:
    _proven_then_kept(client, user, custom.slug, counted)
    pid = proofs.PROOFS.listener_pid()
    assert pid is not None
    killed = elsewhere.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,)).fetchone()
    assert killed == (True,)
    _until(lambda: not proofs.PROOFS.listening())  # seen by its thread: everything forgotten
    assert proofs.PROOFS.kept() == 0
    counted.clear()
    assert _poll(client, custom.slug).status_code == 200
    assert counted  # proved by the query meanwhile
    time.sleep(proofs.RETRY_SECONDS)
    assert _poll(client, custom.slug).status_code == 200
    new_pid = proofs.PROOFS.listener_pid()
    assert new_pid is not None and new_pid != pid
    assert proofs.PROOFS.kept() == 1  # kept again once listening


def test_a_session_past_its_expiry_is_proved_again(
    client: Any, user: Any, custom: Incident, counted: list[int]
) -> None:
    """The kept expiry is checked by the process's clock, as the query checks it."""
    _proven_then_kept(client, user, custom.slug, counted)
    key = client.cookies["sessionid"].value
    proof, ticket = proofs.PROOFS.lookup(key, custom.slug)
    assert proof is not None
    from django.utils import timezone

    stale = proofs.Proof(
        expires=timezone.now(),
        user_values=proof.user_values,
        incident_values=proof.incident_values,
        version=proof.version,
        kept_at=proof.kept_at,
    )
    proofs.PROOFS.keep(ticket, key, custom.slug, stale)
    assert proofs.PROOFS.lookup(key, custom.slug)[0] is None


@pytest.mark.django_db(transaction=False)
def test_nothing_is_kept_inside_a_transaction(client: Any, user: Any, custom: Incident) -> None:
    """Tests and commands run inside a transaction: its writes are announced only at commit."""
    client.force_login(user)
    assert connection.in_atomic_block
    assert _poll(client, custom.slug).status_code == 200
    assert proofs.PROOFS.lookup(client.cookies["sessionid"].value, custom.slug) == (None, None)
