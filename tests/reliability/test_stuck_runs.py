"""Issue 15, point 3: no work stays "running" for ever.

- Any error in a parser or loader ends the artifact failed, with a message naming the file and
  the kind of error (no server path), and the traceback in the worker's log.
- A worker killed mid-load or mid-analysis: its rows are handed to another worker within
  seconds of its heartbeat going quiet, not after the broker's visibility timeout (left at its
  real hour here), and the rows are stored once.
- An analysis requested while the broker was down is queued once it is back.

The workers are real Celery workers on a private redis-server (tests/reliability/own_services);
beat runs in the surviving worker, as ``./dev run`` starts it, with a 1 s heartbeat and reaper.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import time
from pathlib import Path

import numpy as np
import pytest
from django.utils import timezone

from ingest.services import bundles, loading, reaper
from ingest.services.artifacts import unexpected_message
from ingest.tasks import ingest_artifact
from tests.conftest import ARTIFACTS, Worker, wait_for
from tests.reliability import figures
from tests.reliability.helpers import row_counts, stored_samples
from tests.reliability.own_services import broker_at
from tests.reliability.test_faults import (  # noqa: F401  (own_redis is a fixture)
    SERIES,
    STEPS,
    _lock_connection,
    _metrics_file,
    _waiting_on_a_lock,
    own_redis,
)
from timeline.choices import RunStatus
from timeline.models import Analysis, Artifact, Finding
from timeline.services import analysis_request, incident_create

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HEARTBEAT_S = 1


@pytest.fixture
def workers(own_redis, monkeypatch: pytest.MonkeyPatch, transactional_db: None, settings):  # noqa: F811
    """Workers on the private broker with its real visibility timeout (an hour), a 1 s
    heartbeat, and a reaper every second in the worker started with ``beat=True``."""
    monkeypatch.setenv("REDIS_URL", own_redis.url)
    monkeypatch.delenv("CELERY_VISIBILITY_TIMEOUT", raising=False)
    monkeypatch.setenv("WORKER_HEARTBEAT_S", str(HEARTBEAT_S))
    monkeypatch.setenv("REAPER_INTERVAL_S", "1")
    settings.WORKER_HEARTBEAT_S = HEARTBEAT_S
    started: list[Worker] = []

    def new_worker(name: str, *, beat: bool = False) -> Worker:
        worker = Worker(ARTIFACTS / f"stuck-{name}.log", Path(settings.UPLOAD_ROOT), beat=beat)
        worker.log.unlink(missing_ok=True)
        worker.start()
        started.append(worker)
        return worker

    with broker_at(own_redis.url):
        yield new_worker
    for worker in started:
        worker.stop()


# --- any error ends the row failed ---------------------------------------------------------------


def test_an_unexpected_error_in_a_load_fails_the_artifact_with_a_clean_message(
    workers, team, user, client
):
    # A zone the machine's tzdata no longer has (removed in 2020b): reading any naive
    # timestamp of the incident raises a KeyError no parser expects.
    incident = incident_create(team=team, title="old zone", timezone="US/Pacific-New", user=user)
    workers("loads")
    metrics = io.BytesIO((FIXTURES / "metrics" / "two_scrapes.prom").read_bytes())
    metrics.name = "two_scrapes.prom"
    client.force_login(user)
    page = client.post(f"/incidents/{incident.slug}/upload/", {"files": [metrics]}, follow=True)
    assert "1 file(s) queued for ingest." in page.content.decode()
    artifact = Artifact.objects.get(incident=incident)
    wait_for(lambda: Artifact.objects.get(pk=artifact.pk).status == RunStatus.FAILED, timeout=60)
    artifact.refresh_from_db()
    assert artifact.error == (
        "two_scrapes.prom: the ingest stopped on an unexpected error (ZoneInfoNotFoundError: "
        "'No time zone found with key US/Pacific-New'); nothing was stored"
    )
    assert row_counts(incident)["samples"] == 0
    page = client.get(f"/incidents/{incident.slug}/upload/").content.decode()
    assert "ZoneInfoNotFoundError" in page
    figures.record("unexpected error in a load (KeyError)", survived=True)


def test_the_overflowing_prometheus_timestamp_ends_the_load(db, incident, tmp_path):
    """The issue's example no longer reaches the loader as an OverflowError: the sample is
    dropped and counted in a warning, and the artifact ends done, not running."""
    path = tmp_path / "overflow.prom"
    path.write_text("# TYPE m gauge\nm 1 1795218000000\nm 2 99999999999999999999\n")
    bundles.path_register(incident=incident, path=path)
    artifact = loading.artifact_ingest(artifact_id=Artifact.objects.get(incident=incident).pk)
    assert artifact.status == RunStatus.DONE, artifact.error
    assert artifact.counts["samples"] == 1 and artifact.counts["warning_count"] == 1
    assert "overflow.prom:3" in artifact.counts["warnings"][0]


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            FileNotFoundError(2, "No such file or directory", "/srv/data/uploads/inc/ab12"),
            "(FileNotFoundError: [Errno 2] No such file or directory: 'ab12')",
        ),
        (OverflowError("date value out of range"), "(OverflowError: date value out of range)"),
        (MemoryError(), "(MemoryError)"),
    ],
)
def test_an_unexpected_error_is_told_without_server_paths(exc, expected):
    message = unexpected_message("m.prom", exc)
    assert (
        message
        == f"m.prom: the ingest stopped on an unexpected error {expected}; nothing was stored"
    )


def test_a_database_error_is_told_without_its_sql():
    from django.db import DataError

    message = unexpected_message(
        "m.prom",
        DataError(
            'value too long for type character varying(300)\nLINE 1: INSERT INTO "timeline_event"'
        ),
    )
    assert message == (
        "m.prom: the ingest stopped on an unexpected error (DataError: the database refused the "
        "file's rows); nothing was stored"
    )


# --- a worker killed mid-run ---------------------------------------------------------------------


@pytest.mark.worker
def test_a_load_left_running_by_a_killed_worker_is_redone_once_within_seconds(
    workers, incident, tmp_path
):
    victim = workers("victim")
    bundles.path_register(incident=incident, path=_metrics_file(tmp_path / "load.prom"))
    artifact = Artifact.objects.get(incident=incident)
    lock = _lock_connection()
    try:
        with lock.cursor() as cur:  # the COPY into samples waits behind this, mid-transaction
            cur.execute("LOCK TABLE timeline_samplechunk IN SHARE MODE")
        ingest_artifact.delay(artifact.pk, False)
        wait_for(lambda: _waiting_on_a_lock(lock, "timeline_samplechunk"), timeout=120)
        time.sleep(2 * HEARTBEAT_S)  # the victim beats while it waits
        artifact.refresh_from_db()
        assert artifact.status == RunStatus.RUNNING and artifact.heartbeat_at is not None
        assert time.time() - artifact.heartbeat_at.timestamp() < 2 * HEARTBEAT_S + 1
        victim.kill()
        killed = time.monotonic()
    finally:
        lock.rollback()
        lock.close()
    workers("survivor", beat=True)  # the message the victim took stays unacked for an hour
    wait_for(
        lambda: Artifact.objects.filter(pk=artifact.pk, status=RunStatus.DONE).exists(),
        timeout=90,
    )
    recovery = time.monotonic() - killed
    counts = row_counts(incident)
    stored = stored_samples(incident)
    distinct = sum(len(np.unique(ts)) for ts, _ in stored.values())
    assert counts["series"] == SERIES and counts["samples"] == SERIES * STEPS
    assert distinct == SERIES * STEPS  # no sample twice, none missing
    artifact.refresh_from_db()
    assert artifact.attempts == 2 and artifact.error == ""
    assert artifact.counts["samples"] == SERIES * STEPS
    figures.record(
        "worker SIGKILLed mid-load (visibility timeout 1 h)",
        survived=True,
        rows_ingested=distinct,
        rows_lost=SERIES * STEPS - distinct,
        recovery_s=recovery,
    )


@pytest.mark.worker
def test_an_analysis_left_running_by_a_killed_worker_is_redone_once_within_seconds(
    workers, incident
):
    for rel in ("docs/DSV4_DEPLOY.md", "git/deploy.gitlog", "metrics/two_scrapes.prom"):
        bundles.path_register(incident=incident, path=FIXTURES / rel)
    for artifact in Artifact.objects.filter(incident=incident):
        assert loading.artifact_ingest(artifact_id=artifact.pk).status == RunStatus.DONE
    victim = workers("analysis-victim")
    lock = _lock_connection()
    try:
        with lock.cursor() as cur:  # storing findings waits behind this, after the engine ran
            cur.execute("LOCK TABLE timeline_finding IN SHARE MODE")
        version = analysis_request(incident_id=incident.pk)
        wait_for(lambda: _waiting_on_a_lock(lock, "timeline_finding"), timeout=120)
        assert Analysis.objects.get(incident=incident, version=version).status == (
            RunStatus.RUNNING
        )
        victim.kill()
        killed = time.monotonic()
    finally:
        lock.rollback()
        lock.close()
    assert not Finding.objects.filter(analysis__incident=incident).exists()
    workers("analysis-survivor", beat=True)
    wait_for(
        lambda: Analysis.objects.filter(
            incident=incident, version=version, status=RunStatus.DONE
        ).exists(),
        timeout=90,
    )
    recovery = time.monotonic() - killed
    analysis = Analysis.objects.get(incident=incident, version=version)
    assert Analysis.objects.filter(incident=incident).count() == 1
    findings = list(analysis.findings.values_list("kind", "rank"))
    assert findings and len(findings) == len(set(findings))  # each finding once
    assert analysis.attempts == 2 and analysis.error == ""
    figures.record(
        "worker SIGKILLed mid-analysis (visibility timeout 1 h)",
        survived=True,
        rows_ingested=len(findings),
        recovery_s=recovery,
    )


# --- the broker down when an analysis is asked for -----------------------------------------------


@pytest.mark.worker
def test_an_analysis_asked_for_while_the_broker_was_down_runs_once_it_is_back(
    workers,
    own_redis,  # noqa: F811
    incident,
    user,
    client,  # noqa: F811
):
    bundles.path_register(incident=incident, path=FIXTURES / "metrics" / "two_scrapes.prom")
    artifact = Artifact.objects.get(incident=incident)
    assert loading.artifact_ingest(artifact_id=artifact.pk).status == RunStatus.DONE
    own_redis.stop()
    version = analysis_request(incident_id=incident.pk)  # its enqueue fails, after commit
    incident.refresh_from_db()
    assert incident.analysis_version == version and incident.analysis_queued_at is None
    client.force_login(user)
    page = client.get(f"/incidents/{incident.slug}/").content.decode()
    assert 'id="analysis-pending"' in page
    own_redis.start()  # back, and empty: nothing of the request reached it
    back = time.monotonic()
    workers("after-outage", beat=True)
    wait_for(
        lambda: Analysis.objects.filter(
            incident=incident, version=version, status=RunStatus.DONE
        ).exists(),
        timeout=90,
    )
    recovery = time.monotonic() - back
    page = client.get(f"/incidents/{incident.slug}/").content.decode()
    assert 'id="analysis-pending"' not in page
    assert Analysis.objects.filter(incident=incident).count() == 1
    figures.record("broker down when an analysis was asked for", survived=True, recovery_s=recovery)


# --- the reaper's rules --------------------------------------------------------------------------


def _running(artifact: Artifact, *, beat_age_s: float, attempts: int, by: str) -> None:
    at = timezone.now() - dt.timedelta(seconds=beat_age_s)
    Artifact.objects.filter(pk=artifact.pk).update(
        status=RunStatus.RUNNING, claimed_by=by, heartbeat_at=at, started_at=at, attempts=attempts
    )


def test_the_reaper_leaves_live_runs_alone_and_gives_up_after_the_last_attempt(
    transactional_db, incident, tmp_path, settings
):
    settings.WORKER_HEARTBEAT_S = 30
    settings.RUN_MAX_ATTEMPTS = 3
    for i, name in enumerate(("alive.prom", "dead-thrice.prom")):
        (tmp_path / name).write_text(f"# TYPE m gauge\nm {i} 1795218000000\n")
        bundles.path_register(incident=incident, path=tmp_path / name)
    alive = Artifact.objects.get(incident=incident, name="alive.prom")
    poison = Artifact.objects.get(incident=incident, name="dead-thrice.prom")
    _running(alive, beat_age_s=60, attempts=1, by="host-a:1")  # two beats late: still alive
    _running(poison, beat_age_s=3600, attempts=3, by="host-b:2")  # killed three times
    reaped = reaper.stale_runs_reap()
    assert reaped.loads_failed == [poison.pk] and reaped.loads_requeued == []
    alive.refresh_from_db()
    poison.refresh_from_db()
    assert alive.status == RunStatus.RUNNING and alive.claimed_by == "host-a:1"
    assert poison.status == RunStatus.FAILED
    assert poison.error == (
        "dead-thrice.prom: the worker running it stopped 3 times before it finished (killed, "
        "out of memory or lost); it is not tried again"
    )


def test_a_running_row_beats_while_its_load_runs(transactional_db, incident, settings):
    """The claim names this process; the heartbeat thread writes while the load runs and stops
    with it."""
    from timeline import runs

    settings.WORKER_HEARTBEAT_S = 0.2
    bundles.path_register(incident=incident, path=FIXTURES / "metrics" / "two_scrapes.prom")
    artifact = Artifact.objects.get(incident=incident)
    Artifact.objects.filter(pk=artifact.pk).update(status=RunStatus.RUNNING, claimed_by="me:1")
    with runs.Heartbeat("timeline_artifact", artifact.pk, "me:1") as beat:
        wait_for(lambda: beat.beats >= 2, timeout=10, interval=0.05)
    first = Artifact.objects.get(pk=artifact.pk).heartbeat_at
    assert first is not None
    time.sleep(0.6)
    assert Artifact.objects.get(pk=artifact.pk).heartbeat_at == first  # stopped with the block
    assert re.fullmatch(r".+:\d+", runs.worker_id())
