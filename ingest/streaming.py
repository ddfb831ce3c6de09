"""Big Prometheus text files: parse one part while the previous part is COPYed.

Parsing is Python on one core and the COPY is Postgres (index upkeep included) on the other,
so overlapping them takes the ingest of a multi-million-sample file to about the time of the
slower of the two. Everything still happens in the artifact's one transaction; the COPY of a
part runs on the same connection from a helper thread while this thread only parses (no other
query is ever in flight at the same time).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import psycopg
from django.db import connection, transaction

from ingest import loaders
from ingest.parsers import prometheus
from ingest.parsers.types import ParseContext, SampleBlock
from ingest.progress import ProgressReporter
from timeline.models import Artifact, Incident, Series
from timeline.rollups import merge_rollups, rollup, rollups_store

# Below this the whole-file path is as fast and simpler.
STREAM_MIN_BYTES = 32 * 1024 * 1024

_COPY_SQL = "COPY timeline_sample (series_id, ts, value) FROM STDIN (FORMAT BINARY)"


def _copy(raw: psycopg.Connection, payload: bytes) -> None:
    with raw.cursor() as cur, cur.copy(_COPY_SQL) as copy:
        copy.write(loaders.COPY_HEADER)
        view = memoryview(payload)
        step = 1 << 24
        for start in range(0, len(view), step):
            copy.write(view[start : start + step])
        copy.write(loaders.COPY_TRAILER)


def stream_exposition(
    incident: Incident, artifact: Artifact, data: bytes, ctx: ParseContext
) -> tuple[int, int] | None:
    """Load a Prometheus text file part by part; returns (samples, series) written, or None
    when the file must take the whole-file path instead (nothing of it is left written then)."""
    stream = prometheus.ExpositionStream(data, ctx)
    connection.ensure_connection()
    raw = connection.connection
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="copy")
    progress = ProgressReporter(artifact.pk)
    db_ids = np.empty(0, dtype=np.int64)
    stats: dict[int, list[int]] = {}  # db id -> [count, first ms, last ms]
    pieces: dict[int, list[dict[str, np.ndarray]]] = {}
    try:
        with transaction.atomic():  # a savepoint: a fallback rolls back every part
            pending: Future[None] | None = None
            try:
                for sids, values, stamps in stream:
                    if pending is not None:
                        pending.result()  # the connection is free again
                        pending = None
                    if len(stream.keys) > len(db_ids):
                        new = stream.keys[len(db_ids) :]
                        blocks = [SampleBlock(key=k) for k in new]
                        ids = loaders.series_ids_for(incident, artifact, blocks)
                        db_ids = np.concatenate([db_ids, np.asarray(ids, dtype=np.int64)])
                    payload = loaders.copy_rows(db_ids[sids], stamps, values)
                    pending = pool.submit(_copy, raw, payload)
                    _tally(sids, values, stamps, db_ids, stats, pieces)  # while the COPY runs
                    progress.report(stream.consumed / max(len(data), 1))
            finally:
                if pending is not None:
                    pending.result()
            loaders.update_series_stats(stats)
            rollups_store([(sid, merge_rollups(parts)) for sid, parts in pieces.items()])
            _fill_meta(stream, db_ids)
    except prometheus.StreamFallback:
        return None
    except psycopg.errors.UniqueViolation:
        return None  # samples of these series and times are stored already: merge path
    finally:
        pool.shutdown(wait=True)
        progress.close()
    return sum(n for n, _, _ in stats.values()), len(stats)


def _tally(
    sids: np.ndarray,
    values: np.ndarray,
    stamps: np.ndarray,
    db_ids: np.ndarray,
    stats: dict[int, list[int]],
    pieces: dict[int, list[dict[str, np.ndarray]]],
) -> None:
    """Per-series counts, time range and rollups of one part (rows are grouped by series)."""
    if not len(sids):
        return
    starts = np.flatnonzero(np.r_[True, sids[1:] != sids[:-1]])
    ends = np.r_[starts[1:], len(sids)]
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        sid = int(db_ids[sids[a]])
        ts, vs = stamps[a:b], values[a:b]
        entry = stats.setdefault(sid, [0, int(ts[0]), int(ts[-1])])
        entry[0] += b - a
        entry[1] = min(entry[1], int(ts[0]))
        entry[2] = max(entry[2], int(ts[-1]))
        pieces.setdefault(sid, []).append(rollup(ts, vs))


def _fill_meta(stream: prometheus.ExpositionStream, db_ids: np.ndarray) -> None:
    """Type, unit and help are known only once the whole file is read; set them on the series
    that have none yet."""
    series = {s.pk: s for s in Series.objects.filter(pk__in=db_ids.tolist(), type="")}
    changed = []
    for sid, db_id in enumerate(db_ids.tolist()):
        s = series.get(db_id)
        if s is None:
            continue
        typ, unit, help_text = stream.block_meta(sid)
        s.type, s.unit, s.help = typ[:20], unit[:40], help_text
        changed.append(s)
    Series.objects.bulk_update(changed, ["type", "unit", "help"], batch_size=1000)
