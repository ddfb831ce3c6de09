"""The base: settings helpers, auth on every page, team scoping, pure packages stay pure."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from evidence.vocabulary import EventKind, Lane
from ingest.parsers import types as ptypes
from timeline.env import ConfigError, database_from_url, env_bool, env_int

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("package", ["ingest/parsers", "timeline/correlation"])
def test_pure_packages_import_no_django(package: str) -> None:
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "django"]
    assert offenders == []
    assert len(list((ROOT / package).rglob("*.py"))) > 2


def test_event_kinds_and_lanes_match_the_parser_constants() -> None:
    kinds = {v for k, v in vars(ptypes).items() if k.startswith("KIND_")}
    lanes = {v for k, v in vars(ptypes).items() if k.startswith("LANE_")}
    assert kinds <= set(EventKind)
    assert lanes <= set(Lane)


def test_malformed_settings_fail_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ConfigError, match="DEBUG='maybe'"):
        env_bool("DEBUG")
    monkeypatch.setenv("WORKERS", "two")
    with pytest.raises(ConfigError, match="expected an integer"):
        env_int("WORKERS", 1)
    with pytest.raises(ConfigError, match="postgres://"):
        database_from_url("mysql://root@localhost/x")
    with pytest.raises(ConfigError, match="port"):
        database_from_url("postgres://u@localhost:abc/x")


def test_database_url_with_socket_host() -> None:
    db = database_from_url("postgresql://postgres:@/timeline?host=/tmp/pg")
    assert db["HOST"] == "/tmp/pg"
    assert db["NAME"] == "timeline"
    db = database_from_url("postgres://bob:s%40cret@db.internal:6543/prod")
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "bob",
        "s@cret",
        "db.internal",
        "6543",
    )


def test_pages_need_a_login(client, incident) -> None:
    for url in (
        reverse("incident_list"),
        reverse("incident_timeline", args=[incident.slug]),
        reverse("timeline_data", args=[incident.slug]),
        reverse("upload", args=[incident.slug]),
    ):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response.url.startswith(reverse("login"))
    assert client.get(reverse("login")).status_code == 200


def test_a_user_sees_only_their_teams_incidents(client, incident, outsider, other_team) -> None:
    from timeline.services import incident_create

    theirs = incident_create(team=other_team, title="Training OOM")
    client.force_login(outsider)
    listing = client.get(reverse("incident_list")).content.decode()
    assert "Training OOM" in listing
    assert incident.title not in listing
    assert client.get(reverse("incident_timeline", args=[incident.slug])).status_code == 404
    assert client.get(reverse("timeline_data", args=[incident.slug])).status_code == 404
    assert client.get(reverse("incident_timeline", args=[theirs.slug])).status_code == 200


def test_login_then_empty_incident_list(client, user) -> None:
    response = client.post(
        reverse("login"), {"username": "alice", "password": "correct horse battery"}
    )
    assert response.status_code == 302
    page = client.get(reverse("incident_list")).content.decode()
    assert "No incidents yet" in page


def test_csrf_is_enforced_on_posts(user, team) -> None:
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    response = strict.post(reverse("incident_new"), {"title": "x", "team": team.pk})
    assert response.status_code == 403


def test_a_unix_socket_url_is_spelled_for_each_redis_client() -> None:
    from timeline.env import redis_broker_url, redis_client_url

    assert redis_client_url("redis+socket:///d/redis.sock") == "unix:///d/redis.sock"
    assert redis_client_url("socket:///d/redis.sock") == "unix:///d/redis.sock"
    assert redis_broker_url("unix:///d/redis.sock?db=2") == "redis+socket:///d/redis.sock?db=2"
    for url in ("redis://127.0.0.1:6379/0", "rediss://h:6380/1"):
        assert redis_client_url(url) == url and redis_broker_url(url) == url


def test_embedded_postgres_and_redis_when_urls_are_unset(tmp_path: Path) -> None:
    """With no DATABASE_URL / REDIS_URL the app starts its own servers under its data dir."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env["TIMELINE_DATA_DIR"] = str(tmp_path / "data")
    env.pop("DJANGO_SETTINGS_MODULE", None)
    script = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='timeline.settings'; "
        "django.setup(); from django.conf import settings; from django.db import connection; "
        "from django.core.management import call_command; "
        "call_command('migrate', verbosity=0); "
        "from timeline.models import Team; Team.objects.create(name='t', slug='t'); "
        "import redis; from kombu import Connection; "
        "c = Connection(settings.CELERY_BROKER_URL); c.connect(); "
        "q = c.SimpleQueue('probe'); q.put({'ok': 1}); m = q.get(timeout=5); m.ack(); "
        # The cache on the same server: redis-py spells the socket unix://, kombu redis+socket://.
        "from django.core.cache import cache; cache.set('probe', 7); "
        "from timeline import shared_cache; shared_cache.put('probe', b'held', 60); "
        "print('DB', connection.settings_dict['HOST'], Team.objects.count(), "
        "'BROKER', settings.CELERY_BROKER_URL, m.payload, "
        "'CACHE', cache.get('probe'), shared_cache.get('probe'))"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        assert f"DB {tmp_path}" in out.stdout
        assert " 1 BROKER redis+socket://" in out.stdout
        assert "{'ok': 1}" in out.stdout
        assert "CACHE 7 b'held'" in out.stdout
    finally:
        pid_file = tmp_path / "data" / "redis" / "redis.pid"
        if pid_file.exists():
            subprocess.run(["kill", pid_file.read_text().strip()], check=False)
        pg = tmp_path / "data" / "pg"
        if pg.exists():
            subprocess.run(
                ["bash", "-c", f"kill $(head -1 {pg}/postmaster.pid) 2>/dev/null || true"],
                check=False,
            )


def test_an_anonymous_user_sees_no_incident(incident) -> None:
    from django.contrib.auth.models import AnonymousUser

    from timeline import access

    assert list(access.incidents_visible(AnonymousUser())) == []
