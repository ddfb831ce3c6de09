"""Samples written as hourly chunks: binary COPY for new hours, a merge for stored ones.

Callers write inside their own transaction (one per artifact); a load's samples, rollups and
series counts commit or roll back together.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
from django.db import connection

from timeline.metrics import packing, rollups
from timeline.metrics.series import series_stats_update

COPY_SQL = "COPY timeline_samplechunk (series_id, bucket, n, ts, vals) FROM STDIN (FORMAT BINARY)"

Columns = Sequence[tuple[int, np.ndarray, np.ndarray]]  # (series id, times in ms, values)


def chunks_copy(cursor: Any, payload: bytes) -> None:
    """COPY encoded chunks (``packing.chunk_tuples``) on a raw psycopg cursor."""
    with cursor.copy(COPY_SQL) as copy:
        copy.write(packing.COPY_HEADER)
        view = memoryview(payload)
        step = 1 << 24
        for start in range(0, len(view), step):
            copy.write(view[start : start + step])
        copy.write(packing.COPY_TRAILER)


def _stored_hours(series_ids: Sequence[int], first_ms: int, last_ms: int) -> set[tuple[int, int]]:
    """(series id, hour start in ms) of the stored chunks of these series in [first, last]."""
    if not series_ids:
        return set()
    with connection.cursor() as cur:
        cur.execute(
            "SELECT series_id, (EXTRACT(EPOCH FROM bucket) * 1000)::int8 "
            "FROM timeline_samplechunk WHERE series_id = ANY(%s) AND bucket BETWEEN %s AND %s",
            [list(series_ids), packing.aware(first_ms), packing.aware(last_ms)],
        )
        return {(int(sid), int(ms)) for sid, ms in cur.fetchall()}


def _merge_into_stored(
    chunks: Sequence[packing.Chunk],
) -> tuple[list[packing.Chunk], dict[int, int]]:
    """Merge chunks whose hour is stored already: samples at times already stored are dropped
    (the stored value wins). Returns the merged chunks as now stored and the samples added per
    series."""
    added: dict[int, int] = {}
    merged: list[packing.Chunk] = []
    if not chunks:
        return merged, added
    with connection.cursor() as cur:
        cur.execute(  # every stored hour in one read, locked for the rewrite below
            "SELECT c.series_id, (EXTRACT(EPOCH FROM c.bucket) * 1000)::int8, c.ts, c.vals "
            "FROM timeline_samplechunk c JOIN unnest(%s::int8[], %s::timestamptz[]) "
            "AS w (series_id, bucket) USING (series_id, bucket) FOR UPDATE OF c",
            [[c.series_id for c in chunks], [packing.aware(c.bucket_ms) for c in chunks]],
        )
        stored = {(int(sid), int(ms)): (bytes(t), bytes(v)) for sid, ms, t, v in cur.fetchall()}
        for c in chunks:
            old_ts, old_values = packing.decode_ms(*stored[(c.series_id, c.bucket_ms)])
            fresh = ~np.isin(c.ts_ms, old_ts)
            added[c.series_id] = added.get(c.series_id, 0) + int(fresh.sum())
            if not fresh.any():
                continue
            ts_ms, values = packing.normalise(
                np.concatenate([old_ts, c.ts_ms[fresh]]),
                np.concatenate([old_values, c.values[fresh]]),
            )
            new_ts, new_values = packing.encode(ts_ms, values)
            cur.execute(
                "UPDATE timeline_samplechunk SET n = %s, ts = %s, vals = %s "
                "WHERE series_id = %s AND bucket = %s",
                [len(ts_ms), new_ts, new_values, c.series_id, packing.aware(c.bucket_ms)],
            )
            merged.append(packing.Chunk(c.series_id, c.bucket_ms, ts_ms, values))
    return merged, added


class SampleWriter:
    """The samples of one load, written as hourly chunks.

    ``prepare`` takes a batch of (series id, times in ms, values), merges the hours that are
    stored already (at once, on the caller's connection) and returns the COPY payload of the
    new hours, for the caller to send (``chunks_copy``); ``finish`` writes the per-minute
    rollups and the series' counts and time ranges. A batch should hold whole hours: an hour
    met again in a later batch is merged into the stored chunk, correct but slower."""

    def __init__(self) -> None:
        self.stats: dict[int, list[int]] = {}  # series id -> [added, first ms, last ms]
        self.rollup_parts: dict[int, list[dict[str, np.ndarray]]] = {}

    def prepare(self, columns: Columns) -> bytes:
        by_id: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        for sid, ts, values in columns:  # one series may come in several blocks
            if len(ts):
                by_id.setdefault(sid, []).append((ts, values))
        chunks: list[packing.Chunk] = []
        for sid, pieces in by_id.items():
            if len(pieces) == 1:
                ts, values = pieces[0]
            else:  # in the order given: the first value of a repeated time wins
                ts = np.concatenate([p[0] for p in pieces])
                values = np.concatenate([p[1] for p in pieces])
            chunks.extend(packing.split(sid, ts, values))
        if not chunks:
            return b""
        hours = [c.bucket_ms for c in chunks]
        stored = _stored_hours(sorted({c.series_id for c in chunks}), min(hours), max(hours))
        fresh = [c for c in chunks if (c.series_id, c.bucket_ms) not in stored]
        merged, added = _merge_into_stored(
            [c for c in chunks if (c.series_id, c.bucket_ms) in stored]
        )
        for c in fresh:
            added[c.series_id] = added.get(c.series_id, 0) + len(c.ts_ms)
        for c in chunks:
            lo, hi = int(c.ts_ms[0]), int(c.ts_ms[-1])
            entry = self.stats.get(c.series_id)
            if entry is None:
                self.stats[c.series_id] = [0, lo, hi]
            else:
                entry[1], entry[2] = min(entry[1], lo), max(entry[2], hi)
        for sid, n in added.items():
            self.stats[sid][0] += n
        # Rollups: the new hours of each series in one go; a merged hour replaces its minutes.
        by_series: dict[int, list[packing.Chunk]] = {}
        for c in fresh:
            by_series.setdefault(c.series_id, []).append(c)
        for sid, group in by_series.items():
            ts = np.concatenate([c.ts_ms for c in group])
            values = np.concatenate([c.values for c in group])
            self.rollup_parts.setdefault(sid, []).append(rollups.rollup(ts, values))
        for c in merged:
            self._replace_hour(c)
        return packing.chunk_tuples(fresh)

    def _replace_hour(self, chunk: packing.Chunk) -> None:
        lo, hi = chunk.bucket_ms, chunk.bucket_ms + packing.CHUNK_MS
        rollups.rollups_delete_range(chunk.series_id, lo, hi)
        parts = self.rollup_parts.setdefault(chunk.series_id, [])
        for i, part in enumerate(parts):
            outside = (part["bucket"] < lo) | (part["bucket"] >= hi)
            if not outside.all():
                parts[i] = {k: v[outside] for k, v in part.items()}
        parts.append(rollups.rollup(chunk.ts_ms, chunk.values))

    def finish(self) -> int:
        """Rollups and series upkeep; returns the samples added by this load."""
        rollups.rollups_store(
            [(sid, rollups.merge_rollups(parts)) for sid, parts in self.rollup_parts.items()]
        )
        series_stats_update(self.stats)
        return sum(n for n, _, _ in self.stats.values())

    def added(self) -> dict[int, int]:
        """Samples added per series id (a time already stored, or repeated, adds none)."""
        return {sid: entry[0] for sid, entry in self.stats.items()}


def samples_write(columns: Columns) -> int:
    """Store (series id, times in ms, values) of series that exist: chunks, rollups and the
    series' counts, on the caller's transaction. Returns the samples added."""
    return sum(samples_write_counted(columns).values())


def samples_write_counted(columns: Columns) -> dict[int, int]:
    """As :func:`samples_write`; returns the samples added per series id, so that a caller
    can tell which series had samples at times already stored (the stored value wins)."""
    writer = SampleWriter()
    payload = writer.prepare(columns)
    if payload:
        with connection.cursor() as cur, connection.wrap_database_errors:
            chunks_copy(cur.cursor, payload)
    writer.finish()
    return writer.added()


class SampleStream:
    """Samples written part by part while the caller produces the next part: each part's
    complete hours are COPYed from a helper thread on the caller's own connection (so they
    stay in its transaction), and the hour each series is still in is held back until a later
    part brings the rest of it.

    One statement may be in flight on a connection: ``wait`` before any query of your own.
    Use as a context manager; ``finish`` writes what is held back, the rollups and the series
    upkeep, and returns the samples added."""

    def __init__(self) -> None:
        connection.ensure_connection()
        self._raw = connection.connection
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="copy")
        self._pending: Future[None] | None = None
        self._held: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # the open hour's samples
        self.writer = SampleWriter()

    def __enter__(self) -> SampleStream:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=True)

    def _copy(self, payload: bytes) -> None:
        with self._raw.cursor() as cur:
            chunks_copy(cur, payload)

    def wait(self) -> None:
        """Until the COPY in flight is done: the connection is free again."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def add(self, ids: np.ndarray, stamps: np.ndarray, values: np.ndarray) -> None:
        """One part: rows grouped by series (``ids``: series ids), times in ms and values."""
        self.wait()
        payload = self.writer.prepare(self._complete_hours(ids, stamps, values))
        if payload:
            self._pending = self._pool.submit(self._copy, payload)

    def finish(self) -> int:
        self.wait()
        payload = self.writer.prepare([(sid, ts, vs) for sid, (ts, vs) in self._held.items()])
        self._held.clear()
        if payload:
            self._copy(payload)
        return self.writer.finish()

    def _complete_hours(
        self, ids: np.ndarray, stamps: np.ndarray, values: np.ndarray
    ) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """The samples of one part with what was held back before, less each series' last
        hour, which is held back in turn."""
        out = []
        if len(ids):
            starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
            ends = np.r_[starts[1:], len(ids)]
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
                sid = int(ids[a])
                ts, vs = stamps[a:b], values[a:b]
                if sid in self._held:
                    old_ts, old_vs = self._held.pop(sid)
                    ts, vs = np.concatenate([old_ts, ts]), np.concatenate([old_vs, vs])
                last_hour = int(ts.max()) // packing.CHUNK_MS
                done = ts // packing.CHUNK_MS < last_hour
                if done.all():
                    out.append((sid, ts, vs))
                    continue
                self._held[sid] = (ts[~done], vs[~done])
                if done.any():
                    out.append((sid, ts[done], vs[done]))
        return out


def samples_delete(*, incident_id: int | None = None, artifact_id: int | None = None) -> None:
    """Delete the chunks and rollups of an incident's (or an artifact's) series, before the
    series go: they have no database foreign key (COPY speed)."""
    column = "incident_id" if incident_id is not None else "artifact_id"
    owner = incident_id if incident_id is not None else artifact_id
    with connection.cursor() as cur:
        for table in ("timeline_samplechunk", "timeline_samplerollup"):
            cur.execute(
                # Both names are constants of this function; the id travels as a parameter.
                f"DELETE FROM {table} WHERE series_id IN "  # noqa: S608
                f"(SELECT id FROM timeline_series WHERE {column} = %s)",
                [owner],
            )


def statistics_refresh() -> None:
    """ANALYZE the sample tables (after a bulk load that the planner should know about)."""
    with connection.cursor() as cur:
        cur.execute("ANALYZE timeline_samplechunk")
        cur.execute("ANALYZE timeline_samplerollup")
