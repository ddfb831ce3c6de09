"""Big Prometheus text files: parse one part while the previous part is COPYed.

Parsing is Python on one core and the COPY of a part's hourly chunks is Postgres on the other,
so the COPY is hidden behind the parse. Everything happens in the artifact's one transaction:
the COPY of a part runs on the same connection from a helper thread while this thread parses
the next; it waits for the COPY before its own queries (one statement in flight at a time).
"""

from __future__ import annotations

import mmap
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import psycopg
from django.db import connection, transaction

from ingest import loaders
from ingest.parsers import prometheus
from ingest.parsers.types import ParseContext, SampleBlock
from ingest.progress import ProgressReporter
from timeline import samples
from timeline.models import Artifact, Incident

# Below this the whole-file path is as fast and simpler.
STREAM_MIN_BYTES = 32 * 1024 * 1024


def _copy(raw: psycopg.Connection, payload: bytes) -> None:
    with raw.cursor() as cur:
        samples.copy_chunks(cur, payload)


def stream_exposition(
    incident: Incident, artifact: Artifact, data: bytes | mmap.mmap, ctx: ParseContext
) -> tuple[int, int] | None:
    """Load a Prometheus text file part by part; returns (samples, series) written, or None
    when the file must take the whole-file path instead (nothing of it is left written then).

    Each part's samples go out as hourly chunks; the hour a series is still in at the end of a
    part is held back until the next part brings the rest of it."""
    stream = prometheus.ExpositionStream(data, ctx)
    connection.ensure_connection()
    raw = connection.connection
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="copy")
    progress = ProgressReporter(artifact.pk)
    db_ids = np.empty(0, dtype=np.int64)
    writer = loaders.SampleWriter()
    held: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # db id -> the open hour's samples
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
                    ready = _complete_hours(db_ids[sids], stamps, values, held)
                    payload = writer.prepare(ready)
                    if payload:
                        pending = pool.submit(_copy, raw, payload)
                    progress.report(stream.consumed / max(len(data), 1))
            finally:
                if pending is not None:
                    pending.result()
            payload = writer.prepare([(sid, ts, vs) for sid, (ts, vs) in held.items()])
            if payload:
                _copy(raw, payload)
            written = writer.finish()
            _fill_meta(stream, db_ids)
    except prometheus.StreamFallback:
        return None
    finally:
        pool.shutdown(wait=True)
        progress.close()
    return written, len(writer.stats)


def _complete_hours(
    ids: np.ndarray,
    stamps: np.ndarray,
    values: np.ndarray,
    held: dict[int, tuple[np.ndarray, np.ndarray]],
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The samples of one part (rows grouped by series) with what was held back before, less
    each series' last hour, which is held back in turn."""
    out = []
    if len(ids):
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        ends = np.r_[starts[1:], len(ids)]
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            sid = int(ids[a])
            ts, vs = stamps[a:b], values[a:b]
            if sid in held:
                old_ts, old_vs = held.pop(sid)
                ts, vs = np.concatenate([old_ts, ts]), np.concatenate([old_vs, vs])
            last_hour = int(ts.max()) // samples.CHUNK_MS
            done = ts // samples.CHUNK_MS < last_hour
            if done.all():
                out.append((sid, ts, vs))
                continue
            held[sid] = (ts[~done], vs[~done])
            if done.any():
                out.append((sid, ts[done], vs[done]))
    return out


def _fill_meta(stream: prometheus.ExpositionStream, db_ids: np.ndarray) -> None:
    """Type, unit and help are known only once the whole file is read; set them on the series
    that have none yet, in one statement."""
    ids, types, units, helps = [], [], [], []
    for sid, db_id in enumerate(db_ids.tolist()):
        typ, unit, help_text = stream.block_meta(sid)
        if typ or unit or help_text:
            ids.append(db_id)
            types.append(typ[:20])
            units.append(unit[:40])
            helps.append(help_text)
    if not ids:
        return
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE timeline_series AS s SET type = u.type, unit = u.unit, help = u.help "
            "FROM (SELECT unnest(%s::int8[]) AS id, unnest(%s::text[]) AS type, "
            "unnest(%s::text[]) AS unit, unnest(%s::text[]) AS help) AS u "
            "WHERE s.id = u.id AND s.type = ''",
            [ids, types, units, helps],
        )
