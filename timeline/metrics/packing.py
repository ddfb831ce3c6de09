"""The binary forms of stored samples: packed chunk arrays and Postgres binary COPY tuples.

Pure (numpy and the standard library, no Django): the writer, the rollups and the reader all
convert through here, so the Postgres epoch is defined once.

A chunk holds one series' samples of one hour as two packed arrays: big-endian int8
microseconds since 2000-01-01 (the binary form of a Postgres timestamptz) and big-endian
float8, sorted by time, one value per time. Each chunk is final when written: a later load
that brings samples for a stored hour merges into it (the values already stored win).

Why not a row per sample: with a (series, ts) key, index upkeep dominated every bulk load
(5M samples: ~7-15 s of server time, more than parsing the file), and a row costs ~80 bytes
with its index entry against 16 bytes here. Readers decode with numpy and never want single
rows; per-minute rollups stay a table of their own, a pure function of the chunks.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

CHUNK_MS = 3_600_000
PG_EPOCH_MS = 946_684_800_000  # 2000-01-01T00:00:00Z, the zero of Postgres binary timestamps

COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
COPY_TRAILER = b"\xff\xff"
_CHUNK_HEAD = struct.Struct(">hiqiqii")  # 5 fields; series_id, bucket, n with their lengths
_ROLLUP_ROW = np.dtype(
    [
        ("nfields", ">i2"),
        ("l_series", ">i4"), ("series", ">i8"),
        ("l_bucket", ">i4"), ("bucket", ">i8"),
        ("l_tmin", ">i4"), ("t_min", ">i8"),
        ("l_vmin", ">i4"), ("v_min", ">f8"),
        ("l_tmax", ">i4"), ("t_max", ">i8"),
        ("l_vmax", ">i4"), ("v_max", ">f8"),
        ("l_n", ">i4"), ("n", ">i4"),
    ]
)  # fmt: skip
ROLLUP_ROW_BYTES = _ROLLUP_ROW.itemsize


@dataclass(frozen=True)
class Chunk:
    """One series' samples of one hour: sorted, unique times (ms since the Unix epoch)."""

    series_id: int
    bucket_ms: int
    ts_ms: np.ndarray
    values: np.ndarray


def pg_us(ms: np.ndarray) -> np.ndarray:
    """Milliseconds since the Unix epoch -> microseconds since the Postgres epoch."""
    return (ms - PG_EPOCH_MS) * 1000


def unix_ms(pg_micros: np.ndarray) -> np.ndarray:
    """Microseconds since the Postgres epoch (big-endian or not) -> ms since the Unix epoch."""
    return pg_micros.astype(np.int64) // 1000 + PG_EPOCH_MS


def aware(ms: int) -> dt.datetime:
    """Milliseconds since the Unix epoch as an aware UTC datetime."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


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
    """(times in ms, values) -> the two packed arrays of a chunk."""
    return (
        pg_us(ts_ms).astype(">i8").tobytes(),
        np.asarray(values, dtype=">f8").tobytes(),
    )


def decode_ms(raw_ts: bytes, raw_values: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Packed arrays -> (ms since the Unix epoch, values), native byte order."""
    return (
        unix_ms(np.frombuffer(raw_ts, dtype=">i8")),
        np.frombuffer(raw_values, dtype=">f8").astype(np.float64),
    )


def chunk_tuples(chunks: Iterable[Chunk]) -> bytes:
    """Chunks as binary COPY tuples of (series_id, bucket, n, ts, vals), no header or trailer."""
    out = []
    for c in chunks:
        raw_ts, raw_values = encode(c.ts_ms, c.values)
        bucket_us = (c.bucket_ms - PG_EPOCH_MS) * 1000
        out.append(_CHUNK_HEAD.pack(5, 8, c.series_id, 8, bucket_us, 4, len(c.ts_ms)))
        out.append(len(raw_ts).to_bytes(4, "big"))
        out.append(raw_ts)
        out.append(len(raw_values).to_bytes(4, "big"))
        out.append(raw_values)
    return b"".join(out)


def rollup_tuples(series_id: int, r: dict[str, np.ndarray]) -> bytes:
    """One series' rollups as binary COPY tuples of
    (series_id, bucket, t_min, v_min, t_max, v_max, n), no header or trailer."""
    rows = np.empty(len(r["bucket"]), dtype=_ROLLUP_ROW)
    rows["nfields"] = 7
    for length in ("l_series", "l_bucket", "l_tmin", "l_vmin", "l_tmax", "l_vmax"):
        rows[length] = 8
    rows["l_n"] = 4
    rows["series"] = series_id
    rows["bucket"] = pg_us(r["bucket"])
    rows["t_min"] = pg_us(r["t_min"])
    rows["v_min"] = r["v_min"]
    rows["t_max"] = pg_us(r["t_max"])
    rows["v_max"] = r["v_max"]
    rows["n"] = r["n"]
    return rows.tobytes()
