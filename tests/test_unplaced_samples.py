"""A metrics file with timestamps the timeline cannot place loads through the real ingest path
(issue 18): the other samples are stored, the dropped ones counted in the artifact's warnings
and shown on the upload page. Nothing is lost silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.services import orchestration
from ingest.services.orchestration import Load
from timeline.choices import RunStatus
from timeline.metrics import reader
from timeline.models import Artifact, Series

T0_S = 1_795_190_400  # 2026-11-20T08:00:00Z


def _one(incident, path: Path) -> Artifact:
    outcome = orchestration.bundle_ingest(
        incident=incident, path=path, load=Load.HERE, analyze=False
    )
    (artifact,) = outcome.artifacts
    artifact.refresh_from_db()
    assert artifact.status == RunStatus.DONE, artifact.error
    return artifact


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.django_db
def test_an_openmetrics_file_with_a_far_future_timestamp_loads_and_counts_the_dropped_sample(
    incident, tmp_path, client, user
):
    text = "\n".join(
        [
            "# TYPE sglang:num_running_reqs gauge",
            *(f'sglang:num_running_reqs{{tp_rank="0"}} {i} {T0_S + i}' for i in range(10)),
            'sglang:num_running_reqs{tp_rank="1"} 7 12345678901234567890.5',
            *(f'sglang:num_running_reqs{{tp_rank="2"}} {i} {T0_S + i}' for i in range(5)),
            "# EOF",
        ]
    )
    artifact = _one(incident, _write(tmp_path, "far.om", text + "\n"))
    assert artifact.counts["samples"] == 15
    assert artifact.counts["series"] == 2  # tp_rank="1" had no sample the timeline can hold
    assert artifact.counts["warning_count"] == 1
    (warning,) = artifact.counts["warnings"]
    assert warning.startswith("far.om:12: 1 sample(s) dropped")
    assert 'sglang:num_running_reqs{tp_rank="1"} (line 12)' in warning
    series = Series.objects.filter(incident=incident).order_by("labels")
    assert [s.labels for s in series] == [{"tp_rank": "0"}, {"tp_rank": "2"}]
    stored = reader.samples_read([s.pk for s in series])
    assert sorted(len(ts) for ts, _ in stored.values()) == [5, 10]

    client.force_login(user)
    page = client.get(f"/incidents/{incident.slug}/upload/").content.decode()
    assert "1 warning(s)" in page
    assert "1 sample(s) dropped: their timestamps are valid but outside the years 1 to 9999" in page


@pytest.mark.django_db
def test_a_text_file_with_a_timestamp_past_int64_loads_and_counts_the_dropped_samples(
    incident, tmp_path
):
    lines = [f"up 1 {(T0_S + i) * 1000}" for i in range(3)]
    lines += ["up 1 99999999999999999999", "temp 40 -99999999999999999999"]
    artifact = _one(incident, _write(tmp_path, "far.prom", "\n".join(lines) + "\n"))
    assert artifact.counts["samples"] == 3
    assert artifact.counts["series"] == 1
    (warning,) = artifact.counts["warnings"]
    assert warning.startswith("far.prom:4: 2 sample(s) dropped")
    assert warning.endswith("up (line 4), temp (line 5)")
    (series,) = Series.objects.filter(incident=incident)
    assert series.name == "up" and series.sample_count == 3
