"""Samples and rollups read back as numpy arrays (ms since the Unix epoch, float64 values).

Chunks come back a row each (each is compressed on its own) and are decoded all together by
numpy with no Python object per sample; rollup buckets come back one row per series,
concatenated by the server into bytea strings.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from django.db import connection

from timeline.metrics import packing


def _chunks(
    series_ids: Sequence[int], start: dt.datetime | None, end: dt.datetime | None
) -> list[tuple[int, bytes, bytes]]:
    """The chunks of these series that reach into [start, end], by series and time: (series
    id, packed times, packed values). Edge chunks reach past the window."""
    rows = _binary_rows(
        "SELECT series_id, ts, vals FROM timeline_samplechunk "
        "WHERE series_id = ANY(%s) "
        "AND bucket > COALESCE(%s::timestamptz - interval '1 hour', '-infinity') "
        "AND bucket <= COALESCE(%s::timestamptz, 'infinity') ORDER BY series_id, bucket",
        [list(series_ids), start, end],
    )
    return [(int(sid), t, v) for sid, t, v in rows]


def _binary_rows(sql: str, params: list[object]) -> list[tuple[Any, ...]]:
    """Rows with their bytea columns sent as bytes, not hex text: half the time for a window's
    megabytes of chunks. On Django's connection (its transaction, if one is open), through a
    psycopg cursor that binds on the server (Django's own binds on the client, which psycopg
    allows only text results for)."""
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cur:
        cur.execute(sql, params, binary=True)
        return cur.fetchall()


def samples_read(
    series_ids: Sequence[int],
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
    *,
    recent: bool = False,
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Samples of these series within [start, end] (ms since the Unix epoch, values), in time
    order; series without samples there are left out. ``recent``: keep the decoded chunks in
    this process's :data:`DECODED_CACHE_BYTES` for the next window (the timeline's zooms)."""
    if not series_ids:
        return {}
    rows = _chunks(series_ids, start, end)
    if not rows:
        return {}
    # Every chunk decoded in one go (packing.decode_many), then cut per series.
    all_ts, all_values, counts = (
        _decoded_recently(rows)
        if recent
        else packing.decode_many([r[1] for r in rows], [r[2] for r in rows])
    )
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    firsts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.cumsum(counts)
    bounds = np.r_[0, ends[np.r_[firsts[1:] - 1, len(rows) - 1]]]
    out = {}
    for k, first in enumerate(firsts.tolist()):
        ts = all_ts[bounds[k] : bounds[k + 1]]
        values = all_values[bounds[k] : bounds[k + 1]]
        if start is not None or end is not None:
            lo = ts.searchsorted(start.timestamp() * 1000, "left") if start else 0
            hi = ts.searchsorted(end.timestamp() * 1000, "right") if end else len(ts)
            ts, values = ts[lo:hi], values[lo:hi]
        if len(ts):
            out[int(ids[first])] = (ts, values)
    return out


# Decoded chunks this process read lately, by content: a zoom of the timeline reads the same
# hours of the same series as the zooms before it, and decoding (zstd, unshuffle, two scans)
# cost more than reading the bytes. Keyed by the packed bytes themselves (lengths and hashes),
# so a chunk rewritten by an ingest is a new key, never a stale hit.
DECODED_CACHE_BYTES = 128 * 1024 * 1024
_decoded: OrderedDict[tuple[int, int, int, int], tuple[np.ndarray, np.ndarray]] = OrderedDict()
_decoded_size = 0
_decoded_lock = threading.Lock()


def _decoded_recently(rows: list[tuple[int, bytes, bytes]]) -> tuple[np.ndarray, ...]:
    """packing.decode_many of the rows, through the recently decoded chunks."""
    global _decoded_size
    keys = [(len(t), hash(t), len(v), hash(v)) for _, t, v in rows]
    with _decoded_lock:
        missing = [i for i, k in enumerate(keys) if k not in _decoded]
    if missing:
        ts, values, counts = packing.decode_many(
            [rows[i][1] for i in missing], [rows[i][2] for i in missing]
        )
        cut = np.cumsum(counts)[:-1]
        with _decoded_lock:
            for i, t, v in zip(missing, np.split(ts, cut), np.split(values, cut), strict=True):
                if keys[i] not in _decoded:
                    t.flags.writeable = v.flags.writeable = False  # shared by later reads
                    _decoded[keys[i]] = (t, v)
                    _decoded_size += t.nbytes + v.nbytes
    with _decoded_lock:
        parts = []
        for k in keys:
            _decoded.move_to_end(k)
            parts.append(_decoded[k])
        while _decoded_size > DECODED_CACHE_BYTES and len(_decoded) > len(keys):
            _, (t, v) = _decoded.popitem(last=False)
            _decoded_size -= t.nbytes + v.nbytes
    return (
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.fromiter((len(p[0]) for p in parts), dtype=np.int64, count=len(parts)),
    )


def samples_count(series_ids: Sequence[int] | None = None) -> int:
    """Samples stored (of these series, or of all)."""
    with connection.cursor() as cur:
        if series_ids is None:
            cur.execute("SELECT COALESCE(sum(n), 0) FROM timeline_samplechunk")
        else:
            cur.execute(
                "SELECT COALESCE(sum(n), 0) FROM timeline_samplechunk WHERE series_id = ANY(%s)",
                [list(series_ids)],
            )
        row = cur.fetchone()
        return int(row[0]) if row else 0


def rollups_read(
    series_ids: Sequence[int], start: dt.datetime | None, end: dt.datetime | None
) -> dict[int, tuple[np.ndarray, np.ndarray, int]]:
    """Each minute's min and max as two points at their own times, with the samples the
    buckets hold, per series; series without rollups (samples written around the writer) are
    left out, to be read raw."""
    if not series_ids:
        return {}
    sql = (
        "SELECT series_id, string_agg(timestamptz_send(t_min), ''::bytea ORDER BY bucket), "
        "string_agg(float8send(v_min), ''::bytea ORDER BY bucket), "
        "string_agg(timestamptz_send(t_max), ''::bytea ORDER BY bucket), "
        "string_agg(float8send(v_max), ''::bytea ORDER BY bucket), sum(n) "
        "FROM timeline_samplerollup WHERE series_id = ANY(%s) "
        "AND bucket >= COALESCE(%s::timestamptz - interval '1 minute', '-infinity') "
        "AND bucket <= COALESCE(%s::timestamptz, 'infinity') GROUP BY series_id"
    )
    rows = _binary_rows(sql, [list(series_ids), start, end])
    out = {}
    for sid, t_min, v_min, t_max, v_max, n in rows:
        t1 = packing.unix_ms(np.frombuffer(t_min, dtype=">i8"))
        t2 = packing.unix_ms(np.frombuffer(t_max, dtype=">i8"))
        ts = np.empty(2 * len(t1), dtype=np.int64)
        values = np.empty(2 * len(t1), dtype=np.float64)
        first_is_min = t1 <= t2  # keep each bucket's two points in time order
        ts[0::2] = np.where(first_is_min, t1, t2)
        ts[1::2] = np.where(first_is_min, t2, t1)
        v1 = np.frombuffer(v_min, dtype=">f8").astype(np.float64)
        v2 = np.frombuffer(v_max, dtype=">f8").astype(np.float64)
        values[0::2] = np.where(first_is_min, v1, v2)
        values[1::2] = np.where(first_is_min, v2, v1)
        if start is not None or end is not None:  # the edge buckets reach past the window
            lo = start.timestamp() * 1000 if start else -np.inf
            hi = end.timestamp() * 1000 if end else np.inf
            keep = (ts >= lo) & (ts <= hi)
            ts, values = ts[keep], values[keep]
        out[int(sid)] = (ts, values, int(n))
    return out
