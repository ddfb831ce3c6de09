"""The downsampler the timeline uses: the compiled MinMaxLTTB called directly gives what
tsdownsample's public API gives, and keeps the spikes."""

from __future__ import annotations

import numpy as np
import pytest
from tsdownsample import MinMaxLTTBDownsampler

from timeline import selectors


def test_the_compiled_function_is_found() -> None:
    # tsdownsample 0.1.5 has it; a version without it falls back to the public API, and this
    # test says so instead of the page silently getting slower.
    assert selectors._MINMAX_LTTB is not None


@pytest.mark.parametrize("n", [1_501, 1_800, 3_600, 86_400])
def test_same_indices_as_the_public_api(n: int) -> None:
    rng = np.random.default_rng(n)
    ts = np.cumsum(rng.integers(900, 1100, n)).astype(np.int64)
    values = rng.normal(0, 1, n)
    values[n // 3] = 50.0  # a spike
    values[n // 2] = -50.0  # a dip
    ours = selectors.minmax_lttb(ts, values, 1500)
    theirs = MinMaxLTTBDownsampler().downsample(ts, values, n_out=1500)
    assert np.array_equal(ours, theirs)
    assert len(ours) == 1500
    assert n // 3 in ours and n // 2 in ours


def test_other_dtypes_take_the_public_api() -> None:
    ts = np.arange(2_000, dtype=np.int32)
    values = np.sin(np.arange(2_000) / 50).astype(np.float32)
    got = selectors.minmax_lttb(ts, values, 500)
    assert np.array_equal(got, MinMaxLTTBDownsampler().downsample(ts, values, n_out=500))
