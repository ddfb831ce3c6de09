"""Pulling an incident's metrics from a real Prometheus (backfilled with promtool) through the
one ingest path into the real database."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from tests.metrics.prometheus import PrometheusServer, backfill, free_port, openmetrics
from timeline.choices import RunStatus
from timeline.metrics.reader import samples_count, samples_read
from timeline.models import Artifact, DataSource, MetricsPull, Series

START = dt.datetime(2026, 11, 20, 14, 0, tzinfo=dt.UTC)
END = START + dt.timedelta(hours=2, minutes=30)
STEP_S = 5
PASSWORD_HASH = "$2b$04$37pY5rU8.zMlENj3UUpw5.JdSoeSG9CI1fKfO7uF8zEb7TYx3OYcK"  # correct horse


def _points(seed: int, lo: dt.datetime, hi: dt.datetime) -> list[tuple[float, float]]:
    """A sample every 5 s (with a millisecond offset) between lo and hi."""
    rng = np.random.default_rng(seed)
    times = np.arange(lo.timestamp(), hi.timestamp(), STEP_S) + 0.123
    return [
        (float(t), float(round(v, 3)))
        for t, v in zip(times, rng.random(len(times)) * 100, strict=True)
    ]


# Data reaches 40 minutes past either end of the window: a pull must take only the window.
SPAN = (START - dt.timedelta(minutes=40), END + dt.timedelta(minutes=40))
SERIES = [
    ("sglang:num_running_reqs", {"model_name": "dsv4", "tp_rank": "0"}, _points(1, *SPAN)),
    ("sglang:num_running_reqs", {"model_name": "dsv4", "tp_rank": "1"}, _points(2, *SPAN)),
    ("DCGM_FI_DEV_GPU_UTIL", {"gpu": "0", "instance": "node1:9400"}, _points(3, *SPAN)),
    ("sglang:time_to_first_token_seconds_bucket", {"le": "0.5"}, _points(4, *SPAN)),
    ("unrelated_metric", {}, _points(5, *SPAN)),
]
PULLED = [s for s in SERIES if s[0] != "unrelated_metric"]


def _in(points: list[tuple[float, float]], lo: dt.datetime, hi: dt.datetime) -> list[Any]:
    return [(t, v) for t, v in points if lo.timestamp() <= t <= hi.timestamp()]


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return backfill(openmetrics(SERIES), tmp_path_factory.mktemp("prom") / "tsdb")


def _server(blocks: Path, tmp: Path, **kwargs: Any) -> PrometheusServer:
    """A server of its own over a copy of the blocks (Prometheus owns its data dir)."""
    import shutil

    data = tmp / "data"
    shutil.copytree(blocks, data)
    return PrometheusServer(data, **kwargs)


@pytest.fixture
def prometheus(blocks: Path, tmp_path: Path) -> Iterator[PrometheusServer]:
    server = _server(blocks, tmp_path / "prom")
    yield server
    server.stop()


def _pull(**opts: Any) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("prometheus_pull", stdout=out, stderr=err, **opts)
    return out.getvalue(), err.getvalue()


def _iso(at: dt.datetime) -> str:
    return at.isoformat()


def test_a_pull_stores_every_raw_sample_in_the_window_once(
    celery_worker: Any, incident: Any, prometheus: PrometheusServer
) -> None:
    out, _ = _pull(incident=incident.slug, url=prometheus.url, start=_iso(START), end=_iso(END))
    expected = sum(len(_in(p, START, END)) for _, _, p in PULLED)
    assert f"{expected} new samples in 4 series" in out
    pull = MetricsPull.objects.get()
    assert pull.status == RunStatus.DONE and pull.progress == 1.0
    series = {
        (s.name, s.labels.get("tp_rank", s.labels.get("gpu", ""))): s for s in Series.objects.all()
    }
    assert len(series) == 4  # the unrelated metric was not asked for
    for name, labels, points in PULLED:
        s = Series.objects.get(name=name, labels={**labels, "source": prometheus.url})
        ts, values = samples_read([s.pk])[s.pk]
        want = _in(points, START, END)
        assert ts.tolist() == [round(t * 1000) for t, _ in want]  # Prometheus's own times
        assert values.tolist() == [v for _, v in want]
    assert samples_count() == expected
    artifacts = Artifact.objects.count()

    out, _ = _pull(incident=incident.slug, url=prometheus.url, start=_iso(START), end=_iso(END))
    assert "0 new samples" in out
    assert samples_count() == expected
    assert Artifact.objects.count() == artifacts  # the same answers are the same artifacts

    # A wider window adds only the samples outside the first one.
    wider = START - dt.timedelta(minutes=10)
    out, _ = _pull(incident=incident.slug, url=prometheus.url, start=_iso(wider), end=_iso(END))
    added = sum(len(_in(p, wider, END)) - len(_in(p, START, END)) for _, _, p in PULLED)
    assert f"{added} new samples" in out
    assert samples_count() == expected + added


def test_a_query_over_prometheus_sample_limit_is_asked_in_smaller_pieces(
    db: None, incident: Any, blocks: Path, tmp_path: Path
) -> None:
    # One hour of one series holds 720 samples: over the limit, so each hour is halved.
    server = _server(blocks, tmp_path / "prom", max_samples=500)
    try:
        incident.last_good_at, incident.first_bad_at = START, END  # the window, from the marks
        incident.save()
        out, _ = _pull(
            incident=incident.slug, url=server.url, query=["sglang:num_running_reqs"], here=True
        )
    finally:
        server.stop()
    expected = sum(len(_in(p, START, END)) for n, _, p in PULLED if n == "sglang:num_running_reqs")
    assert f"{expected} new samples in 2 series" in out
    assert samples_count() == expected


def test_a_bad_query_fails_with_prometheus_own_error(
    db: None, incident: Any, prometheus: PrometheusServer
) -> None:
    with pytest.raises(CommandError) as caught:
        _pull(
            incident=incident.slug,
            url=prometheus.url,
            query=['sglang:num_running_reqs{tp_rank="0"'],
            start=_iso(START),
            end=_iso(END),
            here=True,
        )
    said = prometheus.query('sglang:num_running_reqs{tp_rank="0"', END.timestamp())
    assert said["status"] == "error"
    assert f"{said['errorType']}: {said['error']}" in str(caught.value)  # word for word
    assert "parse error" in str(caught.value)
    pull = MetricsPull.objects.get()
    assert pull.status == RunStatus.FAILED and pull.error.startswith("bad_data: ")
    assert samples_count() == 0


def test_a_refused_connection_is_reported(db: None, incident: Any) -> None:
    port = free_port()
    with pytest.raises(CommandError, match="credentials"):
        _pull(incident=incident.slug, url=f"http://bob:pw@127.0.0.1:{port}", here=True)
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(CommandError, match="cannot connect: .*[Cc]onnection refused"):
        _pull(incident=incident.slug, url=url, start=_iso(START), end=_iso(END), here=True)


def test_a_data_source_authenticates_and_its_password_is_never_shown(
    db: None, incident: Any, blocks: Path, tmp_path: Path
) -> None:
    server = _server(blocks, tmp_path / "prom", basic_auth=f"alice:{PASSWORD_HASH}")
    try:
        wrong = DataSource.objects.create(
            team=incident.team, name="wrong", url=server.url, username="alice", password="nope"
        )
        right = DataSource.objects.create(
            team=incident.team,
            name="right",
            url=server.url,
            username="alice",
            password="correct horse",
        )
        common = {"incident": incident.slug, "start": _iso(START), "end": _iso(END), "here": True}
        with pytest.raises(CommandError, match="HTTP 401 Unauthorized") as caught:
            _pull(source=wrong.name, query=["DCGM_FI_DEV_GPU_UTIL"], **common)
        assert "nope" not in str(caught.value)
        out, err = _pull(source=right.name, query=["DCGM_FI_DEV_GPU_UTIL"], **common)
    finally:
        server.stop()
    assert "correct horse" not in out + err + repr(right) + str(right)
    expected = len(_in(SERIES[2][2], START, END))
    assert f"{expected} new samples in 1 series" in out


def test_the_upload_page_pulls_from_a_team_data_source_and_never_shows_its_secret(
    client: Any, user: Any, incident: Any, other_team: Any
) -> None:
    mine = DataSource.objects.create(
        team=incident.team, name="prod", url="http://127.0.0.1:9", bearer_token="tok-SECRET"
    )
    theirs = DataSource.objects.create(team=other_team, name="theirs", url="http://127.0.0.1:9")
    client.force_login(user)
    page = client.get(f"/incidents/{incident.slug}/upload/").content.decode()
    assert "Pull from Prometheus" in page and "prod" in page
    assert "tok-SECRET" not in page and "theirs" not in page
    url = f"/incidents/{incident.slug}/pull/"
    window = {"start": "2026-11-20 14:00:00Z", "end": "2026-11-20 16:30:00Z"}
    client.post(url, {"source": theirs.pk, **window})
    assert not MetricsPull.objects.exists()  # another team's source is not a choice
    client.post(url, {"source": mine.pk, "queries": "up\nDCGM_FI_DEV_GPU_UTIL", **window})
    pull = MetricsPull.objects.get()
    assert (pull.source, pull.queries, pull.start) == (mine, ["up", "DCGM_FI_DEV_GPU_UTIL"], START)
    assert "tok-SECRET" not in client.get(f"/incidents/{incident.slug}/upload/").content.decode()


def test_a_server_that_never_answers_is_reported_as_a_timeout() -> None:
    import socket

    from ingest.clients.prometheus import PrometheusError, Server, instant_query

    with socket.socket() as listener:  # accepts the connection (backlog), never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        with pytest.raises(PrometheusError, match=r"no answer within 0.5 s"):
            instant_query(Server(url=url, timeout=0.5), "up[1m]", END.timestamp())
