"""Compressed chunks: every bit of every value back, many chunks decoded at once as one by one,
a fraction of the plain layout's bytes, and migration 0008 converting stored chunks both ways."""

from __future__ import annotations

import importlib

import numpy as np
from django.db import connection

from timeline.metrics import packing, reader
from timeline.models import Series

T0 = 1_795_190_400_000  # 2026-11-20T08:00:00Z in ms, an hour's start
STALE_NAN = np.array([0x7FF0000000000002], dtype=np.uint64).view(np.float64)[0]  # Prometheus's


def _odd_chunk(rng: np.random.Generator, n: int, hour: int) -> tuple[np.ndarray, np.ndarray]:
    ts = np.sort(rng.choice(np.arange(packing.CHUNK_MS), n, replace=False)) + T0 + hour * 3600_000
    values = rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, n)
    values[::5] = np.round(values[::5], 2)
    for i, special in enumerate([np.nan, STALE_NAN, np.inf, -np.inf, -0.0, 0.0]):
        if i < n:
            values[(i * 7) % n] = special
    return ts.astype(np.int64), values


def test_every_bit_of_every_value_and_every_millisecond_comes_back() -> None:
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 3, 100, 3600):
        ts, values = _odd_chunk(rng, n, 0)
        back_ts, back_values = packing.decode_ms(*packing.encode(ts, values))
        assert back_ts.tolist() == ts.tolist()
        assert back_values.view(np.uint64).tolist() == values.view(np.uint64).tolist()


def test_many_chunks_decode_together_as_they_do_one_by_one() -> None:
    rng = np.random.default_rng(4)
    chunks = [_odd_chunk(rng, int(n), h) for h, n in enumerate([5, 0, 1, 720, 2, 0, 3600, 9])]
    packed = [packing.encode(ts, v) for ts, v in chunks]
    ts, values, counts = packing.decode_many([p[0] for p in packed], [p[1] for p in packed])
    assert counts.tolist() == [len(c[0]) for c in chunks]
    assert ts.tolist() == np.concatenate([c[0] for c in chunks]).tolist()
    want = np.concatenate([c[1] for c in chunks]).view(np.uint64)
    assert values.view(np.uint64).tolist() == want.tolist()


def test_a_steady_scrape_takes_a_small_fraction_of_the_plain_bytes() -> None:
    rng = np.random.default_rng(5)
    ts = T0 + np.arange(720, dtype=np.int64) * 5000 + rng.integers(0, 40, 720)  # late scrapes
    values = np.clip(np.cumsum(rng.integers(-2, 3, 720)), 0, 256).astype(float)  # a gauge
    raw_ts, raw_values = packing.encode(ts, values)
    assert (len(raw_ts) + len(raw_values)) / 720 < 4  # was 16 bytes a sample
    flat = np.full(720, 42.0)  # an idle gauge at an exact scrape interval
    exact = T0 + np.arange(720, dtype=np.int64) * 5000
    assert sum(map(len, packing.encode(exact, flat))) < 100


def test_migration_0008_converts_stored_plain_chunks_and_back(incident) -> None:
    migration = importlib.import_module("timeline.migrations.0009_compressed_chunks")
    series = Series.objects.create(incident=incident, name="up", labels={})
    rng = np.random.default_rng(6)
    chunks = [_odd_chunk(rng, n, h) for h, n in enumerate([30, 1, 700])]
    with connection.cursor() as cur:
        for hour, (ts, values) in enumerate(chunks):
            plain = packing.encode_plain(ts, values)
            cur.execute(
                "INSERT INTO timeline_samplechunk (series_id, bucket, n, ts, vals) "
                "VALUES (%s, %s, %s, %s, %s)",
                [series.pk, packing.aware(T0 + hour * 3600_000), len(ts), *plain],
            )
    with connection.schema_editor() as editor:
        migration.compress(None, editor)
        migration.compress(None, editor)  # a rerun leaves converted chunks alone
    ts, values = reader.samples_read([series.pk])[series.pk]
    assert ts.tolist() == np.concatenate([c[0] for c in chunks]).tolist()
    want = np.concatenate([c[1] for c in chunks]).view(np.uint64)
    assert values.view(np.uint64).tolist() == want.tolist()
    with connection.schema_editor() as editor:
        migration.decompress(None, editor)
    with connection.cursor() as cur:
        cur.execute("SELECT ts, vals FROM timeline_samplechunk ORDER BY bucket")
        stored = [(bytes(t), bytes(v)) for t, v in cur.fetchall()]
    assert stored == [packing.encode_plain(ts, values) for ts, values in chunks]
