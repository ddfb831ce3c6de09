"""Remote series: an incident draws a series straight from a real Prometheus (backfilled with
promtool), never copying it; the timeline asks for about 1,500 points per trace with peaks
kept and caches the answers; the analysis reads the raw samples of the series it needs.
Real Prometheus, Postgres and cache; nothing mocked."""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import re
import shutil
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.urls import reverse

from tests.metrics.prometheus import PrometheusServer, backfill, free_port, openmetrics
from timeline import charts
from timeline.charts import plotly_text
from timeline.metrics import remote
from timeline.models import AuditEntry, DataSource, RemoteSeries, Series

START = dt.datetime(2026, 11, 18, tzinfo=dt.UTC)
END = START + dt.timedelta(days=2)
SCRAPE_S = 15
SPIKE_AT = START + dt.timedelta(days=1, hours=3, minutes=7, seconds=30)
SPIKE = 987.5
DIP_AT = START + dt.timedelta(hours=9, minutes=41, seconds=15)
DIP = -12.5
PASSWORD_HASH = "$2b$04$37pY5rU8.zMlENj3UUpw5.JdSoeSG9CI1fKfO7uF8zEb7TYx3OYcK"  # correct horse


def _fleet(node: int) -> list[tuple[float, float]]:
    """Two days of a GPU utilisation gauge every 15 s: a slow wave with noise, between 20 and 80;
    node 1 has one sample spiking to SPIKE, node 2 one sample dipping to DIP."""
    rng = np.random.default_rng(node)
    times = np.arange(START.timestamp(), END.timestamp(), SCRAPE_S)
    values = 50 + 20 * np.sin(times / 7200 + node) + rng.random(len(times)) * 5
    points = [(float(t), float(round(v, 2))) for t, v in zip(times, values, strict=True)]
    for at, value, who in ((SPIKE_AT, SPIKE, 1), (DIP_AT, DIP, 2)):
        if node == who:
            i = int((at.timestamp() - START.timestamp()) // SCRAPE_S)
            points[i] = (points[i][0], value)
    return points


FLEET = [("fleet_gpu_util", {"instance": f"node-{i}:9400"}, _fleet(i)) for i in range(3)]
QUERY = "fleet_gpu_util"


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return backfill(openmetrics(FLEET), tmp_path_factory.mktemp("remote") / "tsdb")


def _server(blocks: Path, tmp: Path, **kwargs: Any) -> PrometheusServer:
    data = tmp / "data"
    shutil.copytree(blocks, data)
    return PrometheusServer(data, **kwargs)


@pytest.fixture
def prometheus(blocks: Path, tmp_path: Path) -> Iterator[PrometheusServer]:
    server = _server(blocks, tmp_path / "prom")
    yield server
    server.stop()


def _source(incident: Any, url: str, name: str = "fleet", **secret: str) -> DataSource:
    """A new data source: answers are cached under its id and URL (a fresh port), so no two
    tests share them and the cache (the broker's Redis too) is never cleared."""
    return DataSource.objects.create(team=incident.team, name=name, url=url, **secret)


def _remote(incident: Any, source: DataSource, query: str = QUERY, **fields: Any) -> RemoteSeries:
    """A row as the service would write it, without asking the server (for servers that fail)."""
    return RemoteSeries.objects.create(incident=incident, source=source, query=query, **fields)


def _figure(client: Any, incident: Any, start: dt.datetime, end: dt.datetime) -> dict[str, Any]:
    response = client.get(
        reverse("timeline_data", args=[incident.slug]),
        {"start": start.isoformat(), "end": end.isoformat()},
    )
    assert response.status_code == 200
    return dict(json.loads(response.content)["figure"])


def _lines(figure: dict[str, Any]) -> list[dict[str, Any]]:
    """The metric traces that hold points (a panel with only a message has an empty one)."""
    lines = [
        dict(t, x=charts.from_typed_array(t["x"]), y=charts.from_typed_array(t["y"]))
        for t in figure["data"]
        if t.get("mode") == "lines"
    ]
    return [t for t in lines if len(t["y"])]


def _messages(figure: dict[str, Any]) -> list[str]:
    return [
        a["text"]
        for a in figure["layout"].get("annotations", [])
        if str(a.get("name", "")).startswith("panel-message")
    ]


# --- pure parts ---------------------------------------------------------------------------------


def test_the_step_gives_at_most_the_points_asked_and_never_goes_below_the_data() -> None:
    two_days = 2 * 86400.0
    step = remote.step_for(0, two_days, max_points=1500)
    assert step == 300  # 230 s needed, rounded up to a nice step
    assert 2 * two_days / step <= 1500
    assert remote.step_for(0, 60, max_points=1500) == 1  # never below a second
    assert remote.step_for(0, 600, max_points=1500, resolution=15) == 15  # nor the scrape
    assert remote.step_for(0, 400 * 86400, max_points=1500) == 86400  # whole days past 6 h
    assert remote.quantised(1000.5, 1901, 300) == (900, 2100)


def test_a_selector_is_asked_for_its_raw_samples_and_an_expression_as_a_subquery() -> None:
    assert remote.peak_query('up{job="a"}', 300) == (
        'label_replace(max_over_time(up{job="a"}[299999ms]), "timeline_peak", "max", "", "")'
        ' or label_replace(min_over_time(up{job="a"}[299999ms]), "timeline_peak", "min", "", "")'
    )
    assert "max_over_time((sum(up))[299999ms:15s])" in remote.peak_query("sum(up)", 300)
    assert remote.selector_name('sglang:num_running_reqs{tp="0"}') == "sglang:num_running_reqs"
    assert remote.selector_name("sum(up)") == ""


def test_each_step_is_drawn_as_its_minimum_and_maximum_in_the_order_the_line_goes() -> None:
    result = [
        {
            "metric": {"i": "a", "timeline_peak": "max"},
            "values": [[60, "5"], [120, "9"], [180, "3"]],
        },
        {
            "metric": {"i": "a", "timeline_peak": "min"},
            "values": [[60, "1"], [120, "9"], [180, "2"]],
        },
    ]
    (trace,) = remote.merge_peaks(result, 60)
    assert trace.labels == {"i": "a"}
    # Rising into the second step: minimum then maximum; the flat step is one point; falling
    # out of it: maximum then minimum.
    assert trace.values.tolist() == [1, 5, 9, 3, 2]
    assert trace.ts_ms.tolist() == [15_000, 45_000, 90_000, 135_000, 165_000]


# --- the timeline ------------------------------------------------------------------------------


def test_a_long_window_comes_in_about_1500_points_per_trace_and_keeps_a_one_sample_spike(
    db: None, incident: Any, prometheus: PrometheusServer
) -> None:
    series = _remote(incident, _source(incident, prometheus.url), resolution_s=SCRAPE_S)
    (fetched,) = remote.fetch_window([series], START, END, max_points=1500)
    assert not fetched.error and fetched.step == 300
    assert len(fetched.traces) == 3
    raw = {labels["instance"]: points for _, labels, points in FLEET}
    for trace in fetched.traces:
        assert 1000 < len(trace.ts_ms) <= 1500  # 11,520 samples in, at most 1,500 out
        assert (np.diff(trace.ts_ms) >= 0).all()
        values = [v for _, v in raw[trace.labels["instance"]]]
        # The extremes of each node are in its answer, exactly.
        assert trace.values.max() == max(values) and trace.values.min() == min(values)
    by_node = {t.labels["instance"]: t for t in fetched.traces}
    spike = by_node["node-1:9400"]
    at = spike.ts_ms[spike.values == SPIKE]
    assert len(at) == 1 and abs(at[0] / 1000 - SPIKE_AT.timestamp()) <= fetched.step
    assert DIP in by_node["node-2:9400"].values


def test_the_timeline_draws_remote_series_on_their_panel_with_the_spike(
    client: Any, user: Any, incident: Any, prometheus: PrometheusServer
) -> None:
    source = _source(incident, prometheus.url)
    _remote(incident, source, title="Fleet GPU utilisation", resolution_s=SCRAPE_S)
    client.force_login(user)
    figure = _figure(client, incident, START, END)
    lines = _lines(figure)
    assert len(lines) == 3 and {t["yaxis"] for t in lines} == {"y2"}
    assert "Fleet GPU utilisation" in json.dumps(figure["layout"]["annotations"])
    assert all(len(t["y"]) <= 1500 for t in lines)
    assert any(SPIKE in t["y"] for t in lines)
    assert not Series.objects.exists()  # nothing was copied
    # A zoom asks again at a finer step: an hour around the spike comes at the scrape interval.
    zoom = _figure(client, incident, SPIKE_AT - dt.timedelta(minutes=30), SPIKE_AT)
    spiked = [t for t in _lines(zoom) if SPIKE in t["y"]]
    assert spiked and 120 <= len(spiked[0]["y"]) <= 121  # one point per 15 s step


def test_a_second_view_of_a_window_is_served_from_the_cache(
    db: None, incident: Any, prometheus: PrometheusServer
) -> None:
    series = _remote(incident, _source(incident, prometheus.url), resolution_s=SCRAPE_S)
    first = remote.fetch_window([series], START, END, max_points=1500)[0]
    assert not first.cached and first.traces
    prometheus.stop()  # a second ask would now fail
    # The same window, and one that quantises to the same steps, come from the cache.
    again = remote.fetch_window([series], START, END, max_points=1500)[0]
    nudged = remote.fetch_window(
        [series], START + dt.timedelta(seconds=40), END - dt.timedelta(seconds=40), max_points=1500
    )[0]
    for answer in (again, nudged):
        assert answer.cached and not answer.error
        assert [t.values.tolist() for t in answer.traces] == [
            t.values.tolist() for t in first.traces
        ]
    # Another window is not in the cache: the stopped server's failure is what it says.
    other = remote.fetch_window([series], START, START + dt.timedelta(hours=1), max_points=1500)
    assert "cannot connect" in other[0].error


def test_a_window_in_the_past_is_kept_longer_than_one_reaching_now(
    db: None, incident: Any, prometheus: PrometheusServer
) -> None:
    series = _remote(incident, _source(incident, prometheus.url))
    now = dt.datetime.now(dt.UTC)
    remote.fetch_window([series], START, END, max_points=1500)
    remote.fetch_window([series], now - dt.timedelta(hours=1), now, max_points=1500)
    ttls = {}
    for start, end in ((START, END), (now - dt.timedelta(hours=1), now)):
        step = remote.step_for(start.timestamp(), end.timestamp(), max_points=1500)
        lo, hi = remote.quantised(start.timestamp(), end.timestamp(), step)
        key = remote._cache_key(series, step, lo, hi)
        assert cache.get(key) is not None
        ttls[start] = _ttl(key)
    if ttls[START] is not None:  # the local-memory cache does not say
        assert ttls[START] > remote.NOW_TTL_S >= ttls[now - dt.timedelta(hours=1)]


def _ttl(key: str) -> float | None:
    """Seconds left for a key, where the cache backend can tell."""
    backend = cache
    if hasattr(backend, "_expire_info"):  # LocMemCache
        expires = backend._expire_info.get(backend.make_and_validate_key(key))
        import time

        return None if expires is None else expires - time.time()
    client = getattr(backend, "_cache", None)
    if client is not None and hasattr(client, "get_client"):  # RedisCache
        redis = client.get_client(key)
        return float(redis.ttl(backend.make_and_validate_key(key)))
    return None


def test_a_failing_server_puts_its_error_on_its_panel_and_the_rest_draws(
    client: Any, user: Any, incident: Any, prometheus: PrometheusServer
) -> None:
    good = _source(incident, prometheus.url)
    dead = _source(incident, f"http://127.0.0.1:{free_port()}", name="dead")
    _remote(incident, good, title="Fleet")
    _remote(incident, good, query='sum(fleet_gpu_util{instance="<b>x</b>"}', title="Broken")
    _remote(incident, dead, title="Unreachable")
    client.force_login(user)
    figure = _figure(client, incident, START, END)
    assert len(_lines(figure)) == 3  # the fleet draws
    said = prometheus.query('sum(fleet_gpu_util{instance="<b>x</b>"}', END.timestamp())
    assert said["status"] == "error"
    messages = _messages(figure)
    assert len(messages) == 2
    broken = next(m for m in messages if "bad_data" in m)
    assert "parse error" in broken
    assert "<b>" not in broken and "&lt;b&gt;" in broken  # escaped for Plotly
    assert any("cannot connect" in m for m in messages)


def test_a_query_answering_too_many_series_draws_the_first_and_says_so(
    client: Any, user: Any, incident: Any, prometheus: PrometheusServer, monkeypatch: Any
) -> None:
    monkeypatch.setattr(remote, "MAX_TRACES", 2)
    _remote(incident, _source(incident, prometheus.url), title="Fleet")
    client.force_login(user)
    figure = _figure(client, incident, START, END)
    assert len(_lines(figure)) == 2
    assert any("showing 2 of 3 series" in m for m in _messages(figure))


def test_the_postmortem_export_embeds_what_it_fetched(
    client: Any, user: Any, incident: Any, prometheus: PrometheusServer
) -> None:
    incident.last_good_at, incident.first_bad_at = START, END  # the export's window
    incident.save()
    _remote(incident, _source(incident, prometheus.url), title="Fleet", resolution_s=SCRAPE_S)
    client.force_login(user)
    html = client.get(reverse("postmortem_export", args=[incident.slug, "html"])).content.decode()
    prometheus.stop()
    # The offline file holds the samples (metric traces as base64 typed arrays).
    values = [
        v
        for data in re.findall(r'"bdata":"([^"]+)"', html)
        for v in charts.from_typed_array({"bdata": data})
    ]
    assert "Fleet" in html and SPIKE in values


# --- adding, removing, access -------------------------------------------------------------------


def test_adding_asks_the_server_once_and_refuses_a_bad_query_in_its_own_words(
    client: Any, user: Any, incident: Any, prometheus: PrometheusServer
) -> None:
    source = _source(incident, prometheus.url)
    incident.last_good_at, incident.first_bad_at = START, END
    incident.save()
    client.force_login(user)
    url = reverse("remote_series_new", args=[incident.slug])
    page = client.post(url, {"source": source.pk, "query": "rate(fleet_gpu_util[5m]"}, follow=True)
    said = prometheus.query("rate(fleet_gpu_util[5m]", END.timestamp())
    assert f"{said['errorType']}: {said['error']}" in page.content.decode().replace("&quot;", '"')
    assert not RemoteSeries.objects.exists()
    client.post(url, {"source": source.pk, "query": "fleet_gpu_util[5m]"})  # not drawable
    assert not RemoteSeries.objects.exists()

    page = client.post(url, {"source": source.pk, "query": QUERY, "title": "Fleet"}, follow=True)
    series = RemoteSeries.objects.get()
    assert (series.name, series.title, series.created_by) == ("fleet_gpu_util", "Fleet", user)
    assert math.isclose(series.resolution_s, SCRAPE_S, rel_tol=0.1)  # measured when added
    assert "Remove" in page.content.decode() and QUERY in page.content.decode()
    entry = AuditEntry.objects.get(action="remote_series.add")
    assert entry.actor == user and entry.data["query"] == QUERY

    client.post(reverse("remote_series_delete", args=[incident.slug, series.pk]))
    assert not RemoteSeries.objects.exists()
    assert AuditEntry.objects.filter(action="remote_series.remove").count() == 1


def test_another_team_can_neither_add_see_nor_remove_remote_series(
    client: Any, user: Any, outsider: Any, incident: Any, other_team: Any
) -> None:
    mine = _source(incident, "http://127.0.0.1:9", name="mine")
    theirs = DataSource.objects.create(team=other_team, name="theirs", url="http://127.0.0.1:9")
    series = _remote(incident, mine, title="Fleet")
    client.force_login(outsider)
    add = reverse("remote_series_new", args=[incident.slug])
    assert client.post(add, {"source": theirs.pk, "query": "up"}).status_code == 404
    remove = reverse("remote_series_delete", args=[incident.slug, series.pk])
    assert client.post(remove).status_code == 404
    assert client.get(reverse("timeline_data", args=[incident.slug])).status_code == 404
    assert client.get(reverse("upload", args=[incident.slug])).status_code == 404
    assert RemoteSeries.objects.count() == 1
    # A member cannot draw from another team's data source either.
    client.force_login(user)
    client.post(add, {"source": theirs.pk, "query": "up"})
    assert RemoteSeries.objects.count() == 1
    page = client.get(reverse("upload", args=[incident.slug])).content.decode()
    assert "mine" in page and "theirs" not in page
    assert client.post(add, {"source": mine.pk, "query": "up"}).status_code == 302  # with CSRF
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post(remove).status_code == 403  # no CSRF token
    assert RemoteSeries.objects.filter(pk=series.pk).exists()


def test_a_data_source_password_is_never_in_a_page_a_message_or_the_log(
    client: Any,
    user: Any,
    incident: Any,
    blocks: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = _server(blocks, tmp_path / "prom", basic_auth=f"alice:{PASSWORD_HASH}")
    caplog.set_level(logging.DEBUG)
    try:
        right = _source(incident, server.url, username="alice", password="correct horse")
        wrong = _source(incident, server.url, name="wrong", username="alice", password="s3cr3t")
        client.force_login(user)
        url = reverse("remote_series_new", args=[incident.slug])
        refused = client.post(url, {"source": wrong.pk, "query": QUERY}, follow=True)
        assert "HTTP 401 Unauthorized" in refused.content.decode()
        client.post(url, {"source": right.pk, "query": QUERY})
        series = RemoteSeries.objects.get()
        _remote(incident, wrong, title="Wrong")
        figure = client.get(
            reverse("timeline_data", args=[incident.slug]),
            {"start": START.isoformat(), "end": END.isoformat()},
        ).content.decode()
        page = client.get(reverse("upload", args=[incident.slug])).content.decode()
        audit = client.get(reverse("audit_log", args=[incident.slug])).content.decode()
    finally:
        server.stop()
    assert SPIKE in [v for t in _lines(json.loads(figure)["figure"]) for v in t["y"]]
    assert "401" in figure
    out = StringIO()
    call_command("remote_series", incident=incident.slug, list=True, stdout=out)
    for text in (refused.content.decode(), figure, page, audit, caplog.text, out.getvalue()):
        assert "correct horse" not in text and "s3cr3t" not in text
    assert "correct horse" not in repr(series) + str(series) + str(right)


def test_the_command_adds_lists_and_removes(
    db: None, incident: Any, prometheus: PrometheusServer
) -> None:
    _source(incident, prometheus.url)
    incident.last_good_at, incident.first_bad_at = START, END
    incident.save()
    out = StringIO()
    call_command("remote_series", incident=incident.slug, source="fleet", query=QUERY, stdout=out)
    series = RemoteSeries.objects.get()
    assert f"remote series {series.pk}: {QUERY} from fleet as fleet_gpu_util" in out.getvalue()
    with pytest.raises(CommandError, match="parse error"):
        call_command("remote_series", incident=incident.slug, source="fleet", query="sum(")
    with pytest.raises(CommandError, match="no data source"):
        call_command("remote_series", incident=incident.slug, source="nope", query=QUERY)
    out = StringIO()
    call_command("remote_series", incident=incident.slug, list=True, stdout=out)
    assert out.getvalue().startswith(f"{series.pk}\tfleet\t{QUERY} as fleet_gpu_util")
    call_command("remote_series", incident=incident.slug, remove=series.pk, stdout=StringIO())
    assert not RemoteSeries.objects.exists()
    assert AuditEntry.objects.filter(action__startswith="remote_series.").count() == 2


@pytest.mark.browser
def test_the_page_draws_a_remote_panel_and_a_failing_one_with_its_error(
    logged_in_page: Any, live_server: Any, incident: Any, prometheus: PrometheusServer
) -> None:
    from tests.conftest import screenshot

    incident.last_good_at, incident.first_bad_at = START, END
    incident.save()
    _remote(incident, _source(incident, prometheus.url), title="Fleet GPU", resolution_s=SCRAPE_S)
    dead = _source(incident, f"http://127.0.0.1:{free_port()}", name="dead")
    _remote(incident, dead, title="Dead server")
    page = logged_in_page
    page.goto(f"{live_server.url}/incidents/{incident.slug}/")
    page.wait_for_selector("#timeline-chart[data-state=ready]")
    svg = page.locator("#timeline-chart .main-svg").first.inner_html()
    texts = page.eval_on_selector_all(
        "#timeline-chart .annotation-text", "els => els.map(e => e.textContent)"
    )
    screenshot(page, "timeline-remote-series")
    assert "Fleet GPU" in texts and "Dead server" in texts
    assert any("cannot connect" in t for t in texts)
    drawn = page.evaluate(
        # _fullData: the traces as drawn (the JSON's base64 arrays decoded into typed arrays)
        "() => document.getElementById('timeline-chart')._fullData"
        ".filter(t => t.mode === 'lines' && t.y.length).map(t => t.y.length)"
    )
    assert len(drawn) == 3 and all(n <= 1500 for n in drawn)
    assert "<b>" not in svg


def test_the_cached_figure_neither_hides_a_new_remote_series_nor_keeps_its_answer_too_long(
    client: Any, user: Any, incident: Any, prometheus: PrometheusServer, monkeypatch: Any
) -> None:
    client.force_login(user)
    assert _lines(_figure(client, incident, START, END)) == []  # cached without remote series
    assert remote.figure_token(bool(remote.of_incident(incident))) == ""
    incident.last_good_at = START  # the window the server is asked about
    incident.save()
    url = reverse("remote_series_new", args=[incident.slug])
    client.post(url, {"source": _source(incident, prometheus.url).pk, "query": QUERY})
    assert len(_lines(_figure(client, incident, START, END))) == 3  # a new version
    # The figure's key also moves on every NOW_TTL_S: a window reaching now is asked again.
    monkeypatch.setattr(remote, "NOW_TTL_S", 1)
    token = remote.figure_token(bool(remote.of_incident(incident)))
    assert token.startswith("remote:")
    import time

    time.sleep(1.1)
    assert remote.figure_token(bool(remote.of_incident(incident))) != token


def test_remote_series_named_as_a_metric_share_that_metric_panel(
    client: Any, user: Any, incident: Any, prometheus: PrometheusServer
) -> None:
    source = _source(incident, prometheus.url)
    _remote(incident, source, name="DCGM_FI_DEV_GPU_UTIL")
    _remote(incident, source, query="max(fleet_gpu_util)", name="DCGM_FI_DEV_GPU_UTIL")
    _remote(incident, source, query="min(fleet_gpu_util)", title="Fleet minimum")
    client.force_login(user)
    figure = _figure(client, incident, START, END)
    by_axis: dict[str, int] = {}
    for t in _lines(figure):
        by_axis[t["yaxis"]] = by_axis.get(t["yaxis"], 0) + 1
    assert by_axis == {"y2": 4, "y3": 1}  # three nodes and their maximum; the minimum apart
    titles = [a["text"] for a in figure["layout"]["annotations"]]
    assert plotly_text("GPU utilisation (%)") in titles
    assert "Fleet minimum" in titles


def test_a_query_too_long_for_its_index_is_refused_before_the_database(incident: Any) -> None:
    # Over 2,000 bytes: the unique (incident, source, query) index refuses rows over ~2.7 kB, and a
    # long query used to reach it (an OperationalError, a 500) after the server was asked.
    from ingest.services import IngestError
    from ingest.services.remote import remote_series_add

    source = _source(incident, f"http://127.0.0.1:{free_port()}")  # never asked
    long_query = 'up{a="' + "é" * 997 + '"}'  # 2,002 bytes in UTF-8, 1,005 characters
    with pytest.raises(IngestError, match="longer than 2,000 bytes"):
        remote_series_add(incident=incident, source=source, query=long_query)
    assert not RemoteSeries.objects.exists()


# DCGM's "no reading" values as dcgm-exporter writes them (ingest.parsers.series.DCGM_BLANKS):
# int64 (DCGM_INT64_BLANK and its siblings), int32 and fp64 blanks.
DCGM_BLANK_VALUES = (9223372036854775794.0, 2147483632.0, 140737488355328.0)


def test_dcgm_blank_values_of_a_remote_series_are_neither_drawn_nor_analysed(
    client: Any, user: Any, incident: Any, tmp_path: Path
) -> None:
    """A GPU whose exporter reports DCGM's "blank / not supported" value now and then: the
    values are left out of the figure and of the analysis, as an ingested file's are, and said."""
    times = np.arange(START.timestamp(), START.timestamp() + 3600, SCRAPE_S)
    points = [(float(t), 40.0 + (i % 7)) for i, t in enumerate(times)]
    blank_at = [17, 95, 181]
    for i, value in zip(blank_at, DCGM_BLANK_VALUES, strict=True):
        points[i] = (points[i][0], value)
    server = PrometheusServer(
        backfill(
            openmetrics([("DCGM_FI_DEV_GPU_UTIL", {"gpu": "0", "Hostname": "node-1"}, points)]),
            tmp_path / "dcgm",
        )
    )
    try:
        source = _source(incident, server.url)
        _remote(incident, source, query="DCGM_FI_DEV_GPU_UTIL", name="DCGM_FI_DEV_GPU_UTIL")
        client.force_login(user)
        # One step per scrape: every blank is a step of its own, so its step is not drawn.
        figure = _figure(client, incident, START, START + dt.timedelta(minutes=60))
        (line,) = _lines(figure)
        assert max(line["y"]) <= 46.0 and min(line["y"]) >= 40.0
        assert len(line["y"]) == len(points) - len(blank_at)
        (message,) = [m for m in _messages(figure) if "DCGM" in m]
        assert "3 steps held DCGM's 'blank / not supported' value" in message
        # A wide step holding a blank among readings: drawn from the readings (its minimum).
        wide = remote.fetch_window(
            list(RemoteSeries.objects.filter(incident=incident)),
            START,
            START + dt.timedelta(minutes=60),
            max_points=20,
        )[0]
        assert wide.step > SCRAPE_S and wide.blanks == 3
        assert wide.traces and float(np.max(wide.traces[0].values)) <= 46.0

        incident.last_good_at = START
        incident.first_bad_at = START + dt.timedelta(seconds=float(times[-1] - times[0]))
        incident.save()
        series, warnings = remote.engine_series(incident, ["DCGM_FI_DEV_GPU_UTIL"])
    finally:
        server.stop()
    (gpu,) = series
    values = gpu.values.array
    assert values.size == len(points) - len(blank_at) and float(values.max()) <= 46.0
    (warning,) = warnings
    assert "3 samples held DCGM's 'blank / not supported' value" in warning
    assert "DCGM_FI_DEV_GPU_UTIL" in warning
