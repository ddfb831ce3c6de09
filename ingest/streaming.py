"""Big Prometheus text files: parse one part while the previous part is COPYed.

Parsing is Python on one core and the COPY of a part's hourly chunks is Postgres on the other,
so the COPY is hidden behind the parse (timeline.metrics.writer.SampleStream). Everything
happens in the artifact's one transaction.
"""

from __future__ import annotations

import mmap

import numpy as np
from django.db import transaction

from ingest import checks
from ingest.loaders import LoadedSamples
from ingest.parsers import prometheus
from ingest.parsers.series import DCGM_BLANKS, names_target, series_repr
from ingest.parsers.timestamps import default_time, to_epoch_ms
from ingest.parsers.types import ParseContext, SeriesKey
from ingest.services.artifacts import ProgressReporter
from timeline.metrics.series import SeriesSpec, series_ids_for, series_meta_fill
from timeline.metrics.writer import SampleStream
from timeline.models import Artifact, Incident

# Below this the whole-file path is as fast and simpler.
STREAM_MIN_BYTES = 32 * 1024 * 1024


def stream_exposition(
    incident: Incident, artifact: Artifact, data: bytes | mmap.mmap, ctx: ParseContext
) -> tuple[LoadedSamples, int] | None:
    """Load a Prometheus text file part by part; returns the samples written (and, per series,
    those dropped as already stored) and the series count, or None when the file must take the
    whole-file path instead (nothing of it is left written then)."""
    stream = prometheus.ExpositionStream(data, ctx)
    progress = ProgressReporter(artifact.pk)
    db_ids = np.empty(0, dtype=np.int64)
    given = np.zeros(0, dtype=np.int64)  # samples read per stream series
    at = default_time(ctx)
    at_ms = None if at is None else to_epoch_ms(at)
    marked = np.zeros(0, dtype=bool)  # stream series given the file as origin
    dcgm = np.zeros(0, dtype=bool)  # DCGM_FI_* series (series.drop_dcgm_blanks)
    blanks = np.asarray(DCGM_BLANKS)
    try:
        with transaction.atomic(), SampleStream() as out:  # a savepoint: a fallback rolls back
            for sids, values, stamps in stream:
                sids = np.asarray(sids, dtype=np.int64)
                if len(stream.keys) > len(db_ids):
                    out.wait()  # creating series is a query: the connection must be free
                    first = len(db_ids)
                    keys = stream.keys[first:]
                    if any(checks.series_key_problem(k.name, k.labels) for k in keys):
                        raise prometheus.StreamFallback  # the whole-file path names the line
                    origins = _origins(keys, first, sids, stamps, at_ms, ctx.name)
                    new = [
                        SeriesSpec(k.name, k.labels, origin=o)
                        for k, o in zip(keys, origins, strict=True)
                    ]
                    ids = series_ids_for(incident, artifact, new)
                    db_ids = np.concatenate([db_ids, np.asarray(ids, dtype=np.int64)])
                    given = np.concatenate([given, np.zeros(len(ids), dtype=np.int64)])
                    marked = np.concatenate([marked, np.asarray([bool(o) for o in origins])])
                    dcgm = np.concatenate(
                        [dcgm, np.asarray([k.name.startswith("DCGM_FI_") for k in keys])]
                    )
                of_dcgm = dcgm[sids]
                if of_dcgm.any() and np.isin(np.asarray(values)[of_dcgm], blanks).any():
                    raise prometheus.StreamFallback  # DCGM's "no reading": the whole-file path
                if at_ms is not None and np.any(marked[sids] & (np.asarray(stamps) != at_ms)):
                    # A series that took the file's time has a time of its own as well: the
                    # whole-file rule (series.mark_origins) decides.
                    raise prometheus.StreamFallback
                given += np.bincount(sids, minlength=len(given))
                out.add(db_ids[sids], stamps, values)
                progress.report(stream.consumed / max(len(data), 1))
            written = out.finish()
            added = out.writer.added()
            # Type, unit and help are known only once the whole file is read.
            series_meta_fill(
                {db_id: stream.block_meta(sid) for sid, db_id in enumerate(db_ids.tolist())}
            )
    except prometheus.StreamFallback:
        return None
    finally:
        progress.close()
    loaded = LoadedSamples(written=written)
    for sid, (key, db_id) in enumerate(zip(stream.keys, db_ids.tolist(), strict=True)):
        missing = int(given[sid]) - added.get(db_id, 0)
        if missing > 0:
            name = series_repr(key)
            loaded.dropped[name] = loaded.dropped.get(name, 0) + missing
    return loaded, len(out.writer.stats)


def _origins(
    keys: list[SeriesKey],
    first: int,
    sids: np.ndarray,
    stamps: object,
    at_ms: int | None,
    name: str,
) -> list[str]:
    """The origin of each series new in this part, by the whole-file rule
    (:func:`ingest.parsers.series.mark_origins`): the file's name for a series that took the
    file's time and whose labels name no target. Later parts check the "every sample" half."""
    if at_ms is None:
        return [""] * len(keys)
    stamps_arr = np.asarray(stamps)
    present, where = np.unique(sids, return_index=True)
    first_stamp = dict(zip(present.tolist(), stamps_arr[where].tolist(), strict=True))
    origins = []
    for offset, key in enumerate(keys):
        took_file_time = first_stamp.get(first + offset) == at_ms
        origins.append(name if took_file_time and not names_target(key.labels) else "")
    return origins
