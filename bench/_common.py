"""Shared plumbing for the benchmarks: a scratch database per run, a time bound, timers.

Every benchmark gets its own database (``bench_<pid>``) on the real Postgres named by
DATABASE_URL, migrates it with ``manage.py migrate`` and drops it on exit, so the ``timeline``
and test databases are never touched.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/timeline"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
FLEET_START_MS = 1_795_564_800_000  # 2026-11-25T00:00:00Z
NODES = 8
GPUS = 8
SGLANG = (
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:gen_throughput",
    "sglang:token_usage",
    "sglang:cache_hit_rate",
    "sglang:num_used_tokens",
    "sglang:spec_accept_length",
    "sglang:utilization",
    "sglang:prompt_tokens_total",
)
DCGM = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED")

_dropped = False


def _with_db(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def _admin_conninfo(url: str) -> str:
    # libpq reads postgres:// URLs directly; connect to the maintenance database.
    return _with_db(url, "postgres")


def setup(name: str, *, time_limit: int) -> str:
    """Create and migrate ``bench_<pid>``, point Django at it and set it up; returns its URL.

    The whole run is bounded by ``time_limit`` seconds (SIGALRM ends it, the database is still
    dropped)."""
    import psycopg

    base = os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    os.environ.setdefault("REDIS_URL", DEFAULT_REDIS_URL)
    db = f"bench_{os.getpid()}"
    admin = _admin_conninfo(base)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db}"')
        conn.execute(f'CREATE DATABASE "{db}"')
    url = _with_db(base, db)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "timeline.settings")
    os.environ.setdefault("UPLOAD_ROOT", tempfile.mkdtemp(prefix=f"{name}-uploads-"))
    os.environ.setdefault("LOG_LEVEL", "WARNING")

    def drop() -> None:
        global _dropped
        if _dropped:
            return
        _dropped = True
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        print(f"[{name}] dropped scratch database {db}")

    atexit.register(drop)

    def on_signal(signum: int, _frame: object) -> None:
        print(f"[{name}] stopped by signal {signum} (time limit {time_limit}s?)", file=sys.stderr)
        drop()
        os._exit(2)

    signal.signal(signal.SIGALRM, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.alarm(time_limit)

    started = time.perf_counter()
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "--no-input", "-v", "0"],
        check=True,
        cwd=ROOT,
        env=os.environ.copy(),
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    print(f"[{name}] scratch database {db} migrated in {time.perf_counter() - started:.1f}s")
    return url


@contextlib.contextmanager
def timed(label: str, into: dict[str, float] | None = None) -> Iterator[None]:
    started = time.perf_counter()
    yield
    elapsed = time.perf_counter() - started
    if into is not None:
        into[label] = elapsed
    print(f"  {label:<44} {elapsed:8.3f} s")


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs (seconds): the least disturbed by the other load."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p99 (nearest rank) in milliseconds."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))]
    return statistics.median(ordered) * 1000, p99 * 1000


def team_user_incident(slug: str, *, existing_user: object = None) -> tuple[object, object, object]:
    """A team, its member (alice) and an incident of that team (alice's team when she is
    given)."""
    from django.contrib.auth import get_user_model

    from timeline.models import Incident, Team

    if existing_user is not None:
        user = existing_user
        team = Team.objects.filter(members=user).first()
    else:
        team = Team.objects.create(name="Inference", slug="inference")
        user = get_user_model().objects.create_user("alice", password="bench-password-1")
        team.members.add(user)
    incident = Incident.objects.create(slug=slug, title=f"Bench {slug}", team=team)
    return team, user, incident


ROWS_TABLE = "bench_sample_rows"


def copy_samples(
    rows_by_series: list[tuple[int, np.ndarray, np.ndarray]], *, rows_table: bool = False
) -> int:
    """Store (series_id, ts_ms, values) arrays as the loader does (hourly chunks by binary
    COPY, per-minute rollups, each series' count and range).

    With ``rows_table``, the same samples also go a row each into ``bench_sample_rows``, the
    layout the product had until migration 0004 ((series_id, ts) primary key and a BRIN on ts):
    the baselines that replay the original readers read it."""
    from django.db import connection, transaction

    from timeline.metrics.packing import COPY_HEADER, COPY_TRAILER
    from timeline.metrics.writer import samples_write, statistics_refresh

    with transaction.atomic(), connection.cursor() as cur:
        total = samples_write(rows_by_series)
        statistics_refresh()
        if rows_table:
            create_rows_table(cur, ROWS_TABLE)
            with cur.cursor.copy(
                f"COPY {ROWS_TABLE} (series_id, ts, value) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.write(COPY_HEADER)
                for series_id, ts, values in rows_by_series:
                    copy.write(row_tuples(series_id, ts, values))
                copy.write(COPY_TRAILER)
            cur.execute(f"ANALYZE {ROWS_TABLE}")
    return total


_ROW = np.dtype(
    [
        ("nfields", ">i2"),
        ("l1", ">i4"),
        ("series", ">i8"),
        ("l2", ">i4"),
        ("ts", ">i8"),
        ("l3", ">i4"),
        ("value", ">f8"),
    ]
)


def create_rows_table(cur: object, name: str) -> None:
    """A table with the row-per-sample layout of DESIGN.md (timeline_sample until 0004)."""
    cur.execute(  # type: ignore[attr-defined]
        f"CREATE TABLE {name} (series_id bigint NOT NULL, ts timestamptz NOT NULL, "
        f"value double precision NOT NULL, PRIMARY KEY (series_id, ts))"
    )
    cur.execute(f"CREATE INDEX {name}_ts_brin ON {name} USING brin (ts)")  # type: ignore[attr-defined]


def row_tuples(series_id: int, ts_ms: np.ndarray, values: np.ndarray) -> bytes:
    """One series' samples as binary COPY tuples of (series_id, ts, value)."""
    from timeline.metrics.packing import pg_us

    rows = np.empty(len(ts_ms), dtype=_ROW)
    rows["nfields"] = 3
    rows["l1"] = rows["l2"] = rows["l3"] = 8
    rows["series"] = series_id
    rows["ts"] = pg_us(ts_ms)
    rows["value"] = values
    return rows.tobytes()


def load_fleet_metrics(
    incident: object, scrapes: int, wedge_at_s: int, *, rows_table: bool = False
) -> int:
    """200 series over 8 nodes; each exporter (SGLang, DCGM per node) scrapes with its own
    jitter, so the series of one target share timestamps and the targets differ."""
    from timeline.models import Series

    rng = np.random.default_rng(5)
    base = FLEET_START_MS + np.arange(scrapes, dtype=np.int64) * 1000
    wedged = np.arange(scrapes) >= wedge_at_s
    rows = []
    for node in range(NODES):
        host = f"dsv4-node-{node}"
        sg_ts = base + rng.integers(0, 40, scrapes)
        dc_ts = base + rng.integers(0, 40, scrapes) + 300
        load = 0.6 + 0.4 * np.sin(np.arange(scrapes) / 900.0 + node)
        for name in SGLANG:
            if name == "sglang:num_running_reqs":
                v = np.where(wedged, 12.0, np.rint(load * 40))
            elif name == "sglang:gen_throughput":
                v = np.where(wedged, 0.0, load * 2400 + rng.normal(0, 30, scrapes))
            elif name == "sglang:prompt_tokens_total":
                v = np.cumsum(rng.integers(0, 5000, scrapes)).astype(np.float64)
            else:
                v = load * rng.uniform(1, 100)
            s = Series.objects.create(
                incident=incident,
                name=name,
                labels={"model_name": "deepseek-ai/DeepSeek-V4", "instance": f"{host}:30000"},
                type="gauge",
            )
            rows.append((s.pk, sg_ts, v.astype(np.float64)))
        for g in range(GPUS):
            for name in DCGM:
                if name == "DCGM_FI_DEV_GPU_UTIL":
                    v = np.where(wedged, 0.0, np.rint(load * 95))
                else:
                    v = np.full(scrapes, 71_000.0)
                s = Series.objects.create(
                    incident=incident,
                    name=name,
                    labels={"gpu": str(g), "Hostname": host, "modelName": "RTX PRO 6000"},
                    type="gauge",
                )
                rows.append((s.pk, dc_ts, v.astype(np.float64)))
    # 8 nodes x (9 + 16) = 200 series.
    return copy_samples(rows, rows_table=rows_table)


@contextlib.contextmanager
def gunicorn(workers: int) -> Iterator[int]:
    """The product under gunicorn (``workers`` sync workers) on a free loopback port, against
    the bench's database; yields the port once it answers."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "timeline.wsgi", "--preload"]
        + ["--bind", f"127.0.0.1:{port}"]
        + ["--workers", str(workers), "--timeout", "120", "--log-level", "warning"],
        cwd=ROOT,
        env=os.environ.copy(),
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def session_cookie(user: object) -> str:
    """A Cookie header value that logs ``user`` in (a session made by Django's test client)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def clear_cache() -> None:
    """Remove this database's entries from the shared Redis cache (its key prefix only:
    ``cache.clear()`` would empty the whole Redis database, the broker's queues with it)."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_CLIENT_URL)
    from timeline.cachekeys import database_epoch

    prefix = f"{settings.CACHES['default']['KEY_PREFIX']}:{database_epoch()}"
    for key in client.scan_iter(match=f"{prefix}:*", count=1000):
        client.delete(key)
    from timeline import figure_data

    figure_data._RECENT.clear()
