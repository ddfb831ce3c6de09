"""Big Prometheus text files are parsed and COPYed part by part: the same samples as the
whole-file path, the same errors, and overlapping samples merged."""

from __future__ import annotations

import pytest

from ingest import streaming
from ingest.parsers.prometheus import chunks, stream
from ingest.services import artifacts, loading, storage
from timeline.choices import RunStatus
from timeline.metrics import reader
from timeline.models import SampleRollup, Series
from timeline.services import incident_create

T0 = 1_795_190_400_000  # 2026-11-20T08:00:00Z


def _exposition(scrapes: int, start: int = 0, step_ms: int = 1000, bump: float = 0) -> bytes:
    lines = [
        "# HELP sglang:num_running_reqs Running requests.",
        "# TYPE sglang:num_running_reqs gauge",
    ]
    for i in range(start, start + scrapes):
        ts = T0 + i * step_ms
        for gpu in range(8):
            lines.append(
                f'DCGM_FI_DEV_GPU_UTIL{{gpu="{gpu}",Hostname="dsv4-node-1"}} '
                f"{(i * 7 + gpu) % 100 + bump} {ts}"
            )
        running = i % 13 + bump
        lines.append(f'sglang:num_running_reqs{{model_name="dsv4",tp_rank="0"}} {running} {ts}')
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def small_parts(monkeypatch):
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(stream, "PART_BYTES", 1)  # every ~4 MiB chunk is a part
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 1 << 18)


def _ingest(incident, name: str, data: bytes):
    artifact, _ = storage.artifact_register_bytes(incident=incident, name=name, data=data)
    return loading.artifact_ingest(artifact_id=artifact.pk)


def _rows(incident) -> list[tuple]:
    """Each series with its stored samples (times and values, in full)."""
    series = list(Series.objects.filter(incident=incident).order_by("name", "labels"))
    stored = reader.samples_read([s.pk for s in series])
    return [
        (
            s.name,
            s.labels,
            s.type,
            s.help,
            s.sample_count,
            s.first_ts,
            s.last_ts,
            stored[s.pk][0].tolist(),
            stored[s.pk][1].tolist(),
        )
        for s in series
    ]


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
    assert reader.samples_count() == 0
    assert SampleRollup.objects.count() == 0


def test_samples_already_stored_are_merged_and_keep_their_values(team, small_parts):
    # 5 s apart: 2000 scrapes span three hours, the second file half of them again and more.
    incident = incident_create(team=team, title="overlap")
    first = _ingest(incident, "first.prom", _exposition(2000, step_ms=5000))
    assert first.status == RunStatus.DONE, first.error
    second = _ingest(incident, "second.prom", _exposition(2000, 1000, step_ms=5000, bump=0.5))
    assert second.status == RunStatus.DONE, second.error
    assert second.counts["streamed"] is True
    assert second.counts["samples"] == 9 * 1000  # only the times not stored yet
    running = Series.objects.get(incident=incident, name="sglang:num_running_reqs")
    assert running.sample_count == 3000
    ((ts, values),) = reader.samples_read([running.pk]).values()
    assert ts.tolist() == [T0 + i * 5000 for i in range(3000)]
    assert values.tolist() == [i % 13 + (0.5 if i >= 2000 else 0) for i in range(3000)]
    # The rollups of the merged hours are those of the merged samples.
    rollup_rows = SampleRollup.objects.filter(series=running)
    assert sum(rollup_rows.values_list("n", flat=True)) == 3000
    assert rollup_rows.count() == 250  # 3000 samples 5 s apart: 250 minutes
    assert (
        reader.samples_count([s.pk for s in Series.objects.filter(incident=incident)]) == 9 * 3000
    )


@pytest.mark.django_db(transaction=True)
def test_progress_of_a_streamed_ingest_is_visible_while_it_runs(team, small_parts, monkeypatch):
    import threading

    from django.db import connections

    from timeline.models import Artifact

    monkeypatch.setattr(artifacts, "MIN_INTERVAL_S", 0.0)
    reached, release = threading.Event(), threading.Event()
    calls = []
    original = artifacts.ProgressReporter.report

    def report_then_hold(self, fraction):  # holds the load after its third part
        original(self, fraction)
        calls.append(fraction)
        if len(calls) == 3:
            reached.set()
            release.wait(timeout=60)

    monkeypatch.setattr(artifacts.ProgressReporter, "report", report_then_hold)
    incident = incident_create(team=team, title="progress")
    artifact, _ = storage.artifact_register_bytes(
        incident=incident, name="big.prom", data=_exposition(3000)
    )

    def run():
        try:
            loading.artifact_ingest(artifact_id=artifact.pk)
        finally:
            connections.close_all()

    worker = threading.Thread(target=run)
    worker.start()
    try:
        assert reached.wait(timeout=60)
        midway = Artifact.objects.get(pk=artifact.pk)
        assert midway.status == RunStatus.RUNNING
        assert 0.05 < midway.progress < 0.95
        assert reader.samples_count() == 0  # nothing visible before the commit
    finally:
        release.set()
        worker.join(timeout=60)
    done = Artifact.objects.get(pk=artifact.pk)
    assert (done.status, done.progress) == (RunStatus.DONE, 1.0)
    assert reader.samples_count() == 27_000


def test_big_bytes_are_hashed_while_written_and_stored_once(team, monkeypatch):
    monkeypatch.setattr(storage, "PARALLEL_STORE_BYTES", 1)
    incident = incident_create(team=team, title="stored once")
    data = _exposition(100)
    first, created = storage.artifact_register_bytes(incident=incident, name="a.prom", data=data)
    again, created_again = storage.artifact_register_bytes(
        incident=incident, name="b.prom", data=data
    )
    assert created and not created_again and again.pk == first.pk
    folder = storage.upload_dir(incident)
    assert sorted(p.name for p in folder.iterdir()) == [first.sha256]  # no .part left
    assert (folder / first.sha256).read_bytes() == data


@pytest.mark.django_db
def test_a_streamed_bare_scrape_keeps_the_file_as_origin_like_the_whole_file_path(
    team, small_parts
):
    """Two exporters' bare scrapes (no timestamps, no instance/job) given one time: the
    streamed path names each unlabelled series by its file, as the whole-file path does, so
    neither exporter's samples are merged away."""
    import datetime as dt

    at = dt.datetime(2026, 11, 20, 8, 0, tzinfo=dt.UTC)

    def scrape(goroutines: int) -> bytes:
        lines = ["# TYPE go_goroutines gauge", f"go_goroutines {goroutines}"]
        lines += [f'node_cpu_seconds_total{{cpu="{c}",instance="n1"}} {c}.5' for c in range(4000)]
        return ("\n".join(lines) + "\n").encode()

    incident = incident_create(team=team, title="scrapes")
    outcomes = []
    for name, value in (("node.prom", 11), ("prom_self.prom", 42)):
        artifact, _ = storage.artifact_register_bytes(
            incident=incident,
            name=name,
            data=scrape(value),
            options={"default_time": at.isoformat()},
        )
        outcomes.append(loading.artifact_ingest(artifact_id=artifact.pk))
    for done in outcomes:
        assert done.status == RunStatus.DONE, done.error
        assert done.counts["streamed"] is True
    series = Series.objects.filter(incident=incident, name="go_goroutines").order_by("origin")
    assert [s.origin for s in series] == ["node.prom", "prom_self.prom"]
    stored = reader.samples_read([s.pk for s in series])
    assert sorted(v.tolist()[0] for _, v in stored.values()) == [11.0, 42.0]
    # A series that names its target keeps no origin: both files' samples are one history.
    cpu0 = Series.objects.get(incident=incident, name="node_cpu_seconds_total", labels__cpu="0")
    assert cpu0.origin == ""
    assert outcomes[1].counts["samples"] == 1  # the second file's targeted samples were stored


@pytest.mark.django_db
def test_dcgm_no_reading_values_are_left_out_streamed_or_not(small_parts, team):
    """dcgm-exporter passes DCGM's "blank / not supported" values on as readings (a GPU without
    a memory temperature sensor: 9223372036854775794): neither path stores them, and both say
    how many they left out."""
    lines = []
    for i in range(2_000):
        ts = T0 + i * 1000
        temp = 9223372036854775794 if i % 2 else 41 + i % 3
        lines.append(f'DCGM_FI_DEV_MEMORY_TEMP{{gpu="0"}} {temp} {ts}')
        lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="0"}} {2147483634 if i == 7 else 90} {ts}')
    data = ("\n".join(lines) + "\n").encode()
    stored = []
    for slug in ("streamed", "whole"):
        if slug == "whole":
            small_parts_off = pytest.MonkeyPatch()
            small_parts_off.setattr(streaming, "STREAM_MIN_BYTES", 1 << 40)
        incident = incident_create(team=team, title=slug)
        artifact = _ingest(incident, "dcgm.prom", data)
        assert artifact.status == RunStatus.DONE, artifact.error
        assert any("1001 DCGM samples" in w for w in artifact.counts["warnings"]), artifact.counts
        series = {s.name: s for s in Series.objects.filter(incident=incident)}
        assert series["DCGM_FI_DEV_MEMORY_TEMP"].sample_count == 1000
        assert series["DCGM_FI_DEV_GPU_UTIL"].sample_count == 1999
        values = reader.samples_read([series["DCGM_FI_DEV_MEMORY_TEMP"].pk])
        stored.append(sorted(set(values[series["DCGM_FI_DEV_MEMORY_TEMP"].pk][1].tolist())))
        if slug == "whole":
            small_parts_off.undo()
    assert stored[0] == stored[1] == [41.0, 42.0, 43.0]
