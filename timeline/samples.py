"""Metric samples, stored as one row per series and hour (``SampleChunk``).

A chunk holds the hour's sample times and values as two packed arrays: big-endian int8
microseconds since 2000-01-01 (the binary form of a Postgres timestamptz) and big-endian
float8, sorted by time, one value per time. Each chunk is final when written: a later load
that brings samples for a stored hour merges into it (the values already stored win).

Why not a row per sample: with a (series, ts) key, index upkeep dominated every bulk load
(5M samples: ~7-15 s of server time, more than parsing the file), and a row costs ~80 bytes
with its index entry against 16 bytes here. Readers decode with numpy and never want single
rows; per-minute rollups (timeline.rollups) stay a table of their own, a pure function of the
chunks.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from django.db import connection

CHUNK_MS = 3_600_000
PG_EPOCH_MS = 946_684_800_000  # 2000-01-01T00:00:00Z, the zero of Postgres binary timestamps

COPY_SQL = "COPY timeline_samplechunk (series_id, bucket, n, ts, vals) FROM STDIN (FORMAT BINARY)"
COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
COPY_TRAILER = b"\xff\xff"
_ROW_HEAD = struct.Struct(">hiqiqii")  # 5 fields; series_id, bucket, n with their lengths


@dataclass(frozen=True)
class Chunk:
    """One series' samples of one hour: sorted, unique times (ms since the Unix epoch)."""

    series_id: int
    bucket_ms: int
    ts_ms: np.ndarray
    values: np.ndarray


def normalise(ts_ms: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted by time with one value per time: the first one given for a repeated time."""
    ts_ms = np.asarray(ts_ms, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    if len(ts_ms) > 1 and not (ts_ms[1:] > ts_ms[:-1]).all():
        order = np.argsort(ts_ms, kind="stable")
        ts_ms, values = ts_ms[order], values[order]
        keep = np.r_[True, ts_ms[1:] != ts_ms[:-1]]
        if not keep.all():
            ts_ms, values = ts_ms[keep], values[keep]
    return ts_ms, values


def split(series_id: int, ts_ms: np.ndarray, values: np.ndarray) -> list[Chunk]:
    """Normalised samples of one series cut at the hours."""
    ts_ms, values = normalise(ts_ms, values)
    if not len(ts_ms):
        return []
    hours = ts_ms // CHUNK_MS
    starts = np.flatnonzero(np.r_[True, hours[1:] != hours[:-1]])
    ends = np.r_[starts[1:], len(ts_ms)]
    return [
        Chunk(series_id, int(hours[a]) * CHUNK_MS, ts_ms[a:b], values[a:b])
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
    ]


def encode(ts_ms: np.ndarray, values: np.ndarray) -> tuple[bytes, bytes]:
    return (
        ((ts_ms - PG_EPOCH_MS) * 1000).astype(">i8").tobytes(),
        np.asarray(values, dtype=">f8").tobytes(),
    )


def decode_us(raw_ts: bytes, raw_values: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Packed arrays -> (microseconds since 2000-01-01, values), native byte order."""
    return (
        np.frombuffer(raw_ts, dtype=">i8").astype(np.int64),
        np.frombuffer(raw_values, dtype=">f8").astype(np.float64),
    )


def decode_ms(raw_ts: bytes, raw_values: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Packed arrays -> (ms since the Unix epoch, values), native byte order."""
    ts_us, values = decode_us(raw_ts, raw_values)
    return ts_us // 1000 + PG_EPOCH_MS, values


def copy_payload(chunks: Iterable[Chunk]) -> bytes:
    """Chunks as binary COPY tuples (no header or trailer)."""
    out = []
    for c in chunks:
        raw_ts, raw_values = encode(c.ts_ms, c.values)
        bucket_us = (c.bucket_ms - PG_EPOCH_MS) * 1000
        out.append(_ROW_HEAD.pack(5, 8, c.series_id, 8, bucket_us, 4, len(c.ts_ms)))
        out.append(len(raw_ts).to_bytes(4, "big"))
        out.append(raw_ts)
        out.append(len(raw_values).to_bytes(4, "big"))
        out.append(raw_values)
    return b"".join(out)


def copy_chunks(cursor: object, payload: bytes) -> None:
    """COPY an encoded payload on a raw psycopg cursor."""
    with cursor.copy(COPY_SQL) as copy:  # type: ignore[attr-defined]
        copy.write(COPY_HEADER)
        view = memoryview(payload)
        step = 1 << 24
        for start in range(0, len(view), step):
            copy.write(view[start : start + step])
        copy.write(COPY_TRAILER)


def stored_hours(series_ids: Sequence[int], first_ms: int, last_ms: int) -> set[tuple[int, int]]:
    """(series id, hour start in ms) of the stored chunks of these series in [first, last]."""
    if not series_ids:
        return set()
    with connection.cursor() as cur:
        cur.execute(
            "SELECT series_id, (EXTRACT(EPOCH FROM bucket) * 1000)::int8 "
            "FROM timeline_samplechunk WHERE series_id = ANY(%s) AND bucket BETWEEN %s AND %s",
            [list(series_ids), aware(first_ms), aware(last_ms)],
        )
        return {(int(sid), int(ms)) for sid, ms in cur.fetchall()}


def aware(ms: int) -> dt.datetime:
    """Milliseconds since the Unix epoch as an aware UTC datetime."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def merge_into_stored(chunks: Sequence[Chunk]) -> tuple[list[Chunk], dict[int, int]]:
    """Merge chunks whose hour is stored already: samples at times already stored are dropped
    (the stored value wins). Returns the merged chunks as now stored and the samples added per
    series."""
    added: dict[int, int] = {}
    merged: list[Chunk] = []
    if not chunks:
        return merged, added
    with connection.cursor() as cur:
        cur.execute(  # every stored hour in one read, locked for the rewrite below
            "SELECT c.series_id, (EXTRACT(EPOCH FROM c.bucket) * 1000)::int8, c.ts, c.vals "
            "FROM timeline_samplechunk c JOIN unnest(%s::int8[], %s::timestamptz[]) "
            "AS w (series_id, bucket) USING (series_id, bucket) FOR UPDATE OF c",
            [[c.series_id for c in chunks], [aware(c.bucket_ms) for c in chunks]],
        )
        stored = {(int(sid), int(ms)): (bytes(t), bytes(v)) for sid, ms, t, v in cur.fetchall()}
        for c in chunks:
            old_ts, old_values = decode_ms(*stored[(c.series_id, c.bucket_ms)])
            fresh = ~np.isin(c.ts_ms, old_ts)
            added[c.series_id] = added.get(c.series_id, 0) + int(fresh.sum())
            if not fresh.any():
                continue
            ts_ms, values = normalise(
                np.concatenate([old_ts, c.ts_ms[fresh]]),
                np.concatenate([old_values, c.values[fresh]]),
            )
            new_ts, new_values = encode(ts_ms, values)
            cur.execute(
                "UPDATE timeline_samplechunk SET n = %s, ts = %s, vals = %s "
                "WHERE series_id = %s AND bucket = %s",
                [len(ts_ms), new_ts, new_values, c.series_id, aware(c.bucket_ms)],
            )
            merged.append(Chunk(c.series_id, c.bucket_ms, ts_ms, values))
    return merged, added


def read_packed(
    series_ids: Sequence[int],
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
) -> dict[int, tuple[bytes, bytes]]:
    """The chunks of these series that reach into [start, end], concatenated per series in
    time order by the server: (packed times, packed values). Edge chunks reach past the
    window; callers trim after decoding (``read``)."""
    if not series_ids:
        return {}
    with connection.cursor() as cur:
        cur.execute(
            "SELECT series_id, string_agg(ts, ''::bytea ORDER BY bucket), "
            "string_agg(vals, ''::bytea ORDER BY bucket) FROM timeline_samplechunk "
            "WHERE series_id = ANY(%s) "
            "AND bucket > COALESCE(%s::timestamptz - interval '1 hour', '-infinity') "
            "AND bucket <= COALESCE(%s::timestamptz, 'infinity') GROUP BY series_id",
            [list(series_ids), start, end],
        )
        return {int(sid): (bytes(t), bytes(v)) for sid, t, v in cur.fetchall()}


def read(
    series_ids: Sequence[int],
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Samples of these series within [start, end] (ms since the Unix epoch, values), in time
    order; series without samples there are left out."""
    out = {}
    for sid, (raw_ts, raw_values) in read_packed(series_ids, start, end).items():
        ts, values = decode_ms(raw_ts, raw_values)
        if start is not None or end is not None:
            lo = ts.searchsorted(start.timestamp() * 1000, "left") if start else 0
            hi = ts.searchsorted(end.timestamp() * 1000, "right") if end else len(ts)
            ts, values = ts[lo:hi], values[lo:hi]
        if len(ts):
            out[sid] = (ts, values)
    return out


def count(series_ids: Sequence[int] | None = None) -> int:
    """Samples stored (of these series, or of all)."""
    with connection.cursor() as cur:
        if series_ids is None:
            cur.execute("SELECT COALESCE(sum(n), 0) FROM timeline_samplechunk")
        else:
            cur.execute(
                "SELECT COALESCE(sum(n), 0) FROM timeline_samplechunk WHERE series_id = ANY(%s)",
                [list(series_ids)],
            )
        return int(cur.fetchone()[0])
