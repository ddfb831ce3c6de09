"""Issue 17: the metrics store against a real Prometheus on the same samples.

Fleet-shaped series (SGLang gauges and counters, DCGM per GPU) scraped every ``--interval``
seconds for ``--hours`` are written twice: as OpenMetrics (seconds) for
``promtool tsdb create-blocks-from openmetrics`` (blocks up to 24 h: what compaction makes of
them) and as Prometheus text (ms) for the product's own ingest (``artifact_register_bytes`` +
``artifact_ingest``: parse, hourly chunks by COPY, rollups). Prints ingest time, bytes per
sample (Prometheus: ``du`` of the blocks; here: the chunks' packed columns, the whole chunk
table with its index and TOAST, and the rollups apart) and the read latency of windows of every
series (``samples_read`` against an instant query ``{__name__=~...}[window]`` over HTTP, JSON
decoded) as ratios to Prometheus.

    .venv/bin/python bench/prometheus.py [--series-per-node 25] [--nodes 4] [--hours 12]
        [--interval 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parent.parent)

import numpy as np  # noqa: E402

from bench import _common  # noqa: E402

PREFIX = "benchprom_"


def fleet(nodes: int, per_node: int, hours: float, interval: float, seed: int = 7) -> list:
    """(name, labels, times in ms, values) per series: integer gauges, bounded floats with a
    few decimals, and counters, as exporters give them."""
    rng = np.random.default_rng(seed)
    start = _common.FLEET_START_MS
    n = int(hours * 3600 / interval)
    base = start + np.arange(n, dtype=np.int64) * int(interval * 1000)
    out = []
    for node in range(nodes):
        jitter = rng.integers(0, 40, n)  # scrapes land a few ms late
        ts = base + jitter
        for k in range(per_node):
            kind = k % 4
            if kind == 0:  # running / queued requests: small integers
                values = np.clip(np.cumsum(rng.integers(-2, 3, n)), 0, 256).astype(float)
            elif kind == 1:  # token usage, utilisation: 0..1 with 2-4 decimals
                values = np.round(np.clip(0.5 + np.cumsum(rng.normal(0, 0.01, n)), 0, 1), 4)
            elif kind == 2:  # a counter
                values = np.cumsum(rng.integers(0, 500, n)).astype(float)
            else:  # GPU util: integer percent
                values = rng.integers(0, 101, n).astype(float)
            labels = {"node": f"node{node}", "k": str(k)}
            out.append((f"{PREFIX}m{kind}", labels, ts, values))
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


def prom_query(url: str, promql: str, at: float) -> int:
    body = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"}).encode()
    with urllib.request.urlopen(f"{url}/api/v1/query", data=body) as r:  # noqa: S310
        doc = json.loads(r.read())
    assert doc["status"] == "success", doc
    return sum(len(x["values"]) for x in doc["data"]["result"])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--series-per-node", type=int, default=25)
    parser.add_argument("--hours", type=float, default=12.0)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    _common.setup("prometheus", time_limit=1800)

    from django.db import connection

    from ingest.services import loading, storage
    from tests.metrics.prometheus import PROMTOOL, PrometheusServer
    from timeline.metrics.reader import samples_count, samples_read
    from timeline.models import Series

    work = Path(tempfile.mkdtemp(prefix="bench-prom-"))
    try:
        series = fleet(args.nodes, args.series_per_node, args.hours, args.interval)
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

        _, _, incident = _common.team_user_incident("benchprom")
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
        print("\nbytes per sample")
        print(f"  Prometheus blocks (du)                   {prom_bytes / total:8.3f}")
        for label, size in (
            ("chunks: packed ts + vals columns", packed),
            ("chunk table (rows, index, TOAST)", chunk_table),
            ("rollup table (per-minute min/max)", rollup_table),
        ):
            print(f"  {label:<40} {size / total:8.3f}   x{size / prom_bytes:.2f} of Prometheus")
        print(f"  ({chunks} chunks)")

        server = PrometheusServer(data)
        try:
            ids = list(Series.objects.values_list("id", flat=True))
            end_ms = int(max(s[2][-1] for s in series))
            print(f"\nread every series' samples of a window (best of {args.repeat})")
            for label, seconds in (("20 min", 1200), ("1 h", 3600), ("6 h", 21600)):
                if seconds > args.hours * 3600:
                    continue
                end = dt.datetime.fromtimestamp(end_ms / 1000, tz=dt.UTC)
                start = end - dt.timedelta(seconds=seconds)
                got = sum(len(t) for t, _ in samples_read(ids, start, end).values())
                ours = _common.best_of(lambda s=start, e=end: samples_read(ids, s, e), args.repeat)
                promql = f'{{__name__=~"{PREFIX}.*"}}[{seconds}s]'
                theirs_n = prom_query(server.url, promql, end.timestamp())
                theirs = _common.best_of(
                    lambda q=promql, e=end: prom_query(server.url, q, e.timestamp()), args.repeat
                )
                print(
                    f"  {label:<7} {got:>9,} samples  ours {ours * 1000:8.1f} ms  "
                    f"Prometheus {theirs * 1000:8.1f} ms ({theirs_n:,})  x{ours / theirs:.2f}"
                )
        finally:
            server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
