"""Per-minute rollups of metric series: min and max with the times they occurred, and a count.

Computed with numpy from the arrays the writer already holds (no second read of the samples)
and stored by binary COPY; an hour merged with an earlier load's has its minutes recomputed.
The reader serves whole-incident views of big series from them (timeline.selectors).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.db import IntegrityError, connection, transaction

from timeline.metrics import packing, reader

BUCKET_MS = 60_000

_COLUMNS = "(series_id, bucket, t_min, v_min, t_max, v_max, n)"


def rollup(
    ts_ms: np.ndarray, values: np.ndarray, width_ms: int = BUCKET_MS
) -> dict[str, np.ndarray]:
    """Buckets of one series: start, time and value of the min and of the max, sample count.

    NaN is ignored for min and max (a bucket of only NaN keeps NaN at the bucket's first time)."""
    if len(ts_ms) == 0:
        empty = np.empty(0, dtype=np.int64)
        return {
            "bucket": empty,
            "t_min": empty,
            "v_min": np.empty(0),
            "t_max": empty,
            "v_max": np.empty(0),
            "n": empty,
        }
    if len(ts_ms) > 1 and not (ts_ms[1:] >= ts_ms[:-1]).all():
        order = np.argsort(ts_ms, kind="stable")
        ts_ms, values = ts_ms[order], values[order]
    buckets = ts_ms // width_ms
    return _reduce(
        buckets * width_ms, ts_ms, values, ts_ms, values, np.ones(len(ts_ms), dtype=np.int64)
    )


def _reduce(
    bucket: np.ndarray,
    t_min: np.ndarray,
    v_min: np.ndarray,
    t_max: np.ndarray,
    v_max: np.ndarray,
    n: np.ndarray,
) -> dict[str, np.ndarray]:
    """Combine consecutive rows of the same bucket: min of mins and max of maxes with the time
    each occurred, counts added. Samples are rows of their own (n = 1)."""
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    counts = np.diff(np.r_[starts, len(bucket)])
    group = np.repeat(np.arange(len(starts)), counts)
    lo = np.fmin.reduceat(v_min, starts)
    hi = np.fmax.reduceat(v_max, starts)

    def first_where(mask: np.ndarray) -> np.ndarray:
        idx = np.flatnonzero(mask)
        found, first = np.unique(group[idx], return_index=True)
        out = starts.copy()
        out[found] = idx[first]
        return out

    return {
        "bucket": bucket[starts],
        "t_min": t_min[first_where(v_min == lo[group])],
        "v_min": lo,
        "t_max": t_max[first_where(v_max == hi[group])],
        "v_max": hi,
        "n": np.add.reduceat(n, starts),
    }


def merge_rollups(parts: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One series' rollups computed piece by piece, as one."""
    if len(parts) == 1:
        return parts[0]
    cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    if len(cat["bucket"]) > 1 and not (cat["bucket"][1:] >= cat["bucket"][:-1]).all():
        order = np.argsort(cat["bucket"], kind="stable")
        cat = {k: v[order] for k, v in cat.items()}
    return _reduce(cat["bucket"], cat["t_min"], cat["v_min"], cat["t_max"], cat["v_max"], cat["n"])


def _copy(table: str, parts: Sequence[bytes]) -> None:
    sql = f"COPY {table} {_COLUMNS} FROM STDIN (FORMAT BINARY)"
    with connection.cursor() as cur, connection.wrap_database_errors, cur.cursor.copy(sql) as copy:
        copy.write(packing.COPY_HEADER)
        for part in parts:
            copy.write(part)
        copy.write(packing.COPY_TRAILER)


def rollups_store(items: Sequence[tuple[int, dict[str, np.ndarray]]]) -> int:
    """Store computed rollups. Straight COPY when the buckets are new; when another load
    already covered some of them, merge: min of mins, max of maxes (with their times), counts
    added."""
    parts = [packing.rollup_tuples(sid, r) for sid, r in items if len(r["bucket"])]
    if not parts:
        return 0
    try:
        with transaction.atomic():
            _copy("timeline_samplerollup", parts)
    except IntegrityError:
        with connection.cursor() as cur:
            cur.execute(
                "CREATE TEMP TABLE IF NOT EXISTS rollup_staging "
                "(LIKE timeline_samplerollup INCLUDING DEFAULTS) ON COMMIT DROP"
            )
            cur.execute("TRUNCATE rollup_staging")
        _copy("rollup_staging", parts)
        with connection.cursor() as cur:
            cur.execute(
                # _COLUMNS is a constant of this module; values travel as parameters or COPY.
                f"INSERT INTO timeline_samplerollup AS r {_COLUMNS} "  # noqa: S608
                f"SELECT {_COLUMNS[1:-1]} FROM rollup_staging "
                "ON CONFLICT (series_id, bucket) DO UPDATE SET "
                "t_min = CASE WHEN EXCLUDED.v_min < r.v_min THEN EXCLUDED.t_min ELSE r.t_min END, "
                "v_min = LEAST(r.v_min, EXCLUDED.v_min), "
                "t_max = CASE WHEN EXCLUDED.v_max > r.v_max THEN EXCLUDED.t_max ELSE r.t_max END, "
                "v_max = GREATEST(r.v_max, EXCLUDED.v_max), "
                "n = r.n + EXCLUDED.n"
            )
    return sum(len(p) // packing.ROLLUP_ROW_BYTES for p in parts)


def rollups_delete_range(series_id: int, start_ms: int, end_ms: int) -> None:
    """Forget the buckets of one series in [start, end) (before they are computed again)."""
    with connection.cursor() as cur:
        cur.execute(
            "DELETE FROM timeline_samplerollup WHERE series_id = %s AND bucket >= %s "
            "AND bucket < %s",
            [series_id, packing.aware(start_ms), packing.aware(end_ms)],
        )


def rollups_rebuild(series_ids: Sequence[int]) -> None:
    """Recompute the rollups of these series from their stored samples (for samples written
    around the writer)."""
    ids = list(series_ids)
    with connection.cursor() as cur:
        cur.execute("DELETE FROM timeline_samplerollup WHERE series_id = ANY(%s)", [ids])
    rollups_store(
        [(sid, rollup(ts, values)) for sid, (ts, values) in reader.samples_read(ids).items()]
    )
    reader.rollups_forget()  # rewritten without a change of the series' state (their key)
