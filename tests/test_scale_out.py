"""Scale-out: ingest and analysis on queues of their own, and several workers on one Postgres
and Redis sharing the work of concurrent incidents with none of it done twice or lost."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ingest.services.orchestration import Upload, files_ingest
from tests.conftest import ARTIFACTS, Worker, wait_for
from timeline.celery import app, queues
from timeline.choices import RunStatus
from timeline.metrics.reader import samples_count
from timeline.models import Analysis, Artifact, Incident, Series
from timeline.services import incident_create

FILES_PER_INCIDENT = 6
SAMPLES_PER_FILE = 900
T0_MS = 1_763_668_800_000


def _metrics_file(incident: int, i: int) -> Upload:
    """A Prometheus text file with one series of its own (distinct bytes per file)."""
    lines = ["# TYPE scale_test gauge"]
    lines += [
        f'scale_test{{incident="{incident}",file="{i}"}} {(k * 7 + i) % 13} {T0_MS + k * 1000}'
        for k in range(SAMPLES_PER_FILE)
    ]
    data = ("\n".join(lines) + "\n").encode()
    return Upload(name=f"scale-{incident}-{i}.prom", size=len(data), data=data)


@pytest.fixture
def workers(transactional_db: None, settings: Any) -> Iterator[list[Worker]]:
    started: list[Worker] = []

    def start(queue_names: list[str]) -> Worker:
        log = ARTIFACTS / f"worker-{os.getpid()}-{uuid.uuid4().hex[:6]}.log"
        worker = Worker(log, Path(settings.UPLOAD_ROOT), queues=queue_names)
        worker.start()
        started.append(worker)
        return worker

    yield start  # type: ignore[misc]
    for worker in started:
        worker.stop()


def _tasks_done(worker: Worker) -> list[str]:
    """The names of the tasks this worker finished (its log), one entry per run."""
    return re.findall(r"Task ([\w.]+)\[[0-9a-f-]+\] succeeded", worker.log.read_text())


def _ingest_concurrently(team: Any, user: Any, n: int) -> list[Incident]:
    incidents = [incident_create(team=team, title=f"scale {k}", user=user) for k in range(n)]
    for k, incident in enumerate(incidents):  # every incident's files queued before any is done
        outcome = files_ingest(
            incident=incident, files=[_metrics_file(k, i) for i in range(FILES_PER_INCIDENT)]
        )
        assert len(outcome.queued) == FILES_PER_INCIDENT
    return incidents


def _all_loaded_and_analysed(incidents: list[Incident]) -> bool:
    if Artifact.objects.exclude(status=RunStatus.DONE).exists():
        return False
    for incident in incidents:
        version = Incident.objects.get(pk=incident.pk).analysis_version
        run = Analysis.objects.filter(incident=incident, version=version).first()
        if run is None or run.status != RunStatus.DONE:
            return False
    return True


def test_ingest_and_analysis_run_on_queues_of_their_own(workers: Any, team: Any, user: Any) -> None:
    ingest_queue, analysis_queue = queues()
    assert app.conf.task_default_queue == ingest_queue
    ingester = workers([ingest_queue])
    analyst = workers([analysis_queue])
    incidents = _ingest_concurrently(team, user, 2)
    wait_for(lambda: _all_loaded_and_analysed(incidents), timeout=180)
    assert set(_tasks_done(ingester)) == {"ingest.ingest_artifact"}
    assert set(_tasks_done(analyst)) == {"timeline.analyze_incident"}


def test_two_workers_share_concurrent_incidents_with_nothing_done_twice_or_lost(
    workers: Any, team: Any, user: Any
) -> None:
    pair = [workers(queues()), workers(queues())]
    incidents = _ingest_concurrently(team, user, 3)
    wait_for(lambda: _all_loaded_and_analysed(incidents), timeout=240)

    loads = [name for w in pair for name in _tasks_done(w) if name == "ingest.ingest_artifact"]
    assert len(loads) == 3 * FILES_PER_INCIDENT  # each file loaded once, by one worker
    assert all("ingest.ingest_artifact" in _tasks_done(w) for w in pair), (
        "both workers took a share of the loads"
    )
    for incident in incidents:  # nothing lost: every file's every sample, once
        series = Series.objects.filter(incident=incident)
        assert series.count() == FILES_PER_INCIDENT
        assert all(s.sample_count == SAMPLES_PER_FILE for s in series)
        ids = list(series.values_list("id", flat=True))
        assert samples_count(ids) == FILES_PER_INCIDENT * SAMPLES_PER_FILE
    assert Artifact.objects.filter(status=RunStatus.DONE).count() == 3 * FILES_PER_INCIDENT
