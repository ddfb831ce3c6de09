"""The binary forms of stored samples: packed chunk arrays and Postgres binary COPY tuples.

Pure (numpy and the standard library, no Django): the writer, the rollups and the reader all
convert through here, so the Postgres epoch is defined once.

A chunk holds one series' samples of one hour as two packed arrays, sorted by time, one value
per time, each a zstd frame over a byte-shuffled array (the k-th bytes of all items, then the
k+1-th: the bytes that hardly change end up side by side, where zstd compresses them to
almost nothing):

- times: microseconds since 2000-01-01 (the zero of a Postgres timestamptz) as the first time,
  the first delta, then deltas of deltas (a steady scrape gives zeros), little-endian int8;
- values: the float8 bits of the first value, then each value's bits XOR the previous one's
  (a repeated value gives zeros, a slowly moving one leading zero bytes), little-endian.

The bits of every value are kept exactly (NaN payloads, Prometheus's stale marker, -0.0).
Each chunk is final when written: a later load that brings samples for a stored hour merges
into it (the values already stored win). Migration 0008 converted the earlier plain layout
(big-endian int8 microseconds and float8, 16 bytes a sample); ``decode_plain`` reads it.

Why not a row per sample: with a (series, ts) key, index upkeep dominated every bulk load
(5M samples: ~7-15 s of server time, more than parsing the file), and a row costs ~80 bytes
with its index entry against 16 bytes here. Readers decode with numpy and never want single
rows; per-minute rollups stay a table of their own, a pure function of the chunks.
"""

from __future__ import annotations

import datetime as dt
import struct
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import zstandard

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


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # how every packed array starts (a zstd frame)
ZSTD_LEVEL = 3  # level 3 to 19 saved < 3% on fleet data, at 5x the encoding time
_local = threading.local()  # zstd contexts are not thread-safe: one pair per thread


def _zstd() -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
    pair = getattr(_local, "pair", None)
    if pair is None:
        pair = _local.pair = (
            zstandard.ZstdCompressor(level=ZSTD_LEVEL),
            zstandard.ZstdDecompressor(),
        )
    return pair


def _pack(items: np.ndarray) -> bytes:
    """Little-endian 8-byte items, byte-shuffled, in one zstd frame."""
    shuffled = np.ascontiguousarray(items.view(np.uint8).reshape(-1, 8).T)
    return _zstd()[0].compress(shuffled.tobytes())


def _unpack(raw: bytes, dtype: str) -> np.ndarray:
    data = np.frombuffer(_zstd()[1].decompress(raw), dtype=np.uint8)
    return np.ascontiguousarray(data.reshape(8, -1).T).view(dtype).ravel()


def encode(ts_ms: np.ndarray, values: np.ndarray) -> tuple[bytes, bytes]:
    """(times in ms, values) -> the two packed arrays of a chunk."""
    us = pg_us(np.asarray(ts_ms, dtype=np.int64)).astype("<i8")
    times = us.copy()
    if len(us) > 1:
        deltas = np.diff(us)
        times[1] = deltas[0]
        times[2:] = np.diff(deltas)
    bits = np.asarray(values, dtype="<f8").view("<u8")
    xored = bits.copy()
    xored[1:] ^= bits[:-1]
    return _pack(times), _pack(xored)


def decode_ms(raw_ts: bytes, raw_values: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Packed arrays -> (ms since the Unix epoch, values), native byte order."""
    times = _unpack(raw_ts, "<i8")
    us = times.copy()
    if len(times) > 1:
        np.cumsum(times[1:], out=us[1:])  # the deltas
        np.cumsum(us[1:], out=us[1:])  # the offsets from the first time
        us[1:] += times[0]
    values = np.bitwise_xor.accumulate(_unpack(raw_values, "<u8")).view(np.float64)
    return unix_ms(us), values


def decode_many(
    raw_ts: Sequence[bytes], raw_values: Sequence[bytes]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Many chunks at once -> (ms since the Unix epoch, values, samples per chunk), the chunks
    one after the other. The same as ``decode_ms`` per chunk, but the deltas and XORs are
    undone by a few passes over all chunks together (a segmented scan), not per chunk."""
    decompress = _zstd()[1].decompress
    parts_ts = [decompress(r) for r in raw_ts]
    parts_values = [decompress(r) for r in raw_values]
    counts = np.fromiter((len(p) // 8 for p in parts_ts), dtype=np.int64, count=len(parts_ts))
    total = int(counts.sum())
    times = _unshuffle_into(parts_ts, counts, total).view("<i8")
    bits = _unshuffle_into(parts_values, counts, total).view("<u8")
    if not total:
        return np.empty(0, np.int64), np.empty(0, np.float64), counts
    starts = np.cumsum(counts) - counts
    starts = starts[counts > 0]
    # One scan over everything per step, each chunk's restart injected at its first item:
    # the item is offset by what the scan carries over from the chunk before, so the scan
    # arrives at each chunk's start as if it began there (no per-item "minus the chunk's
    # base" pass). Values: XOR-ing a chunk's first item with the XOR of the chunk before.
    # (Both arrays are _unshuffle_into's own: scanned in place, no copy.)
    carried = np.bitwise_xor.reduceat(bits, starts)
    bits[starts[1:]] ^= carried[:-1]
    values = np.bitwise_xor.accumulate(bits).view(np.float64)
    # Times: the first item of a chunk is its absolute time, then the first delta, then
    # deltas of deltas. Deltas: a scan with each chunk's first item at minus the sum of the
    # deltas of the chunk before (so it restarts at 0); times: a scan with each chunk's first
    # item at its absolute time minus the last time of the chunk before.
    first = times[starts]  # (fancy indexing: a copy already)
    times[starts] = 0
    sums = np.add.reduceat(times, starts)
    times[starts[1:]] = -sums[:-1]
    deltas = np.cumsum(times)
    spans = np.add.reduceat(deltas, starts)  # each chunk's last time minus its first
    deltas[starts[0]] = first[0]
    deltas[starts[1:]] = first[1:] - (first[:-1] + spans[:-1])
    us = np.cumsum(deltas)
    return unix_ms(us), values, counts


def _unshuffle_into(parts: Sequence[bytes], counts: np.ndarray, total: int) -> np.ndarray:
    """The chunks' byte planes, each chunk's 8 planes of n bytes one after the other, as
    ``total`` 8-byte values. Gathered plane by plane first (contiguous copies), then
    interleaved 8 strided writes in all: 2.5x faster than transposing chunk by chunk."""
    planes = np.empty((8, total), dtype=np.uint8)
    at = 0
    for part, n in zip(parts, counts.tolist(), strict=True):
        if n:
            planes[:, at : at + n] = np.frombuffer(part, dtype=np.uint8).reshape(8, n)
            at += n
    out = np.empty((total, 8), dtype=np.uint8)
    for j in range(8):
        out[:, j] = planes[j]
    return out.reshape(-1)


def decode_plain(raw_ts: bytes, raw_values: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The layout before migration 0008: big-endian int8 microseconds and float8."""
    return (
        unix_ms(np.frombuffer(raw_ts, dtype=">i8")),
        np.frombuffer(raw_values, dtype=">f8").astype(np.float64),
    )


def encode_plain(ts_ms: np.ndarray, values: np.ndarray) -> tuple[bytes, bytes]:
    """The layout before migration 0008 (for its reverse)."""
    return (
        pg_us(np.asarray(ts_ms, dtype=np.int64)).astype(">i8").tobytes(),
        np.asarray(values, dtype=">f8").tobytes(),
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
