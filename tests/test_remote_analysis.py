"""The analysis reads remote series: the raw samples of the series it needs, for its window, in
memory. The DSV4 sample incident whose metrics live only in a real Prometheus (backfilled from
the stored copy with promtool) finds the wedge the stored version finds; a server that fails is
a warning of the analysis, not a failed run."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import ingest_folder
from tests.metrics.prometheus import PrometheusServer, backfill, free_port, openmetrics
from timeline.analysis import ENGINE_SERIES, analysis_run, current_analysis
from timeline.choices import FindingKind, RunStatus
from timeline.metrics import reader
from timeline.models import DataSource, Incident, RemoteSeries, Series
from timeline.services import analysis_request


def _verdict(incident: Incident) -> dict[str, Any]:
    analysis = current_analysis(incident)
    assert analysis is not None
    findings = list(analysis.findings.all())
    return {
        "first_bad": next(f.at for f in findings if f.kind == FindingKind.FIRST_BAD),
        "last_good": next(f.at for f in findings if f.kind == FindingKind.LAST_GOOD),
        "wedges": sorted(
            (f.at, f.data.get("ends_at"))
            for f in findings
            if f.kind == FindingKind.SYMPTOM and f.data.get("kind") == "wedge"
        ),
        "suspects": [
            (f.rank, f.data["key"])
            for f in sorted(findings, key=lambda f: f.rank)
            if f.kind == FindingKind.SUSPECT
        ],
    }


def _analyse(incident: Incident) -> None:
    analysis_request(incident_id=incident.pk)
    incident.refresh_from_db()
    analysis = analysis_run(incident_id=incident.pk)
    assert analysis is not None and analysis.status == RunStatus.DONE, analysis and analysis.error


def _engine_series_as_openmetrics(incident: Incident) -> tuple[str, list[str]]:
    rows = list(Series.objects.filter(incident=incident, name__in=ENGINE_SERIES))
    samples = reader.samples_read([s.pk for s in rows])
    text = openmetrics(
        (
            s.name,
            dict(s.labels),
            [(t / 1000, v) for t, v in zip(*(a.tolist() for a in samples[s.pk]), strict=True)],
        )
        for s in rows
        if s.pk in samples
    )
    return text, sorted({s.name for s in rows})


def test_an_incident_whose_metrics_are_only_remote_finds_the_wedge_the_stored_one_finds(
    loaded: Incident, team: Any, sample_bundle: Path, tmp_path: Path
) -> None:
    _analyse(loaded)
    stored = _verdict(loaded)
    assert stored["wedges"] and stored["first_bad"] is not None and stored["suspects"]

    text, names = _engine_series_as_openmetrics(loaded)
    server = PrometheusServer(backfill(text, tmp_path / "prom" / "tsdb"))
    try:
        # The same evidence without any stored metric: the log's own series are dropped too.
        bundle = tmp_path / "bundle"
        shutil.copytree(sample_bundle, bundle, ignore=shutil.ignore_patterns("metrics"))
        other = ingest_folder(bundle, "dsv4-remote", team)
        Series.objects.filter(incident=other).delete()
        _analyse(other)
        assert not _verdict(other)["wedges"]  # no metrics, no wedge

        source = DataSource.objects.create(team=team, name="fleet", url=server.url)
        for name in names:
            RemoteSeries.objects.create(incident=other, source=source, query=name, name=name)
        _analyse(other)
    finally:
        server.stop()
    remote = _verdict(other)
    assert remote == stored
    assert not Series.objects.filter(incident=other).exists()  # read, never stored
    analysis = current_analysis(other)
    assert analysis is not None
    warnings = analysis.findings.filter(kind=FindingKind.WARNING).values_list("title", flat=True)
    assert not any("remote series" in w for w in warnings)


def test_a_remote_server_that_fails_is_a_warning_of_the_analysis(db: None, incident: Any) -> None:
    incident.last_good_at = dt.datetime(2026, 11, 20, 14, tzinfo=dt.UTC)
    incident.first_bad_at = dt.datetime(2026, 11, 20, 16, tzinfo=dt.UTC)
    incident.save()
    dead = DataSource.objects.create(
        team=incident.team, name="dead", url=f"http://127.0.0.1:{free_port()}", bearer_token="tok"
    )
    RemoteSeries.objects.create(
        incident=incident,
        source=dead,
        query='sglang:num_running_reqs{cluster="a"}',
        name="sglang:num_running_reqs",
    )
    RemoteSeries.objects.create(incident=incident, source=dead, query="unrelated", name="x")
    _analyse(incident)
    analysis = current_analysis(incident)
    assert analysis is not None
    warnings = list(
        analysis.findings.filter(kind=FindingKind.WARNING).values_list("explanation", flat=True)
    )
    failed = [w for w in warnings if "could not be fetched" in w]
    assert len(failed) == 1  # only the series the engine reads is asked for
    assert "sglang:num_running_reqs" in failed[0] and "cannot connect" in failed[0]
    assert "tok" not in failed[0].replace("sglang", "")
