"""Big Prometheus text files are parsed and COPYed part by part: same rows as the whole-file
path, the same errors, and the same merge of overlapping samples."""

from __future__ import annotations

import pytest
from django.db import connection

from ingest import services, streaming
from ingest.parsers import prometheus
from timeline.choices import RunStatus
from timeline.models import Sample, SampleRollup, Series
from timeline.services import incident_create

T0 = 1_795_190_400_000  # 2026-11-20T08:00:00Z


def _exposition(scrapes: int, start: int = 0) -> bytes:
    lines = [
        "# HELP sglang:num_running_reqs Running requests.",
        "# TYPE sglang:num_running_reqs gauge",
    ]
    for i in range(start, start + scrapes):
        ts = T0 + i * 1000
        for gpu in range(8):
            lines.append(
                f'DCGM_FI_DEV_GPU_UTIL{{gpu="{gpu}",Hostname="dsv4-node-1"}} '
                f"{(i * 7 + gpu) % 100} {ts}"
            )
        lines.append(f'sglang:num_running_reqs{{model_name="dsv4",tp_rank="0"}} {i % 13} {ts}')
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def small_parts(monkeypatch):
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(prometheus, "_PART_BYTES", 1)  # every ~4 MiB chunk is a part
    monkeypatch.setattr(prometheus, "_CHUNK_BYTES", 1 << 18)


def _ingest(incident, name: str, data: bytes):
    artifact, _ = services.artifact_register_bytes(incident=incident, name=name, data=data)
    return services.artifact_ingest(artifact_id=artifact.pk)


def _rows(incident) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT s.name, s.labels::text, s.type, s.help, s.sample_count, s.first_ts, "
            "s.last_ts, count(*), sum(x.value) FROM timeline_series s JOIN timeline_sample x "
            "ON x.series_id = s.id WHERE s.incident_id = %s GROUP BY s.id ORDER BY 1, 2",
            [incident.pk],
        )
        return cur.fetchall()


def test_a_streamed_file_loads_exactly_what_the_whole_file_path_loads(team, small_parts):
    data = _exposition(3000)  # 27,000 samples over ~10 parts
    streamed = _ingest(incident_create(team=team, title="streamed"), "a.prom", data)
    assert streamed.status == RunStatus.DONE, streamed.error
    assert streamed.counts["streamed"] is True
    assert streamed.counts["samples"] == 27_000
    whole_incident = incident_create(team=team, title="whole")
    streaming.STREAM_MIN_BYTES = 1 << 40  # monkeypatch restores it
    whole = _ingest(whole_incident, "a.prom", data)
    assert "streamed" not in whole.counts
    assert _rows(streamed.incident) == _rows(whole_incident)
    running = Series.objects.get(incident=streamed.incident, name="sglang:num_running_reqs")
    assert (running.type, running.help) == ("gauge", "Running requests.")
    assert SampleRollup.objects.filter(series=running).count() == 50
    assert sum(SampleRollup.objects.filter(series=running).values_list("n", flat=True)) == 3000


def test_a_step_back_across_parts_fails_with_its_line_and_writes_nothing(team, small_parts):
    data = _exposition(3000) + _exposition(1, start=5)  # a sample from the past at the end
    artifact = _ingest(incident_create(team=team, title="bad"), "bad.prom", data)
    assert artifact.status == RunStatus.FAILED
    assert "bad.prom:27005: timestamp going backwards" in artifact.error
    assert Sample.objects.count() == 0
    assert SampleRollup.objects.count() == 0


def test_samples_already_stored_take_the_merge_path(team, small_parts):
    incident = incident_create(team=team, title="overlap")
    assert _ingest(incident, "first.prom", _exposition(2000)).status == RunStatus.DONE
    second = _ingest(incident, "second.prom", _exposition(2000, start=1000))
    assert second.status == RunStatus.DONE, second.error
    assert "streamed" not in second.counts
    assert Sample.objects.filter(series__incident=incident).count() == 9 * 3000


@pytest.mark.django_db(transaction=True)
def test_progress_of_a_streamed_ingest_is_visible_while_it_runs(team, small_parts, monkeypatch):
    import threading

    from django.db import connections

    from ingest import progress
    from timeline.models import Artifact

    monkeypatch.setattr(progress, "MIN_INTERVAL_S", 0.0)
    reached, release = threading.Event(), threading.Event()
    calls = []
    original = progress.ProgressReporter.report

    def report_then_hold(self, fraction):  # holds the load after its third part
        original(self, fraction)
        calls.append(fraction)
        if len(calls) == 3:
            reached.set()
            release.wait(timeout=60)

    monkeypatch.setattr(progress.ProgressReporter, "report", report_then_hold)
    incident = incident_create(team=team, title="progress")
    artifact, _ = services.artifact_register_bytes(
        incident=incident, name="big.prom", data=_exposition(3000)
    )

    def run():
        try:
            services.artifact_ingest(artifact_id=artifact.pk)
        finally:
            connections.close_all()

    worker = threading.Thread(target=run)
    worker.start()
    try:
        assert reached.wait(timeout=60)
        midway = Artifact.objects.get(pk=artifact.pk)
        assert midway.status == RunStatus.RUNNING
        assert 0.05 < midway.progress < 0.95
        assert Sample.objects.count() == 0  # nothing visible before the commit
    finally:
        release.set()
        worker.join(timeout=60)
    done = Artifact.objects.get(pk=artifact.pk)
    assert (done.status, done.progress) == (RunStatus.DONE, 1.0)
    assert Sample.objects.count() == 27_000
