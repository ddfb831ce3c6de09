"""Nothing lost silently (#14.3): through the real ingest path on the real database, every parsed
record is stored or counted in the artifact's warnings, a series' identity includes where it
came from, and the warnings reach the upload page and the CLI summary."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from ingest.services import orchestration
from ingest.services.orchestration import Load
from tests.parsers.test_real_corpus import REFUSED
from timeline.choices import RunStatus
from timeline.metrics import reader
from timeline.models import Artifact, Event, Series

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
SCRAPED_AT = dt.datetime(2026, 12, 3, 9, 28, 20, tzinfo=dt.UTC)
T0 = 1_795_190_400_000  # 2026-11-20T08:00:00Z


def _ingest(incident, path: Path, at: dt.datetime | None = None) -> list[Artifact]:
    outcome = orchestration.bundle_ingest(
        incident=incident, path=path, default_time=at, load=Load.HERE, analyze=False
    )
    return outcome.artifacts


def _one(incident, path: Path, at: dt.datetime | None = None) -> Artifact:
    (artifact,) = _ingest(incident, path, at)
    artifact.refresh_from_db()
    assert artifact.status == RunStatus.DONE, artifact.error
    return artifact


def _copy(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# --- a series' identity includes where it came from ---------------------------------------------


@pytest.mark.django_db
def test_two_exporters_bare_scrapes_keep_their_unlabelled_go_series_apart(incident, tmp_path):
    bundle = tmp_path / "scrapes"
    bundle.mkdir()
    for name in ("prometheus_self_metrics.prom", "node_exporter_metrics.prom"):
        shutil.copy(REAL / name, bundle / name)
    artifacts = _ingest(incident, bundle, SCRAPED_AT)
    assert {a.status for a in artifacts} == {RunStatus.DONE}
    goroutines = Series.objects.filter(incident=incident, name="go_goroutines", labels={})
    assert sorted(goroutines.values_list("origin", flat=True)) == [
        "node_exporter_metrics.prom",
        "prometheus_self_metrics.prom",
    ]
    # Both exporters' samples are stored: nothing was merged away.
    values = reader.samples_read([s.pk for s in goroutines])
    assert sorted(len(ts) for ts, _ in values.values()) == [1, 1]
    for artifact in artifacts:
        artifact.refresh_from_db()
        assert artifact.counts["samples"] == artifact.counts["series"]  # one sample each
        assert not any("dropped" in w for w in artifact.counts["warnings"])


@pytest.mark.django_db
def test_two_query_range_answers_of_expressions_are_two_series_named_by_file(incident, tmp_path):
    rate = (REAL / "query_range_rate_http_requests.json").read_bytes()
    first = _copy(tmp_path / "a", "rate_metrics_handler.json", rate)
    # The same shape with other values: another expression over the same targets.
    doc = json.loads(rate)
    for item in doc["data"]["result"]:
        item["values"] = [[t, str(float(v) * 2)] for t, v in item["values"]]
    second = _copy(tmp_path / "b", "rate_doubled.json", json.dumps(doc))
    _one(incident, first)
    artifact = _one(incident, second)
    names = set(Series.objects.filter(incident=incident).values_list("name", flat=True))
    assert names == {"rate_metrics_handler", "rate_doubled"}
    assert "query_range" not in names
    assert artifact.counts["samples"] == 13
    assert not artifact.counts["warnings"]


@pytest.mark.django_db
def test_a_named_query_range_result_keeps_its_name_and_labels(incident):
    _one(incident, REAL / "query_range_up.json")
    up = Series.objects.filter(incident=incident, name="up").order_by("labels")
    assert [s.labels["job"] for s in up] == ["node", "prometheus"]
    assert {s.origin for s in up} == {""}  # instance/job say where they came from


# --- overlapping files: counted, never silent --------------------------------------------------


def _exposition(start: int, count: int, value: float) -> str:
    lines = ["# TYPE sglang:num_running_reqs gauge"]
    for i in range(start, start + count):
        lines.append(f'sglang:num_running_reqs{{tp_rank="0"}} {value} {T0 + i * 1000}')
    return "\n".join(lines) + "\n"


@pytest.mark.django_db
def test_samples_already_stored_are_reported_with_counts(incident, tmp_path):
    _one(incident, _copy(tmp_path, "first.prom", _exposition(0, 1000, 1.0)))
    second = _one(incident, _copy(tmp_path, "second.prom", _exposition(300, 1000, 2.0)))
    assert second.counts["samples"] == 300
    (warning,) = second.counts["warnings"]
    assert warning.startswith("700 samples dropped: duplicate timestamps")
    assert 'sglang:num_running_reqs{tp_rank="0"} 700' in warning
    assert second.counts["warning_count"] == 1
    (series,) = Series.objects.filter(incident=incident)
    assert series.sample_count == 1300


@pytest.mark.django_db
def test_events_already_on_the_timeline_are_reported(incident, tmp_path):
    junit = (REAL / "pytest_xunit2.xml").read_bytes()
    _one(incident, _copy(tmp_path / "a", "pytest.xml", junit))
    # The same runs again in other bytes (a trailing newline): a second artifact, no new event.
    again = _one(incident, _copy(tmp_path / "b", "pytest-copy.xml", junit + b"\n"))
    assert again.counts["events"] == 4
    assert again.counts["warnings"] == [
        "4 events were already on the timeline from another file (the same kind and key): "
        "not added again"
    ]
    assert Event.objects.filter(incident=incident).count() == 4


@pytest.mark.django_db
def test_many_parser_warnings_are_cut_but_counted(incident, tmp_path):
    lines = [
        f"[2026-11-20 15:40:{i % 60:02d}] Finish: obj=GenerateReqInput(rid='r{i}'), out={{}}"
        for i in range(120)
    ]
    artifact = _one(incident, _copy(tmp_path, "server.log", "\n".join(lines) + "\n"))
    assert artifact.counts["warning_count"] == 120
    assert len(artifact.counts["warnings"]) == 51
    assert artifact.counts["warnings"][-1] == "... and 70 more warnings"


# --- where the warnings are shown ---------------------------------------------------------------


@pytest.mark.django_db
def test_warnings_are_listed_on_the_upload_page(client, user, incident, tmp_path):
    _one(incident, _copy(tmp_path, "first.prom", _exposition(0, 10, 1.0)))
    _one(incident, _copy(tmp_path, "second.prom", _exposition(5, 10, 2.0)))
    client.force_login(user)
    page = client.get(f"/incidents/{incident.slug}/upload/").content.decode()
    assert "1 warning(s)" in page
    assert "5 samples dropped: duplicate timestamps" in page


@pytest.mark.django_db
def test_the_cli_summary_prints_each_artifacts_warnings(incident, tmp_path):
    _one(incident, _copy(tmp_path / "a", "first.prom", _exposition(0, 10, 1.0)))
    out = StringIO()
    call_command(
        "ingest",
        str(_copy(tmp_path / "b", "second.prom", _exposition(5, 10, 2.0))),
        incident=incident.slug,
        no_analyze=True,
        stdout=out,
        stderr=StringIO(),
    )
    text = out.getvalue()
    assert "1 warning(s):" in text
    assert "5 samples dropped: duplicate timestamps" in text


@pytest.mark.django_db
def test_the_real_corpus_ingests_with_every_record_stored_or_counted(incident, tmp_path):
    bundle = tmp_path / "corpus"
    files = [
        p
        for p in [*REAL.glob("*"), *(REAL / "sglang").glob("*")]
        if p.is_file() and p.suffix not in (".sh", ".md", ".py") and p.name != "versions.txt"
    ]
    for path in files:
        target = bundle / path.relative_to(REAL)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    artifacts = {a.name: a for a in _ingest(incident, bundle, SCRAPED_AT)}
    for artifact in artifacts.values():
        artifact.refresh_from_db()
    failed = {name: a.error for name, a in artifacts.items() if a.status != RunStatus.DONE}
    # Exactly the files the parsers refuse, each with its line (tests/parsers/test_real_corpus.py).
    assert set(failed) == REFUSED
    assert "Prometheus returned an error (bad_data)" in failed["query_range_error_bad_data.json"]
    # The four copies of one SGLang excerpt (plain and behind three shippers' prefixes): a
    # server log's series belong to its file (two servers' logs share rank labels), so each copy
    # stores its own 10 samples and none is dropped as another's duplicate.
    shipped = [
        artifacts[name].counts
        for name in (
            "sglang/pr22166_prefill_and_decode_same_second.log",
            "sglang/shipped_cloud_logging.log",
            "sglang/shipped_kubectl_timestamps.log",
            "sglang/shipped_tab_export.tsv",
        )
    ]
    assert [c["samples"] for c in shipped] == [10, 10, 10, 10]
    assert not [w for c in shipped for w in c["warnings"] if "samples dropped" in w]
    # Nothing else was lost without a word: each done file stored what it parsed or said why.
    for name, artifact in artifacts.items():
        if artifact.status == RunStatus.DONE and artifact.counts["samples"] < artifact.counts.get(
            "series", 0
        ):
            assert any("dropped" in w for w in artifact.counts["warnings"]), name


@pytest.mark.django_db
def test_two_servers_logs_with_the_same_rank_labels_stay_two_series(incident, tmp_path):
    """A prefill and a decode server both log ``[... TP0] ... #running-req: N`` in the same
    seconds: each log's samples are its server's series, so neither is dropped as a duplicate
    of the other."""

    def log(running: int) -> str:
        return "".join(
            f"[2026-11-20 08:00:{s:02d} TP0] Decode batch, #running-req: {running + s}, "
            f"#token: 100, token usage: 0.10, gen throughput (token/s): 50.00, #queue-req: 0\n"
            for s in range(10)
        )

    bundle = tmp_path / "servers"
    _copy(bundle, "prefill.log", log(100))
    _copy(bundle, "decode.log", log(5))
    artifacts = _ingest(incident, bundle)
    for artifact in artifacts:
        artifact.refresh_from_db()
        assert artifact.status == RunStatus.DONE, artifact.error
        assert not any("dropped" in w for w in artifact.counts["warnings"])
    running = Series.objects.filter(incident=incident, name="sglang:num_running_reqs")
    assert sorted(running.values_list("origin", flat=True)) == ["decode.log", "prefill.log"]
    stored = reader.samples_read([s.pk for s in running])
    by_origin = {s.origin: stored[s.pk][1].tolist() for s in running}
    assert by_origin["prefill.log"] == [100.0 + s for s in range(10)]
    assert by_origin["decode.log"] == [5.0 + s for s in range(10)]
