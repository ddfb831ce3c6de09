"""Guessing passwords is throttled (issue #15, point 6).

After ``AXES_FAILURE_LIMIT`` wrong passwords for one username from one address, that username is
locked out from that address for ``AXES_COOLOFF_TIME``, even with the right password. Other
usernames and other addresses are unaffected, and so is the push API's bearer-token auth.
"""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.test import Client

from ingest import push

RIGHT = "correct horse battery"


@pytest.fixture(autouse=True)
def _fast_hashes(settings) -> None:
    """Dozens of password checks: a cheap hasher (set before the users are created)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _limit() -> int:
    return int(getattr(settings, "AXES_FAILURE_LIMIT", 10))  # 10 if axes is not set up at all


def _login(client: Client, username: str, password: str):
    return client.post("/login/", {"username": username, "password": password})


def _logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def _guess(client: Client, username: str, times: int) -> list[int]:
    return [_login(client, username, f"wrong guess {n}").status_code for n in range(times)]


@pytest.mark.attack("password guessing")
def test_wrong_passwords_lock_the_username_out_from_that_address(db, user):
    attacker = Client(REMOTE_ADDR="203.0.113.7")
    limit = _limit()
    assert 3 <= limit <= 20
    codes = _guess(attacker, "alice", limit + 5)
    assert codes[: limit - 1] == [200] * (limit - 1)  # the form again, with its error
    assert set(codes[limit - 1 :]) == {429}
    response = _login(attacker, "alice", RIGHT)
    assert response.status_code == 429
    assert not _logged_in(attacker)
    text = response.content.decode()
    assert "Too many failed log-in attempts" in text and "minutes" in text


@pytest.mark.attack("password guessing")
def test_a_lockout_holds_only_that_username_from_that_address(db, user, outsider):
    attacker = Client(REMOTE_ADDR="203.0.113.7")
    _guess(attacker, "alice", _limit())
    assert _login(attacker, "alice", RIGHT).status_code == 429
    # Alice at her own desk still gets in.
    alice = Client(REMOTE_ADDR="198.51.100.20")
    assert _login(alice, "alice", RIGHT).status_code == 302
    assert _logged_in(alice)
    # Another user behind the attacker's address too.
    neighbour = Client(REMOTE_ADDR="203.0.113.7")
    assert _login(neighbour, "mallory", RIGHT).status_code == 302
    assert _logged_in(neighbour)


def test_the_lockout_ends_after_the_cool_off(db, user):
    attacker = Client(REMOTE_ADDR="203.0.113.7")
    _guess(attacker, "alice", _limit())
    assert _login(attacker, "alice", RIGHT).status_code == 429
    from axes.models import AccessAttempt

    # Time passes (the attempts are rows in the database: age them by the cool-off).
    for attempt in AccessAttempt.objects.all():
        attempt.attempt_time -= settings.AXES_COOLOFF_TIME
        attempt.save(update_fields=["attempt_time"])
    assert _login(attacker, "alice", RIGHT).status_code == 302
    assert _logged_in(attacker)


def test_failures_below_the_limit_are_forgotten_after_a_good_login(db, user):
    client = Client(REMOTE_ADDR="198.51.100.20")
    for _ in range(3):
        _guess(client, "alice", _limit() - 1)
        assert _login(client, "alice", RIGHT).status_code == 302
        client.logout()


def test_the_push_api_is_not_throttled_by_a_login_lockout(db, team, user, incident):
    attacker = Client(REMOTE_ADDR="203.0.113.7")
    _guess(attacker, "alice", _limit() + 2)
    token = push.token_create(team=team, name="ci")
    body = {"events": [{"at": "2026-11-20T12:00:00Z", "title": "deploy", "kind": "note"}]}
    for _ in range(_limit() + 2):
        response = attacker.post(
            f"/api/v1/incidents/{incident.slug}/events",
            data=json.dumps(body),
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code in (200, 201), response.content
    bad = attacker.post(
        f"/api/v1/incidents/{incident.slug}/events",
        data=json.dumps(body),
        content_type="application/json",
        headers={"Authorization": "Bearer wrong"},
    )
    assert bad.status_code == 401
