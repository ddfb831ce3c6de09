"""Samples stored as hourly chunks: cut at the hours, one value per time, merges that keep what
is stored, windows read to the millisecond, and the migration from a row per sample."""

from __future__ import annotations

import datetime as dt
from array import array

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ingest import loaders
from ingest.parsers.types import SampleBlock, SeriesKey
from timeline.metrics import packing, reader
from timeline.models import SampleChunk, SampleRollup, Series

T0 = 1_795_190_400_000  # 2026-11-20T08:00:00Z in ms, an hour's start
HOUR = packing.CHUNK_MS


def _block(ts_ms, values, name: str = "sglang:num_running_reqs") -> SampleBlock:
    return SampleBlock(
        key=SeriesKey(name, (("tp_rank", "0"),)),
        ts_ms=array("q", [int(t) for t in ts_ms]),
        values=array("d", [float(v) for v in values]),
    )


def _aware(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def test_split_sorts_keeps_the_first_value_of_a_repeated_time_and_cuts_at_hours() -> None:
    ts = np.array([T0 + HOUR + 5, T0 + 10, T0 + HOUR - 1, T0 + 10, T0 + 2 * HOUR])
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    chunks = packing.split(7, ts, values)
    assert [c.bucket_ms for c in chunks] == [T0, T0 + HOUR, T0 + 2 * HOUR]
    assert chunks[0].ts_ms.tolist() == [T0 + 10, T0 + HOUR - 1]
    assert chunks[0].values.tolist() == [2.0, 3.0]  # the first of the two values at T0 + 10
    assert [c.values.tolist() for c in chunks[1:]] == [[1.0], [5.0]]


def test_encoding_round_trips_nan_infinities_and_milliseconds() -> None:
    ts = np.array([T0, T0 + 1, T0 + 999], dtype=np.int64)
    values = np.array([np.nan, np.inf, -0.5])
    back_ts, back_values = packing.decode_ms(*packing.encode(ts, values))
    assert back_ts.tolist() == ts.tolist()
    assert np.isnan(back_values[0]) and back_values[1:].tolist() == [np.inf, -0.5]


def test_a_load_writes_one_chunk_per_hour_and_reads_back_any_window(incident) -> None:
    ts = T0 + np.arange(0, 3 * HOUR, 1000, dtype=np.int64)  # three hours at 1 s
    values = np.arange(len(ts), dtype=np.float64)
    assert loaders.load_samples(incident, None, [_block(ts, values)]) == len(ts)
    series = Series.objects.get(incident=incident)
    assert series.sample_count == 10_800
    assert (series.first_ts, series.last_ts) == (_aware(int(ts[0])), _aware(int(ts[-1])))
    chunks = SampleChunk.objects.filter(series=series).order_by("bucket")
    assert [(c.bucket, c.n) for c in chunks] == [(_aware(T0 + h * HOUR), 3600) for h in range(3)]
    # A window across an hour's edge, to the millisecond on both sides.
    start, end = _aware(T0 + HOUR - 2000), _aware(T0 + HOUR + 2000)
    ((got_ts, got_values),) = reader.samples_read([series.pk], start, end).values()
    assert got_ts.tolist() == [T0 + HOUR + d for d in (-2000, -1000, 0, 1000, 2000)]
    assert got_values.tolist() == [3598.0, 3599.0, 3600.0, 3601.0, 3602.0]
    assert reader.samples_read([series.pk], _aware(T0 - 10_000), _aware(T0 - 1)) == {}
    assert sum(SampleRollup.objects.filter(series=series).values_list("n", flat=True)) == 10_800


def test_a_second_load_merges_into_stored_hours_and_stored_values_win(incident) -> None:
    first = T0 + np.arange(0, 90 * 60_000, 60_000, dtype=np.int64)  # 90 minutes, 1 per minute
    loaders.load_samples(incident, None, [_block(first, np.full(len(first), 1.0))])
    second = T0 + np.arange(60 * 60_000, 150 * 60_000, 60_000, dtype=np.int64)
    later = np.full(len(second), 2.0)
    later[-1] = 99.0
    added = loaders.load_samples(incident, None, [_block(second, later)])
    assert added == 60  # minutes 90..149: the other 30 were stored already
    series = Series.objects.get(incident=incident)
    assert series.sample_count == 150
    ((ts, values),) = reader.samples_read([series.pk]).values()
    assert ts.tolist() == (T0 + np.arange(150) * 60_000).tolist()
    assert values.tolist() == [1.0] * 90 + [2.0] * 59 + [99.0]
    assert SampleChunk.objects.filter(series=series).count() == 3
    rollup_rows = list(SampleRollup.objects.filter(series=series).values_list("v_max", "n"))
    assert len(rollup_rows) == 150 and {n for _, n in rollup_rows} == {1}
    assert max(v for v, _ in rollup_rows) == 99.0
    # The same bytes again add nothing.
    assert loaders.load_samples(incident, None, [_block(second, later)]) == 0
    assert reader.samples_count([series.pk]) == 150


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_rows_into_hourly_chunks_losing_nothing(team) -> None:
    from timeline.services import incident_create

    incident = incident_create(team=team, title="migrated")
    series = Series.objects.create(incident=incident, name="m", labels={})
    call_command("migrate", "timeline", "0003", verbosity=0)
    try:
        with connection.cursor() as cur:
            cur.execute(
                "INSERT INTO timeline_sample (series_id, ts, value) "
                "SELECT %s, to_timestamp((%s + i * 1500) / 1000.0), i * 0.25 "
                "FROM generate_series(0, 5999) AS i",
                [series.pk, T0 - 30_000],
            )
    finally:
        call_command("migrate", "timeline", verbosity=0)
    ((ts, values),) = reader.samples_read([series.pk]).values()
    assert ts.tolist() == [T0 - 30_000 + i * 1500 for i in range(6000)]
    assert values.tolist() == [i * 0.25 for i in range(6000)]
    buckets = list(SampleChunk.objects.filter(series=series).values_list("bucket", "n"))
    assert sorted(buckets) == [
        (_aware(T0 - HOUR), 20),
        (_aware(T0), 2400),
        (_aware(T0 + HOUR), 2400),
        (_aware(T0 + 2 * HOUR), 1180),
    ]


def test_one_series_in_two_blocks_of_one_load_is_stored_once(incident) -> None:
    ts = T0 + np.arange(0, 120_000, 1000, dtype=np.int64)
    blocks = [_block(ts[:80], np.full(80, 1.0)), _block(ts[40:], np.full(80, 2.0))]
    assert loaders.load_samples(incident, None, blocks) == 120
    ((got_ts, values),) = reader.samples_read(
        list(Series.objects.values_list("pk", flat=True))
    ).values()
    assert got_ts.tolist() == ts.tolist()
    assert values.tolist() == [1.0] * 80 + [2.0] * 40


def test_the_binary_forms_need_no_database() -> None:
    """packing holds the Postgres epoch and the byte layouts that every layer converts
    through, so it stays importable and testable without Django."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(packing.__file__).read_text(encoding="utf-8"))
    roots = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert roots <= {
        "__future__",
        "collections",
        "dataclasses",
        "datetime",
        "numpy",
        "struct",
        "threading",
        "zstandard",
    }


@pytest.mark.parametrize("held", ["whole series", "chunks"])
def test_held_samples_read_the_same_and_a_merge_is_never_stale(incident, monkeypatch, held) -> None:
    """reader.samples_window (a small series held whole; a bigger one by its chunk index and
    decoded chunks) answers what samples_read's query does, with no query once the window is
    held; a load into the series (a new state) is read again, never served from what was
    held."""
    if held == "chunks":
        monkeypatch.setattr(reader, "WHOLE_SERIES_SAMPLES", 0)
    ts = T0 + np.arange(0, 2 * HOUR, 1000, dtype=np.int64)
    values = np.sin(np.arange(len(ts)) / 30.0)
    # Two series read together (cut apart from one batch), the second sparser and shorter.
    loaders.load_samples(
        incident,
        None,
        [_block(ts, values), _block(ts[1::7][:700], values[1::7][:700] * 3, name="queued")],
    )
    series = list(Series.objects.filter(incident=incident).order_by("pk"))
    ids = [s.pk for s in series]
    windows = [
        (_aware(T0 + HOUR - 90_000), _aware(T0 + HOUR + 90_000)),  # across the hour
        (_aware(T0 + HOUR), _aware(T0 + HOUR)),  # one sample, on the hour's start
        (_aware(T0 - 5 * HOUR), _aware(T0 - HOUR)),  # before any chunk
        (None, _aware(T0 + 10_500)),
        (_aware(T0 + 2 * HOUR - 1500), None),
        (None, None),
    ]

    def same_as_the_query(window, repeat: int = 1) -> None:
        plain = reader.samples_read(ids, *window)
        for _ in range(repeat):
            got = reader.samples_window(series, *window)
            assert got.keys() == plain.keys(), window
            for k in plain:
                assert got[k][0].tolist() == plain[k][0].tolist(), window
                assert got[k][1].tolist() == plain[k][1].tolist(), window

    for window in windows:
        same_as_the_query(window, repeat=2)  # decoded, then served from what the process holds
    # Held: no statement at all, on Django's cursors or on the reader's own (binary_rows, the
    # real one, watched).
    statements: list[str] = []
    real = reader.binary_rows
    monkeypatch.setattr(
        reader, "binary_rows", lambda sql, params: statements.append(sql) or real(sql, params)
    )
    with CaptureQueriesContext(connection) as queries:
        reader.samples_window(series, *windows[0])
    assert len(queries) == 0 and statements == [], statements
    # A second load merges a sample into the first hour: its chunk's bytes change and the
    # series' count with them, so the next read asks again and decodes that hour again
    # instead of serving what it held.
    extra = T0 + HOUR - 500
    loaders.load_samples(incident, None, [_block([extra], [42.0])])
    for s in series:
        s.refresh_from_db()
    after = reader.samples_window(series, *windows[0])
    assert extra in after[ids[0]][0].tolist()
    assert after[ids[0]][1][after[ids[0]][0].tolist().index(extra)] == 42.0
    assert statements  # read again
    for window in windows:  # and the same as the query again, everywhere
        same_as_the_query(window)


def test_rollups_held_by_the_process_read_as_the_query_does_and_a_load_is_never_stale(
    incident,
) -> None:
    """reader.rollups_window (whole series' rollups kept in the process, sliced per window)
    answers what rollups_read's query does for every window, and a load into the series (a
    new state) is read again, not served from the old rollups."""
    ts = T0 + np.arange(0, 3 * HOUR, 1000, dtype=np.int64)
    values = np.cos(np.arange(len(ts)) / 50.0) * 100
    loaders.load_samples(incident, None, [_block(ts, values)])
    series = list(Series.objects.filter(incident=incident))
    (sid,) = [s.pk for s in series]
    windows = [
        (None, None),
        (_aware(T0 + 90_500), _aware(T0 + HOUR + 30_250)),  # edge buckets cut
        (_aware(T0 + HOUR), _aware(T0 + 2 * HOUR)),  # on bucket starts
        (_aware(T0 - 5 * HOUR), _aware(T0 - HOUR)),  # before any rollup: no entry
        (_aware(T0 - 30_000), _aware(T0 + 10)),  # reaches one bucket by a few ms
        (_aware(T0 + 2 * HOUR + 59_000), None),
    ]
    for _ in range(2):  # read once, then served from what the process holds
        for window in windows:
            plain = reader.rollups_read([sid], *window)
            held = reader.rollups_window(series, *window)
            assert held.keys() == plain.keys(), window
            if sid in plain:
                assert held[sid][0].tolist() == plain[sid][0].tolist(), window
                assert held[sid][1].tolist() == plain[sid][1].tolist(), window
                assert held[sid][2] == plain[sid][2], window
    assert reader.rollups_window(series, None, None)[sid][2] == len(ts)
    # A spike loaded into the second hour: the series' state changes (as the overlay's Series
    # rows show it after the load), so its rollups are read again.
    spike = T0 + HOUR + 500
    loaders.load_samples(incident, None, [_block([spike], [1e6])])
    series = list(Series.objects.filter(incident=incident))
    window = (_aware(T0 + HOUR), _aware(T0 + HOUR + 60_000))
    held = reader.rollups_window(series, *window)
    assert 1e6 in held[sid][1].tolist()
    assert held[sid][2] == reader.rollups_read([sid], *window)[sid][2]
    # A series without rollups (samples written around the writer) is left out: read raw.
    SampleRollup.objects.filter(series_id=sid).delete()
    Series.objects.filter(pk=sid).update(sample_count=len(ts) + 2)
    assert reader.rollups_window(list(Series.objects.filter(incident=incident)), None, None) == {}


def test_a_long_series_rollups_are_read_per_window_not_held_whole(incident) -> None:
    """A series spanning more than ROLLUP_HELD_SPAN is read per window (a zoom into a month
    does not read the month), with the same answer as the query."""
    reader.rollups_forget()
    day = 24 * HOUR
    ts = np.concatenate([T0 + np.arange(0, HOUR, 5000), T0 + 5 * day + np.arange(0, HOUR, 5000)])
    loaders.load_samples(incident, None, [_block(ts, np.arange(len(ts)) % 7)])
    series = list(Series.objects.filter(incident=incident))
    (sid,) = [s.pk for s in series]
    window = (_aware(T0 + 5 * day), _aware(T0 + 5 * day + HOUR // 2))
    held = reader.rollups_window(series, *window)
    plain = reader.rollups_read([sid], *window)
    assert held[sid][0].tolist() == plain[sid][0].tolist()
    assert held[sid][2] == plain[sid][2] == 31 * 12  # the buckets from a minute before
    assert not reader._rollups  # nothing held whole
