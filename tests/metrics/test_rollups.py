"""Per-minute rollups: written at ingest, merged on overlap, serving big windows."""

from __future__ import annotations

import datetime as dt
from array import array

import numpy as np
import pytest
from django.db import connection

from ingest import loaders
from ingest.parsers.types import SampleBlock, SeriesKey
from timeline import selectors
from timeline.metrics import rollups
from timeline.models import SampleRollup, Series

T0 = 1_795_190_400_000  # 2026-11-20T08:00:00Z in ms


def _block(ts_ms: np.ndarray, values: np.ndarray) -> SampleBlock:
    return SampleBlock(
        key=SeriesKey("sglang:gen_throughput", (("tp_rank", "0"),)),
        ts_ms=array("q", ts_ms.tolist()),
        values=array("d", values.tolist()),
    )


def test_rollup_keeps_min_and_max_with_their_times_and_ignores_nan() -> None:
    ts = T0 + np.arange(0, 180_000, 1000, dtype=np.int64)  # three minutes at 1 s
    values = np.full(len(ts), 50.0)
    values[10], values[70] = 900.0, 0.0  # a spike in minute 0, a dip in minute 1
    values[120:] = np.nan  # minute 2: no number at all
    r = rollups.rollup(ts, values)
    assert r["bucket"].tolist() == [T0, T0 + 60_000, T0 + 120_000]
    assert r["v_max"][0] == 900.0 and r["t_max"][0] == ts[10]
    assert r["v_min"][1] == 0.0 and r["t_min"][1] == ts[70]
    assert np.isnan(r["v_min"][2]) and r["t_min"][2] == ts[120]
    assert r["n"].tolist() == [60, 60, 60]


@pytest.fixture
def big_series(incident) -> Series:
    ts = T0 + np.arange(0, 100_000_000, 1000, dtype=np.int64)  # 100,000 samples at 1 s
    values = 1000 + 10 * np.sin(np.arange(len(ts)) / 600)
    values[54_321] = 5000.0  # one spike that a whole-range view must still show
    loaders.load_samples(incident, None, [_block(ts, values)])
    return Series.objects.get(incident=incident)


def test_a_big_window_reads_the_rollups_and_keeps_the_spike(big_series) -> None:
    assert SampleRollup.objects.filter(series=big_series).count() == 1667
    [points] = selectors.series_downsampled([big_series], None, None)
    assert points.total == 100_000
    assert len(points.ts) <= selectors.MAX_POINTS_PER_TRACE
    assert points.values.max() == 5000.0
    assert int(points.ts[points.values.argmax()]) == T0 + 54_321_000


def test_a_zoomed_window_that_fits_reads_every_sample(big_series) -> None:
    start = dt.datetime.fromtimestamp((T0 + 54_000_000) / 1000, tz=dt.UTC)
    end = start + dt.timedelta(minutes=10)
    [points] = selectors.series_downsampled([big_series], start, end)
    assert points.total == len(points.ts) == 601
    assert points.values.max() == 5000.0


def test_overlapping_loads_merge_their_rollups(incident) -> None:
    ts = T0 + np.arange(0, 120_000, 1000, dtype=np.int64)
    loaders.load_samples(incident, None, [_block(ts[:90], np.full(90, 10.0))])
    later = np.full(60, 10.0)
    later[-1] = 99.0
    loaders.load_samples(incident, None, [_block(ts[60:], later)])
    rows = list(SampleRollup.objects.order_by("bucket").values_list("v_max", "n"))
    assert rows == [(10.0, 60), (99.0, 60)]


def test_rebuilding_from_the_samples_gives_the_same_rollups(big_series) -> None:
    def snapshot() -> list[tuple]:
        with connection.cursor() as cur:
            cur.execute(
                "SELECT bucket, t_min, v_min, t_max, v_max, n FROM timeline_samplerollup "
                "WHERE series_id = %s ORDER BY bucket",
                [big_series.pk],
            )
            return cur.fetchall()

    written = snapshot()
    rollups.rollups_rebuild([big_series.pk])
    assert snapshot() == written
