"""Issue 17: the metrics store against a real Prometheus on the same samples, in one run.

A fleet (``--nodes`` nodes, ``--names`` metric names, so each name has one series per node:
integer gauges, bounded floats with a few decimals, counters, integer percents) scraped every
``--interval`` seconds for ``--hours`` is written twice: as OpenMetrics (seconds) for
``promtool tsdb create-blocks-from openmetrics`` (blocks up to 24 h: what compaction makes of
them) and as Prometheus text (ms) for the product's own ingest (``artifact_register_bytes`` +
``artifact_ingest``: parse, hourly chunks by COPY, rollups). Then, each beside its target:

- ingest time and bytes per sample, as ratios to Prometheus (Prometheus: ``du`` of the blocks;
  here: the chunks' packed columns, the chunk table with its index and TOAST, the rollups);
- window reads over HTTP, both servers on this machine: ``timeline.json`` of one metric name
  (``--nodes`` series) under gunicorn against Prometheus's ``query_range`` of the same name and
  window at a step of max(window / 1,500, scrape interval), the points the timeline draws; p50
  of ``--repeat`` calls with the window shifted each time (so no call repeats another's
  window), 20 min, 1 h and the whole span (target: <= 2x for 20 min and 1 h, <= 1x whole);
- 50 clients on ``timeline.json`` (``bench/timeline.py``'s load run: a day of one-second
  samples of 200 series, each client the whole day then random zooms): p99 (target <= 1 s),
  errors (target 0);
- the analysis of 1M events plus 5M samples (``bench/correlate.py``): seconds (target <= 2).

    .venv/bin/python bench/prometheus.py [--nodes 8] [--names 25] [--hours 24] [--interval 5]
        [--repeat 20] [--skip-load] [--skip-analysis]
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parent.parent)

import numpy as np  # noqa: E402

from bench import _common  # noqa: E402

PREFIX = "benchprom_"


def fleet(nodes: int, names: int, hours: float, interval: float, seed: int = 7) -> list:
    """(name, labels, times in ms, values) per series: integer gauges, bounded floats with a
    few decimals, and counters, as exporters give them; every name has one series per node."""
    rng = np.random.default_rng(seed)
    start = _common.FLEET_START_MS
    n = int(hours * 3600 / interval)
    base = start + np.arange(n, dtype=np.int64) * int(interval * 1000)
    out = []
    for node in range(nodes):
        jitter = rng.integers(0, 40, n)  # scrapes land a few ms late
        ts = base + jitter
        for k in range(names):
            kind = k % 4
            if kind == 0:  # running / queued requests: small integers
                values = np.clip(np.cumsum(rng.integers(-2, 3, n)), 0, 256).astype(float)
            elif kind == 1:  # token usage, utilisation: 0..1 with 2-4 decimals
                values = np.round(np.clip(0.5 + np.cumsum(rng.normal(0, 0.01, n)), 0, 1), 4)
            elif kind == 2:  # a counter
                values = np.cumsum(rng.integers(0, 500, n)).astype(float)
            else:  # GPU util: integer percent
                values = rng.integers(0, 101, n).astype(float)
            out.append((f"{PREFIX}m{k:02d}", {"node": f"node{node}"}, ts, values))
    return out


def _fmt(v: float) -> str:
    return repr(float(v))


def write_texts(series: list, folder: Path) -> tuple[Path, Path]:
    om, text = folder / "data.om", folder / "data.prom"
    with om.open("w") as a, text.open("w") as b:
        names = sorted({s[0] for s in series})
        for name in names:
            a.write(f"# TYPE {name} gauge\n")
            b.write(f"# TYPE {name} gauge\n")
            for s_name, labels, ts, values in series:
                if s_name != name:
                    continue
                sel = name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
                for t, v in zip(ts.tolist(), values.tolist(), strict=True):
                    a.write(f"{sel} {_fmt(v)} {t // 1000}.{t % 1000:03d}\n")
                    b.write(f"{sel} {_fmt(v)} {t}\n")
        a.write("# EOF\n")
    return om, text


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """One GET over a new loopback connection (as a browser tab or Grafana panel does): status
    and the whole body, read to the end."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def window_reads(
    prom_port: int, our_port: int, cookie: str, slug: str, span: tuple[float, float], args
) -> dict[str, float]:
    """p50 ms of timeline.json and of query_range, same name, same windows, shifted per call."""
    name = f"{PREFIX}m00"
    first, last = span
    out = {}
    print(
        f"\nwindow reads: one name = {args.nodes} series, p50 of {args.repeat} calls, the window "
        f"shifted each call, after {args.warmup} uncounted calls"
    )
    print(f"  {'window':<10} {'timeline.json':>14} {'query_range':>12} {'ratio':>7}  target")
    for label, seconds, target in (
        ("20 min", 1200, 2.0),
        ("1 h", 3600, 2.0),
        ("whole", last - first, 1.0),
    ):
        ours, theirs = [], []
        shift = max(1.0, (last - first - seconds) / args.repeat) if label != "whole" else 60.0
        # Both servers warmed on this window size first, uncounted (windows half a shift off
        # the counted ones): a fresh gunicorn worker takes ~20 requests to reach its pace
        # (prepared statements, caches; 7.3 ms down to ~3.4 for 20 min), Prometheus a few.
        for i in range(-args.warmup, args.repeat):
            at = i if i >= 0 else (-i - 0.5) % args.repeat
            if label == "whole":
                lo, hi = first - 60 * args.repeat / 2 + at * shift, last + at * shift
            else:
                lo = first + at * shift
                hi = lo + seconds
            step = max((hi - lo) / 1500, args.interval)
            q = urllib.parse.urlencode(
                {"query": name, "start": f"{lo:.3f}", "end": f"{hi:.3f}", "step": f"{step:.3f}"}
            )
            started = time.perf_counter()
            status, body = get(prom_port, f"/api/v1/query_range?{q}")
            if i >= 0:
                theirs.append(time.perf_counter() - started)
            assert status == 200 and b'"success"' in body, body[:300]
            ws = urllib.parse.urlencode(
                {"series": name, "start": iso(lo), "end": iso(hi)}, safe=":"
            )
            started = time.perf_counter()
            status, body = get(
                our_port, f"/incidents/{slug}/timeline.json?{ws}", {"Cookie": cookie}
            )
            if i >= 0:
                ours.append(time.perf_counter() - started)
            assert status == 200 and body.startswith(b'{"figure"'), (status, body[:300])
            drawn = sum(1 for t in json.loads(body)["figure"]["data"] if t.get("yaxis") == "y2")
            assert drawn == args.nodes, (drawn, args.nodes)
        o, t = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
        print(
            f"  {label:<10} {o:11.1f} ms {t:9.1f} ms {o / t:6.2f}x  <= {target:g}x "
            f"{'met' if o / t <= target else 'NOT MET'}"
        )
        out[label] = o / t
    return out


def iso(epoch_s: float) -> str:
    return dt.datetime.fromtimestamp(epoch_s, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--names", type=int, default=25)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=20, help="uncounted calls per window")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--skip-load", action="store_true", help="no 50-client run")
    parser.add_argument("--skip-analysis", action="store_true", help="no 1M-event analysis")
    args = parser.parse_args()
    _common.setup("prometheus", time_limit=3600)

    from django.db import connection

    from ingest.services import loading, storage
    from tests.metrics.prometheus import PROMTOOL, PrometheusServer
    from timeline.metrics.reader import samples_count

    summary: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="bench-prom-"))
    try:
        series = fleet(args.nodes, args.names, args.hours, args.interval)
        total = sum(len(s[2]) for s in series)
        print(
            f"{len(series)} series x {len(series[0][2])} samples ({args.interval:g} s for "
            f"{args.hours:g} h) = {total:,} samples"
        )
        om, text = write_texts(series, work)

        data = work / "tsdb"
        started = time.perf_counter()
        subprocess.run(
            [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h"]
            + [str(om), str(data)],
            check=True,
            capture_output=True,
        )
        prom_ingest = time.perf_counter() - started
        prom_bytes = du(data)

        _, user, incident = _common.team_user_incident("benchprom")
        started = time.perf_counter()
        artifact, _ = storage.artifact_register_bytes(
            incident=incident, name="data.prom", data=text.read_bytes()
        )
        loaded = loading.artifact_ingest(artifact_id=artifact.pk)
        ours_ingest = time.perf_counter() - started
        assert loaded.status == "done", loaded.error
        assert samples_count() == total, (samples_count(), total)
        with connection.cursor() as cur:
            cur.execute("VACUUM ANALYZE timeline_samplechunk")
            cur.execute("VACUUM ANALYZE timeline_samplerollup")
            cur.execute(
                "SELECT sum(pg_column_size(ts) + pg_column_size(vals)), count(*) "
                "FROM timeline_samplechunk"
            )
            packed, chunks = cur.fetchone()
            cur.execute("SELECT pg_total_relation_size('timeline_samplechunk')")
            (chunk_table,) = cur.fetchone()
            cur.execute("SELECT pg_total_relation_size('timeline_samplerollup')")
            (rollup_table,) = cur.fetchone()

        print("\ningest (same samples)")
        print(f"  promtool create-blocks-from openmetrics  {prom_ingest:8.2f} s")
        print(
            f"  artifact_register_bytes + artifact_ingest {ours_ingest:8.2f} s   "
            f"x{ours_ingest / prom_ingest:.2f} of Prometheus"
        )
        summary.append(f"ingest                x{ours_ingest / prom_ingest:.2f} of promtool's time")
        print("\nbytes per sample")
        print(f"  Prometheus blocks (du)                   {prom_bytes / total:8.3f}")
        for label, size in (
            ("chunks: packed ts + vals columns", packed),
            ("chunk table (rows, index, TOAST)", chunk_table),
            ("rollup table (per-minute min/max)", rollup_table),
        ):
            print(f"  {label:<40} {size / total:8.3f}   x{size / prom_bytes:.2f} of Prometheus")
        print(f"  ({chunks} chunks)")
        summary.append(
            f"bytes per sample      x{chunk_table / prom_bytes:.2f} of Prometheus "
            f"(chunk table; target <= 1.5x) "
            f"{'met' if chunk_table / prom_bytes <= 1.5 else 'NOT MET'}"
        )

        first = min(float(s[2][0]) for s in series) / 1000
        last = max(float(s[2][-1]) for s in series) / 1000
        server = PrometheusServer(data)
        try:
            prom_port = int(server.url.rsplit(":", 1)[1])
            cookie = _common.session_cookie(user)
            with _common.gunicorn(1) as port:
                ratios = window_reads(prom_port, port, cookie, incident.slug, (first, last), args)
        finally:
            server.stop()
        for label, target in (("20 min", 2.0), ("1 h", 2.0), ("whole", 1.0)):
            summary.append(
                f"window {label:<14} x{ratios[label]:.2f} of query_range (target <= {target:g}x) "
                f"{'met' if ratios[label] <= target else 'NOT MET'}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if not args.skip_load:
        from bench import timeline as timeline_bench

        _, _, day = _common.team_user_incident("benchprom-day", existing_user=user)
        seconds = 86_400
        with _common.timed(f"COPY {200 * seconds:,} samples (a day, 1 s, 200 series)"):
            _common.load_fleet_metrics(day, seconds, int(seconds * 0.85))
        # Judged on the run against just-started workers (the stricter one: each worker
        # decodes the chunks it reads for the first time); the same run once they are warm is
        # shown beside it.
        cold: dict[str, float] = {}
        warm = timeline_bench.load_run(
            user, day.slug, seconds, args.clients, 6, 3, 150.0, warm_up=10, cold=cold
        )
        summary.append(
            f"{args.clients} clients           p99 {cold['p99']:.0f} ms (target <= 1000 ms), "
            f"{cold['errors']} errors (target 0) "
            f"{'met' if cold['p99'] <= 1000 and not cold['errors'] else 'NOT MET'} "
            f"(just-started workers; warm: p99 {warm['p99']:.0f} ms, {warm['errors']} errors)"
        )
    if not args.skip_analysis:
        from bench import correlate

        seconds_1m, big = correlate.big_analysis_seconds(events=1_000_000, scrapes=25_000)
        correlate.version_reads(big)
        summary.append(
            f"1M events + 5M samples analysis {seconds_1m:.2f} s (target <= 2 s) "
            f"{'met' if seconds_1m <= 2 else 'NOT MET'}"
        )
    print("\nsummary (issue 17)")
    for line in summary:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
