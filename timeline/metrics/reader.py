"""Samples and rollups read back as numpy arrays (ms since the Unix epoch, float64 values).

Chunks come back a row each (each is compressed on its own) and are decoded all together by
numpy with no Python object per sample; rollup buckets come back one row per series,
concatenated by the server into bytea strings.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
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
    rows = binary_rows(
        "SELECT series_id, ts, vals FROM timeline_samplechunk WHERE series_id = ANY(%s) "
        "AND bucket > COALESCE(%s::timestamptz - interval '1 hour', '-infinity') "
        "AND bucket <= COALESCE(%s::timestamptz, 'infinity') ORDER BY series_id, bucket",
        [list(series_ids), start, end],
    )
    return [(int(sid), t, v) for sid, t, v in rows]


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_US = dt.timedelta(microseconds=1)
_FAR = 1 << 62  # ms: beyond any time (an open end), and far from int64's limits


def _window_ms(start: dt.datetime | None, end: dt.datetime | None) -> tuple[int, int]:
    """The window as whole ms to search int64 times with: the first ms at or after ``start``
    and the last at or before ``end`` (exact: from the datetimes' microseconds). A float bound
    would make numpy convert the whole array to float64 to search or compare it: a copy of
    each series on every read."""
    lo = -(-((start.astimezone(dt.UTC) - _EPOCH) // _US) // 1000) if start else -_FAR
    hi = ((end.astimezone(dt.UTC) - _EPOCH) // _US) // 1000 if end else _FAR
    return lo, hi


def binary_rows(sql: str, params: Sequence[object] | Mapping[str, object]) -> list[tuple[Any, ...]]:
    """Rows with their bytea columns sent as bytes, not hex text: half the time for a window's
    megabytes of chunks. On Django's connection (its transaction, if one is open), through a
    psycopg cursor that binds on the server (Django's own binds on the client, which psycopg
    allows only text results for)."""
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cur:
        cur.execute(sql, params, binary=True)
        return cur.fetchall()


def samples_read(
    series_ids: Sequence[int], start: dt.datetime | None = None, end: dt.datetime | None = None
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Samples of these series within [start, end] (ms since the Unix epoch, values), in time
    order; series without samples there are left out. Read and decoded for this call only (the
    analysis's full-resolution reads); the timeline's windows go through :func:`samples_window`."""
    if not series_ids:
        return {}
    rows = _chunks(series_ids, start, end)
    if not rows:
        return {}
    # Every chunk decoded in one go (packing.decode_many), then cut per series.
    all_ts, all_values, counts = packing.decode_many([r[1] for r in rows], [r[2] for r in rows])
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    firsts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.cumsum(counts)
    bounds = np.r_[0, ends[np.r_[firsts[1:] - 1, len(ids) - 1]]]
    out = {}
    for k, first in enumerate(firsts.tolist()):
        ts = all_ts[bounds[k] : bounds[k + 1]]
        values = all_values[bounds[k] : bounds[k + 1]]
        if start is not None or end is not None:
            lo, hi = _window_ms(start, end)
            a, b = ts.searchsorted(lo, "left"), ts.searchsorted(hi, "right")
            ts, values = ts[a:b], values[a:b]
        if len(ts):
            out[int(ids[first])] = (ts, values)
    return out


def samples_window(
    series: Sequence[Any], start: dt.datetime | None, end: dt.datetime | None
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """samples_read's answer for these Series rows, through what this process holds (the
    timeline's zooms and pans reread the same series): a small series whole
    (:func:`_series_whole`), sliced per window with no copy; a bigger one by its chunks, through
    the chunks it has (:func:`_chunk_indexes`) and those decoded lately. A window read before
    costs no query. The arrays are read-only (shared with later reads)."""
    if not series:
        return {}
    small = [s for s in series if 0 < (s.sample_count or 0) <= WHOLE_SERIES_SAMPLES]
    # Only when the read's small series fit in a half of the budget together: more would evict
    # one another within the read, and each window would decode them whole again.
    if sum(s.sample_count for s in small) * 16 > DECODED_CACHE_BYTES // 2:
        small = []
    held_whole = {s.pk for s in small}
    out = _window_of_parts(
        _decoded_window([s for s in series if s.pk not in held_whole], start, end), start, end
    )
    lo, hi = _window_ms(start, end)
    for sid, (ts, values) in _series_whole(small).items():
        a, b = int(ts.searchsorted(lo, "left")), int(ts.searchsorted(hi, "right"))
        if b > a:
            out[sid] = (ts[a:b], values[a:b])
    return out


# Decoded chunks this process read lately: a zoom of the timeline reads the same hours of the
# same series as the zooms before it, and fetching and decoding the bytes (zstd, unshuffle,
# two scans) cost more than the rest of the window. Keyed by the row version that holds the
# chunk (its series, hour in ms, sample count, byte lengths and the transaction that wrote
# it), so a chunk rewritten by an ingest is a new key, never a stale hit.
DECODED_CACHE_BYTES = 128 * 1024 * 1024
_ChunkKey = tuple[int, int, int, int, int, int]


class _HeldArrays:
    """Arrays this process keeps for later reads, under keys that name one state of what they
    hold (an entry is never stale); past ``budget`` bytes the least recently used are dropped.
    Held arrays are read-only: every later read shares them. Thread-safe."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._items: OrderedDict[Any, tuple[np.ndarray, ...] | None] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def take(self, keys: Sequence[Any]) -> tuple[dict[Any, Any], list[Any]]:
        """(the entries held under these keys, now the most recently used; the keys not held)."""
        found, missing = {}, []
        with self._lock:
            for k in keys:
                if k in self._items:
                    self._items.move_to_end(k)
                    found[k] = self._items[k]
                else:
                    missing.append(k)
        return found, missing

    def keep(self, entries: Mapping[Any, tuple[np.ndarray, ...] | None]) -> None:
        """Hold these (None: "nothing there", held as such), then drop the least recently used
        past the budget. Entries larger than the budget together are not held at all (the
        caller keeps its own references for the read at hand)."""
        size = sum(_nbytes(arrays) for arrays in entries.values())
        if size > self.budget:
            return
        with self._lock:
            for k, arrays in entries.items():
                if k in self._items:
                    continue
                for a in arrays or ():
                    a.flags.writeable = False
                self._items[k] = arrays
                self._size += _nbytes(arrays)
            while self._size > self.budget and self._items:
                _, old = self._items.popitem(last=False)
                self._size -= _nbytes(old)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0


def _nbytes(arrays: tuple[np.ndarray, ...] | None) -> int:
    return sum(a.nbytes for a in arrays) if arrays else 0


_decoded = _HeldArrays(DECODED_CACHE_BYTES)


# Which chunks each series has, as this process last read them: per chunk its hour (ms), sample
# count, byte lengths and writing transaction, the rest of its _ChunkKey. Keyed by the series'
# state (id, sample count, last time), as the rollups below and the whole-span cache of
# timeline.selectors are: the writer changes a series' chunks only with its count, in the same
# transaction. The state is the one the index's own query read (not the caller's), so an
# index is never held under a state it does not belong to.
INDEX_CACHE_BYTES = 16 * 1024 * 1024
_IndexKey = tuple[int, int, float | None]
_indexes = _HeldArrays(INDEX_CACHE_BYTES)


def _int8_array(values: Iterable[int]) -> str:
    """An int8[] parameter as its text literal: psycopg dumps a list element by element, ~25 us
    for 16 datetimes or a few hundred ints, more than the query they go to."""
    return "{" + ",".join(str(int(v)) for v in values) + "}"


def _index_key(s: Any) -> _IndexKey:
    return (int(s.pk), int(s.sample_count or 0), s.last_ts.timestamp() if s.last_ts else None)


def _chunk_indexes(series: Sequence[Any]) -> dict[int, np.ndarray]:
    """Per series id, its chunks as rows of (hour ms, n, ts bytes, vals bytes, xmin), in time
    order: held, or read in one query for the series not held in their current state."""
    keys = {int(s.pk): _index_key(s) for s in series}
    found, missing = _indexes.take(list(keys.values()))
    out = {k[0]: arrays[0] for k, arrays in found.items() if arrays is not None}
    if missing:
        rows = binary_rows(
            "SELECT s.id, s.sample_count, s.last_ts, "
            "(EXTRACT(EPOCH FROM c.bucket) * 1000)::int8, c.n, length(c.ts), length(c.vals), "
            "c.xmin::text::int8 FROM timeline_series s "
            "LEFT JOIN timeline_samplechunk c ON c.series_id = s.id "
            "WHERE s.id = ANY(%s::int8[]) ORDER BY s.id, c.bucket",
            [_int8_array(k[0] for k in missing)],
        )
        read: dict[_IndexKey, list[tuple[int, ...]]] = {}
        for sid, count, last_ts, *chunk in rows:
            key = (int(sid), int(count or 0), last_ts.timestamp() if last_ts else None)
            chunks = read.setdefault(key, [])
            if chunk[0] is not None:  # a series without chunks: one row of NULLs
                chunks.append(tuple(chunk))
        fresh = {
            key: (np.array(chunks, dtype=np.int64).reshape(-1, 5),) for key, chunks in read.items()
        }
        _indexes.keep(fresh)
        out.update((key[0], arrays[0]) for key, arrays in fresh.items())
    return out


def _decoded_window(
    series: Sequence[Any], start: dt.datetime | None, end: dt.datetime | None
) -> list[tuple[int, tuple[np.ndarray, np.ndarray]]]:
    """(series id, (times, values)) of each of the window's chunks in series and time order,
    decoded, through the held indexes and decoded chunks: one query for the bytes of the
    chunks not decoded here yet, none when all are."""
    # The chunks _chunks's query picks: from an hour before the window's start to its end.
    lo, hi = _window_ms(start, end)
    if start:  # hours starting after (searched "right" of) the ms an hour before the start
        lo = ((start.astimezone(dt.UTC) - _EPOCH) // _US) // 1000 - 3_600_000
    keys: list[_ChunkKey] = []
    for sid, index in sorted(_chunk_indexes(series).items()):
        hours = index[:, 0]
        a, b = int(hours.searchsorted(lo, "right")), int(hours.searchsorted(hi, "right"))
        keys.extend((sid, *map(int, row)) for row in index[a:b])  # type: ignore[misc]
    held, missing = _decoded.take(keys)
    fresh = {}
    if missing:
        got = {
            (sid, bucket): (t, v)
            for sid, bucket, t, v in binary_rows(
                "SELECT w.sid, w.ms, c.ts, c.vals "
                "FROM unnest(%s::int8[], %s::int8[]) w(sid, ms) JOIN timeline_samplechunk c "
                "ON c.series_id = w.sid "
                "AND c.bucket = 'epoch'::timestamptz + w.ms * interval '1 ms'",
                [_int8_array(k[0] for k in missing), _int8_array(k[1] for k in missing)],
            )
        }
        # A chunk removed since the index was read is left out; one rewritten since is
        # decoded for this read only (its key is the old row's) and asked for again next time.
        missing = [k for k in missing if (k[0], k[1]) in got]
        if missing:
            ts, values, counts = packing.decode_many(
                [got[k[0], k[1]][0] for k in missing], [got[k[0], k[1]][1] for k in missing]
            )
            cut = np.cumsum(counts)[:-1]
            # Copies: a view would keep its whole batch alive after being evicted.
            pieces = zip(np.split(ts, cut), np.split(values, cut), strict=True)
            fresh = {k: (t.copy(), v.copy()) for k, (t, v) in zip(missing, pieces, strict=True)}
            _decoded.keep(fresh)
    parts = []
    for k in keys:
        part = held.get(k) or fresh.get(k)
        if part is not None:
            parts.append((k[0], part))
    return parts


# A series of up to this many samples (800 KB decoded; a day at a 2 s scrape) is held whole:
# every window of it is a slice, and its first read decodes it at once (~25 us an hour of it).
WHOLE_SERIES_SAMPLES = 50_000


def _series_whole(series: Sequence[Any]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Each of these Series rows' samples, whole, in time order: held in :data:`_decoded`
    under the series' state (as the chunk indexes are), or read in one query and decoded. A
    state read since the caller's is held under the state read (never under an older one)."""
    keys = {int(s.pk): _index_key(s) for s in series}
    found, missing = _decoded.take(list(keys.values()))
    out = {k[0]: arrays for k, arrays in found.items() if arrays is not None}
    if missing:
        rows = binary_rows(
            "SELECT s.id, s.sample_count, s.last_ts, c.ts, c.vals FROM timeline_series s "
            "JOIN timeline_samplechunk c ON c.series_id = s.id "
            "WHERE s.id = ANY(%s::int8[]) ORDER BY s.id, c.bucket",
            [_int8_array(k[0] for k in missing)],
        )
        if rows:
            ts, values, counts = packing.decode_many([r[3] for r in rows], [r[4] for r in rows])
            ends = np.cumsum(counts)
            fresh: dict[Any, tuple[np.ndarray, ...] | None] = {}
            first = 0
            for k, row in enumerate(rows):
                if k + 1 < len(rows) and rows[k + 1][0] == row[0]:
                    continue  # the series goes on in the next row
                at = int(ends[first - 1]) if first else 0
                key = (int(row[0]), int(row[1] or 0), row[2].timestamp() if row[2] else None)
                # Copies: a view would keep the whole batch alive after being evicted.
                fresh[key] = (ts[at : ends[k]].copy(), values[at : ends[k]].copy())
                first = k + 1
            _decoded.keep(fresh)
            out.update((key[0], arrays) for key, arrays in fresh.items() if arrays is not None)
    return out


def _window_of_parts(
    parts: list[tuple[int, tuple[np.ndarray, np.ndarray]]],
    start: dt.datetime | None,
    end: dt.datetime | None,
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Each series' decoded chunks (in time order) cut to the window and joined: only what the
    window holds is copied, and nothing when it lies in one chunk (a view of it)."""
    lo, hi = _window_ms(start, end)
    by_series: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    for sid, (ts, values) in parts:
        a, b = int(ts.searchsorted(lo, "left")), int(ts.searchsorted(hi, "right"))
        if b > a:
            by_series.setdefault(sid, []).append((ts[a:b], values[a:b]))
    return {
        sid: pieces[0]
        if len(pieces) == 1
        else (np.concatenate([t for t, _ in pieces]), np.concatenate([v for _, v in pieces]))
        for sid, pieces in by_series.items()
    }


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


def _min_max_points(
    t_min: bytes, v_min: bytes, t_max: bytes, v_max: bytes
) -> tuple[np.ndarray, np.ndarray]:
    """The buckets' min and max (as the server concatenated them) as two points per bucket,
    each bucket's two in time order: (ms since the Unix epoch, values)."""
    t1 = packing.unix_ms(np.frombuffer(t_min, dtype=">i8"))
    t2 = packing.unix_ms(np.frombuffer(t_max, dtype=">i8"))
    ts = np.empty(2 * len(t1), dtype=np.int64)
    values = np.empty(2 * len(t1), dtype=np.float64)
    first_is_min = t1 <= t2
    ts[0::2] = np.where(first_is_min, t1, t2)
    ts[1::2] = np.where(first_is_min, t2, t1)
    v1 = np.frombuffer(v_min, dtype=">f8").astype(np.float64)
    v2 = np.frombuffer(v_max, dtype=">f8").astype(np.float64)
    values[0::2] = np.where(first_is_min, v1, v2)
    values[1::2] = np.where(first_is_min, v2, v1)
    return ts, values


def rollups_read(
    series_ids: Sequence[int], start: dt.datetime | None, end: dt.datetime | None
) -> dict[int, tuple[np.ndarray, np.ndarray, int]]:
    """Each minute's min and max as two points at their own times, with the samples the
    buckets hold, per series; series without rollups (samples written around the writer) are
    left out, to be read raw.

    The server concatenates each series' minutes into four binary strings, fed in time order by
    the subquery (four ``string_agg(... ORDER BY bucket)`` sorted each group four times: 4x the
    time); the times are checked in order here all the same (selectors._downsample sorts a
    series that is not)."""
    if not series_ids:
        return {}
    sql = (
        "SELECT series_id, string_agg(timestamptz_send(t_min), ''::bytea), "
        "string_agg(float8send(v_min), ''::bytea), "
        "string_agg(timestamptz_send(t_max), ''::bytea), "
        "string_agg(float8send(v_max), ''::bytea), sum(n)::int8 "
        "FROM (SELECT * FROM timeline_samplerollup WHERE series_id = ANY(%s) "
        "AND bucket >= COALESCE(%s::timestamptz - interval '1 minute', '-infinity') "
        "AND bucket <= COALESCE(%s::timestamptz, 'infinity') ORDER BY series_id, bucket) r "
        "GROUP BY series_id"
    )
    rows = binary_rows(sql, [list(series_ids), start, end])
    out = {}
    for sid, t_min, v_min, t_max, v_max, n in rows:
        ts, values = _min_max_points(t_min, v_min, t_max, v_max)
        if start is not None or end is not None:  # the edge buckets reach past the window
            lo, hi = _window_ms(start, end)
            keep = (ts >= lo) & (ts <= hi)
            ts, values = ts[keep], values[keep]
        out[int(sid)] = (ts, values, int(n))
    return out


# Whole series' rollups this process read lately. A zoom too wide for the raw samples reads the
# rollups of its hours; the next zoom reads other hours of the same series. Postgres
# concatenating ~30k rollup rows per 6-hour zoom of 88 series cost ~6 ms of its CPU on each;
# a series' rollups are read whole once instead and each zoom slices them here. Keyed by the
# series' state (its sample count and last time, as the whole-span cache of
# timeline.selectors is): samples loaded into a series change it, and rollups change only with
# samples (both in the ingest's transaction).
ROLLUP_CACHE_BYTES = 64 * 1024 * 1024
_RollupKey = tuple[int, int, float | None]
# (bucket starts in ms, samples per bucket summed from the first: len + 1, point times, values)
_Rollups = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
_rollups = _HeldArrays(ROLLUP_CACHE_BYTES)


def _rollups_whole(series_ids: Sequence[int]) -> dict[int, _Rollups]:
    """All the rollups of these series, as rollups_read gives them plus each bucket's start and
    sample count."""
    rows = binary_rows(
        "SELECT series_id, string_agg(timestamptz_send(bucket), ''::bytea), "
        "string_agg(int4send(n), ''::bytea), "
        "string_agg(timestamptz_send(t_min), ''::bytea), "
        "string_agg(float8send(v_min), ''::bytea), "
        "string_agg(timestamptz_send(t_max), ''::bytea), "
        "string_agg(float8send(v_max), ''::bytea) "
        "FROM (SELECT * FROM timeline_samplerollup WHERE series_id = ANY(%s) "
        "ORDER BY series_id, bucket) r GROUP BY series_id",
        [list(series_ids)],
    )
    out = {}
    for sid, buckets, ns, t_min, v_min, t_max, v_max in rows:
        ts, values = _min_max_points(t_min, v_min, t_max, v_max)
        n_cum = np.zeros(len(ts) // 2 + 1, dtype=np.int64)
        np.cumsum(np.frombuffer(ns, dtype=">i4"), out=n_cum[1:])
        starts = packing.unix_ms(np.frombuffer(buckets, dtype=">i8"))
        out[int(sid)] = (np.ascontiguousarray(starts, dtype=np.int64), n_cum, ts, values)
    return out


def rollups_forget() -> None:
    """Drop the rollups this process holds (after rollups rewritten in place)."""
    _rollups.clear()


# Only series spanning up to this are held whole (~1 KB of arrays per hour): a 6 h zoom into a
# month-long series reads the window's rollups, not the month's.
ROLLUP_HELD_SPAN = dt.timedelta(days=3)


def rollups_window(
    series: Sequence[Any], start: dt.datetime | None, end: dt.datetime | None
) -> dict[int, tuple[np.ndarray, np.ndarray, int]]:
    """rollups_read's answer for these Series rows, through the rollups this process holds."""
    held_whole = [
        s
        for s in series
        if s.first_ts is not None
        and s.last_ts is not None
        and s.last_ts - s.first_ts <= ROLLUP_HELD_SPAN
    ]
    whole_ids = {s.pk for s in held_whole}
    out = rollups_read([s.pk for s in series if s.pk not in whole_ids], start, end)
    keys = {
        s.pk: (int(s.pk), int(s.sample_count or 0), s.last_ts.timestamp() if s.last_ts else None)
        for s in held_whole
    }
    found, missing = _rollups.take(list(keys.values()))
    held: dict[int, _Rollups | None] = {pk: found[k] for pk, k in keys.items() if k in found}
    if missing:
        got = _rollups_whole([k[0] for k in missing])
        fetched = {k: got.get(k[0]) for k in missing}  # None: no rollups (read raw)
        _rollups.keep(fetched)
        held.update((k[0], arrays) for k, arrays in fetched.items())
    lo, hi = _window_ms(start, end)
    for pk, arrays in held.items():
        if arrays is None:
            continue
        starts, n_cum, ts, values = arrays
        # The buckets rollups_read's query picks (a minute before the window to its end),
        # then their points inside the window.
        first = int(starts.searchsorted(lo - 60_000, "left"))
        last = int(starts.searchsorted(hi, "right"))
        if last <= first:
            continue
        ts, values = ts[2 * first : 2 * last], values[2 * first : 2 * last]
        if start is not None or end is not None:  # the edge buckets reach past the window
            keep = (ts >= lo) & (ts <= hi)
            ts, values = ts[keep], values[keep]
        out[pk] = (ts, values, int(n_cum[last] - n_cum[first]))
    return out
