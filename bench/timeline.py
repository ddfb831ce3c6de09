"""Issue 6: the timeline data endpoint on a day of one-second metrics.

200 series x 86,400 s = 17.3M samples loaded by COPY into one incident (88 of the series are on
the default panels). Measures /incidents/<slug>/timeline.json with a logged-in Django test client
for the whole day and zoomed windows (p50/p99, response size, size per trace), then a load run:
gunicorn on a free loopback port and 50 concurrent clients.

The baseline measured in the same run is the window read the slice shipped with (every sample
of the window fetched as Python rows, then MinMaxLTTB), kept here as ``fetchall_downsampled``.

    .venv/bin/python bench/timeline.py [--seconds 86400] [--clients 50] [--workers 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

# Run as a script, sys.path[0] is bench/, where this file would shadow the timeline package.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

import numpy as np  # noqa: E402

from bench import _common  # noqa: E402

START = dt.datetime.fromtimestamp(_common.FLEET_START_MS / 1000, tz=dt.UTC)


def iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def windows(seconds: int) -> dict[str, tuple[dt.datetime, dt.datetime] | None]:
    mid = START + dt.timedelta(seconds=seconds // 2)
    return {
        "whole range": None,
        "6 h": (mid - dt.timedelta(hours=3), mid + dt.timedelta(hours=3)),
        "1 h": (mid, mid + dt.timedelta(hours=1)),
        "20 min (fits)": (mid, mid + dt.timedelta(minutes=20)),
    }


def fetchall_downsampled(series: list, start: dt.datetime | None, end: dt.datetime | None):
    """The slice's original series_downsampled: every row of the window through fetchall."""
    from django.db import connection
    from tsdownsample import MinMaxLTTBDownsampler

    sql = (
        "SELECT series_id, (EXTRACT(EPOCH FROM ts) * 1000)::int8, value FROM bench_sample_rows "
        "WHERE series_id = ANY(%s)"
    )
    params: list = [[s.pk for s in series]]
    if start is not None:
        sql += " AND ts >= %s"
        params.append(start)
    if end is not None:
        sql += " AND ts <= %s"
        params.append(end)
    with connection.cursor() as cur:
        cur.execute(sql + " ORDER BY series_id, ts", params)
        rows = cur.fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    all_ts = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    all_values = np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows))
    bounds = np.flatnonzero(np.diff(ids)) + 1
    out = []
    starts = np.concatenate(([0], bounds)).tolist()
    for a, b in zip(starts, np.concatenate((bounds, [len(ids)])).tolist(), strict=True):
        ts, values = all_ts[a:b], all_values[a:b]
        if len(ts) > 1500:
            idx = MinMaxLTTBDownsampler().downsample(ts, values, n_out=1500)
            ts, values = ts[idx], values[idx]
        out.append((ts, values))
    return out


def bench_client(user: object, slug: str, seconds: int, repeat: int) -> dict[str, dict]:
    from django.test import Client
    from django.urls import reverse

    client = Client()
    client.force_login(user)
    url = reverse("timeline_data", args=[slug])
    results: dict[str, dict] = {}
    print(f"\nendpoint, Django test client ({repeat} calls per window; p50/p99 of the repeats)")
    print(
        f"  {'window':<15} {'1st ms':>8} {'p50 ms':>8} {'p99 ms':>8} {'bytes':>10} {'traces':>7} "
        f"{'max/trace':>10} {'points shown/total'}"
    )
    for label, window in windows(seconds).items():
        params = {} if window is None else {"start": iso(window[0]), "end": iso(window[1])}
        _common.clear_cache()  # the first call reads the database; repeats may hit the cache
        times = []
        response = None
        for _ in range(repeat):
            started = time.perf_counter()
            response = client.get(url, params)
            times.append(time.perf_counter() - started)
            assert response.status_code == 200, response.status_code
        assert response is not None
        payload = json.loads(response.content)
        traces = payload["figure"]["data"]
        per_trace = max(len(json.dumps(t, separators=(",", ":"))) for t in traces)
        points = payload["meta"]["points"]
        shown = sum(v[0] for v in points.values())
        total = sum(v[1] for v in points.values())
        assert all(v[0] <= 1500 for v in points.values())
        if label.endswith("(fits)"):
            assert all(v[0] == v[1] for v in points.values()), "a window that fits is not full"
        p50, p99 = _common.percentiles(times[1:])
        print(
            f"  {label:<15} {times[0] * 1000:8.1f} {p50:8.1f} {p99:8.1f} "
            f"{len(response.content):>10,} {len(traces):>7} "
            f"{per_trace:>10,} {shown:,}/{total:,}"
        )
        results[label] = {
            "first": times[0] * 1000,
            "p50": p50,
            "p99": p99,
            "bytes": len(response.content),
            "per_trace": per_trace,
            "traces": len(traces),
        }
    return results


def bench_selector(incident: object, seconds: int, repeat: int) -> dict[str, tuple[float, float]]:
    from timeline import selectors

    names = [n for n, _ in selectors.DEFAULT_PANELS]
    series = selectors.series_for_panels(incident, names)
    out = {}
    print(
        f"\nseries_downsampled alone vs the fetchall baseline ({len(series)} series, best of "
        f"{repeat})"
    )
    for label, window in windows(seconds).items():
        start, end = window if window else (None, None)
        cold = _common.best_of(
            lambda s=start, e=end: selectors._downsample(series, s, e, 1500), repeat
        )
        selectors.series_downsampled(series, start, end)
        warm = _common.best_of(
            lambda s=start, e=end: selectors.series_downsampled(series, s, e), repeat
        )
        old = _common.best_of(lambda s=start, e=end: fetchall_downsampled(series, s, e), 1)
        print(
            f"  {label:<15} cold {cold * 1000:7.1f} ms  cached {warm * 1000:6.1f} ms  "
            f"fetchall {old * 1000:7.1f} ms  cold x{old / cold:4.1f}"
        )
        new = cold
        out[label] = (new, old)
    return out


def _span(query: str) -> int:
    """Seconds between the start and end of a load run's query string."""
    parts = dict(p.split("=", 1) for p in query.lstrip("?").split("&"))
    start, end = (dt.datetime.fromisoformat(parts[k]) for k in ("start", "end"))
    return int((end - start).total_seconds())


def load_run(
    user: object,
    slug: str,
    seconds: int,
    clients: int,
    per_client: int,
    workers: int,
    budget_s: float,
    warm_up: int = 0,
    cold: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``clients`` threads, each the whole day then ``per_client - 1`` random zooms, against
    gunicorn with ``workers`` sync workers. With ``warm_up`` > 0, the same run is made twice
    on the same server (other random zooms the second time): the first is reported as the
    cold run (workers just started: their first requests pay for first imports and a new
    Postgres session's caches; copied into ``cold``), the second is returned, after
    ``warm_up`` uncounted zooms per worker."""
    from django.urls import reverse

    cookie = _common.session_cookie(user)
    path = reverse("timeline_data", args=[slug])
    with _common.gunicorn(workers) as port:
        # The whole day once before the clients: what a viewer after an ingest pays once and
        # every later viewer gets from the shared cache (reported, not in the percentiles).
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("GET", path, headers={"Cookie": cookie})
        first_body = conn.getresponse().read()
        conn.close()
        first_ms = (time.perf_counter() - started) * 1000
        assert first_body.startswith(b'{"figure"'), first_body[:200]
        print(f"\nload run: gunicorn {workers} workers, {clients} clients x {per_client} requests")
        print(f"  before it: the whole day built once in {first_ms:.0f} ms (not counted below)")
        rng = random.Random(1)
        result = _clients(port, path, cookie, _plans(rng, seconds, clients, per_client), budget_s)
        if warm_up:
            _report("cold workers (just started)", result)
            if cold is not None:
                cold.update(result)
            extra = _plans(rng, seconds, workers, warm_up + 1)
            _clients(port, path, cookie, [p[1:] for p in extra], budget_s)
            result = _clients(
                port, path, cookie, _plans(rng, seconds, clients, per_client), budget_s
            )
            _report(f"warm workers (after {workers * warm_up} more uncounted zooms)", result)
        else:
            _report("", result)
    return {**result, "first": first_ms}


def _plans(rng: random.Random, seconds: int, clients: int, per_client: int) -> list[list[str]]:
    """Each client: the whole day first, then zooms somewhere in it (as a user does)."""
    plans = []
    for _ in range(clients):
        plan = [""]
        for _ in range(per_client - 1):
            span = rng.choice((1800, 3600, 6 * 3600))
            a = START + dt.timedelta(seconds=rng.randrange(0, seconds - span))
            plan.append(f"?start={iso(a)}&end={iso(a + dt.timedelta(seconds=span))}")
        plans.append(plan)
    return plans


def _clients(
    port: int, path: str, cookie: str, plans: list[list[str]], budget_s: float
) -> dict[str, Any]:
    """One thread per plan, each request on a connection of its own; latencies by kind."""
    latencies: list[float] = []
    by_kind: dict[str, list[float]] = {}
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + budget_s

    def run(plan: list[str]) -> None:
        for query in plan:
            if time.monotonic() > stop_at:
                with lock:
                    errors.append("not sent: time budget over")
                continue
            started = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                conn.request("GET", path + query, headers={"Cookie": cookie})
                resp = conn.getresponse()
                body = resp.read()
                conn.close()
                ok = resp.status == 200 and body.startswith(b'{"figure"')
                problem = "" if ok else f"HTTP {resp.status}"
            except OSError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            elapsed = time.perf_counter() - started
            kind = "whole day" if not query else f"{_span(query) // 60} min zoom"
            with lock:
                if problem:
                    errors.append(problem)
                else:
                    latencies.append(elapsed)
                    by_kind.setdefault(kind, []).append(elapsed)

    threads = [threading.Thread(target=run, args=(p,)) for p in plans]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=budget_s + 150)
    wall = time.perf_counter() - started
    p50, p99 = _common.percentiles(latencies) if latencies else (float("nan"),) * 2
    return {
        "p50": p50,
        "p99": p99,
        "errors": len(errors),
        "ok": len(latencies),
        "wall": wall,
        "by_kind": by_kind,
        "first_errors": sorted(set(errors))[:3],
    }


def _report(label: str, r: dict[str, Any]) -> None:
    if label:
        print(f"  {label}:")
    print(
        f"  {r['ok']} ok, {r['errors']} errors in {r['wall']:.1f} s "
        f"({r['ok'] / r['wall']:.1f} req/s); p50 {r['p50']:.0f} ms, p99 {r['p99']:.0f} ms"
    )
    for kind, times in sorted(r["by_kind"].items()):
        k50, k99 = _common.percentiles(times)
        print(f"    {kind:<14} {len(times):>4} requests  p50 {k50:6.0f} ms  p99 {k99:6.0f} ms")
    if r["errors"]:
        print(f"  first errors: {r['first_errors']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=86_400)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--per-client", type=int, default=6)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--load-budget", type=float, default=150.0)
    parser.add_argument("--time-limit", type=int, default=900)
    args = parser.parse_args()
    _common.setup("timeline", time_limit=args.time_limit)

    from timeline.metrics import reader

    _, user, incident = _common.team_user_incident("timeline-bench")
    print("loading")
    with _common.timed(f"COPY {200 * args.seconds:,} samples"):
        n = _common.load_fleet_metrics(
            incident, args.seconds, int(args.seconds * 0.85), rows_table=True
        )
    assert reader.samples_count() == n
    sel = bench_selector(incident, args.seconds, 3)
    client = bench_client(user, incident.slug, args.seconds, args.repeat)
    load = load_run(
        user,
        incident.slug,
        args.seconds,
        args.clients,
        args.per_client,
        args.workers,
        args.load_budget,
    )
    whole = client["whole range"]
    print("\nsummary")
    print(
        f"  RATIO whole-day window read: fetchall {sel['whole range'][1]:.2f} s / "
        f"series_downsampled {sel['whole range'][0]:.2f} s = "
        f"{sel['whole range'][1] / sel['whole range'][0]:.1f}x"
    )
    print(
        f"  whole day: first call {whole['first']:.0f} ms, then p50 {whole['p50']:.0f} ms, "
        f"p99 {whole['p99']:.0f} ms, "
        f"{whole['bytes'] / 1e6:.2f} MB for {whole['traces']} traces, largest trace "
        f"{whole['per_trace'] / 1e3:.0f} KB (target <= 100 KB)"
    )
    print(f"  load: p50 {load['p50']:.0f} ms, p99 {load['p99']:.0f} ms, {load['errors']} errors")


if __name__ == "__main__":
    main()
