"""Symptoms (dropped requests, wedges, harness failures) and the load the server carried.

Series work is done in numpy: each relevant series is converted once to int64 millisecond
timestamps and float values; everything after that is vectorised. Series that are not needed
(queue length, histograms, ...) are never converted.

Combining several series of one metric (labels, TP ranks, a ``source=server_log`` copy): samples
are bucketed by whole second, each series contributes its last value in a bucket, and the
series present in a bucket are combined -- running requests by max, generation throughput by
sum, GPU utilisation by mean. Bucketing absorbs the few milliseconds between the per-rank or
per-GPU samples of one scrape. Different metrics are then aligned as-of: at each running-requests
sample, the latest throughput (or utilisation) sample no older than :data:`LOOKBACK` applies.
"""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from evidence.vocabulary import SymptomKind, harness_failed
from timeline.correlation.config_state import fmt_duration
from timeline.correlation.types import (
    Floats,
    HarnessRun,
    HarnessRuns,
    LogSpan,
    Params,
    Request,
    Requests,
    Series,
    Symptom,
    Times,
    datetimes_of_us,
    strings_at,
)

UTC = dt.UTC

RUNNING = "sglang:num_running_reqs"
THROUGHPUT = "sglang:gen_throughput"
GPU_UTIL = ("DCGM_FI_DEV_GPU_UTIL", "nvidia_smi_utilization_gpu")


# Prometheus' own staleness horizon: a sample older than this says nothing about "now".
LOOKBACK = dt.timedelta(minutes=5)
_LOOKBACK_MS = int(LOOKBACK.total_seconds() * 1000)
_BUCKET_MS = 1000

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]


def to_ms(t: dt.datetime) -> int:
    """Milliseconds since the epoch of an aware datetime."""
    return round(t.timestamp() * 1000)


def from_ms(ms: int) -> dt.datetime:
    """The aware UTC datetime of a millisecond epoch."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=UTC)


def _times_ms(times: Sequence[dt.datetime]) -> I64:
    seconds = np.fromiter(map(dt.datetime.timestamp, times), dtype=np.float64, count=len(times))
    return np.rint(seconds * 1000.0).astype(np.int64)


def _ms_of_us(us: I64) -> F64:
    """``t.timestamp() * 1000`` of each microsecond epoch, the same float operations (the
    int64 -> float64 conversion is exact below 2**53 us, some 285 years)."""
    ms: F64 = (us / 1e6) * 1000.0
    return ms


def _rint_ms_of_us(us: I64) -> I64:
    """:func:`_times_ms` of each microsecond epoch, without the datetimes."""
    return np.rint(_ms_of_us(us)).astype(np.int64)


# --- metrics ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Combined:
    """Several series of one metric combined into one: per-second timestamps and values."""

    ts_ms: I64
    values: F64
    series_count: int

    def asof(self, grid_ms: I64) -> tuple[F64, NDArray[np.bool_]]:
        """The value in force at each grid time, and whether it is fresh (within LOOKBACK)."""
        idx = np.searchsorted(self.ts_ms, grid_ms, side="right") - 1
        ok = idx >= 0
        idx = np.maximum(idx, 0)
        values = self.values[idx] if self.ts_ms.size else np.zeros(grid_ms.shape)
        if self.ts_ms.size:
            ok &= (grid_ms - self.ts_ms[idx]) <= _LOOKBACK_MS
        else:
            ok &= False
        return values, ok


@dataclass(frozen=True)
class Metrics:
    """The series the engine reads, combined; None where no such series was given."""

    running: Combined | None
    throughput: Combined | None
    gpu_util: Combined | None
    names: frozenset[str]
    first_ms: int | None
    last_ms: int | None


def _reduce_mean(values: F64, starts: I64) -> F64:
    counts = np.diff(np.append(starts, values.size))
    result: F64 = np.add.reduceat(values, starts) / counts
    return result


_REDUCERS: dict[str, Callable[[F64, I64], F64]] = {
    "max": lambda v, s: np.maximum.reduceat(v, s),
    "sum": lambda v, s: np.add.reduceat(v, s),
    "mean": _reduce_mean,
}


def _combine(parts: list[tuple[I64, F64]], how: str) -> Combined | None:
    if not parts:
        return None
    ts = np.concatenate([p[0] for p in parts])
    values = np.concatenate([p[1] for p in parts])
    sid = np.concatenate([np.full(p[0].size, i, dtype=np.int64) for i, p in enumerate(parts)])
    finite = np.isfinite(values)
    if not finite.all():
        ts, values, sid = ts[finite], values[finite], sid[finite]
    if ts.size == 0:
        return Combined(ts, values, len(parts))
    bucket = ts // _BUCKET_MS
    # Stable sort of already-sorted runs: within a bucket, entries stay grouped by series
    # and in time order, so "last value of a series in a bucket" is a neighbour test. The
    # offsets from the first bucket fit in 32 bits for 68 years: half the bytes to sort.
    span = int(bucket.max() - bucket.min()) if bucket.size else 0
    key = (bucket - bucket.min()).astype(np.int32) if span < 2**31 else bucket
    order = np.argsort(key, kind="stable")
    bucket, values, sid = bucket[order], values[order], sid[order]
    last = np.ones(bucket.size, dtype=bool)
    last[:-1] = (bucket[1:] != bucket[:-1]) | (sid[1:] != sid[:-1])
    bucket, values = bucket[last], values[last]
    starts = np.flatnonzero(np.concatenate(([True], bucket[1:] != bucket[:-1]))).astype(np.int64)
    combined = _REDUCERS[how](values, starts).astype(np.float64)
    return Combined(bucket[starts] * _BUCKET_MS, combined, len(parts))


class _TimesCache:
    """Converted timestamp tuples, so that equal ones are converted once.

    The series of one scrape, or of one ``query_range`` answer, share their timestamps. Comparing
    two equal tuples of datetimes costs a small fraction of converting one, so a candidate with
    the same length, first and last time is compared in full and reused when equal.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[int, dt.datetime, dt.datetime], list[tuple[object, I64]]] = {}

    def get(self, times: Sequence[dt.datetime]) -> I64:
        if not times:
            return np.zeros(0, dtype=np.int64)
        candidates = self._seen.setdefault((len(times), times[0], times[-1]), [])
        for seen, converted in candidates:
            if seen is times or seen == times:
                return converted
        converted = _times_ms(times)
        candidates.append((times, converted))
        return converted


def prepare_metrics(series: Sequence[Series]) -> Metrics:
    """Convert and combine the series the engine needs (running, throughput, GPU utilisation)."""
    wanted: dict[str, list[tuple[I64, F64]]] = {"running": [], "throughput": [], "util": []}
    converted = _TimesCache()
    first: int | None = None
    last: int | None = None
    for s in series:
        if s.ts:
            if isinstance(s.ts, Times):
                lo, hi = int(s.ts.ms[0]), int(s.ts.ms[-1])
            else:
                lo, hi = to_ms(s.ts[0]), to_ms(s.ts[-1])
            first = lo if first is None else min(first, lo)
            last = hi if last is None else max(last, hi)
        if s.name == RUNNING:
            group = "running"
        elif s.name == THROUGHPUT:
            group = "throughput"
        elif s.name in GPU_UTIL:
            group = "util"
        else:
            continue
        ts = s.ts.ms if isinstance(s.ts, Times) else converted.get(s.ts)
        if isinstance(s.values, Floats):
            values = s.values.array
        else:
            values = np.fromiter(s.values, dtype=np.float64, count=len(s.values))
        n = min(ts.size, values.size)
        wanted[group].append((ts[:n], values[:n]))
    return Metrics(
        running=_combine(wanted["running"], "max"),
        throughput=_combine(wanted["throughput"], "sum"),
        gpu_util=_combine(wanted["util"], "mean"),
        names=frozenset(s.name for s in series),
        first_ms=first,
        last_ms=last,
    )


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def find_wedges(metrics: Metrics, params: Params) -> list[Symptom]:
    """Stretches where requests were running but generation had stopped.

    A sample is wedged when running requests > 0 and throughput <= ``wedge_throughput_max``;
    where no fresh throughput sample exists, GPU utilisation <= ``wedge_gpu_util_max`` decides.
    Consecutive wedged samples (no healthy sample and no gap over LOOKBACK between them) form
    one stretch; stretches of at least ``wedge_min_duration`` (first to last wedged sample) are
    symptoms.
    """
    running = metrics.running
    if running is None or running.ts_ms.size == 0:
        return []
    grid = running.ts_ms
    stopped = np.zeros(grid.size, dtype=bool)
    by_throughput = np.zeros(grid.size, dtype=bool)
    thr = np.zeros(grid.size)
    util = np.zeros(grid.size)
    if metrics.throughput is not None:
        thr, fresh = metrics.throughput.asof(grid)
        by_throughput = fresh
        stopped |= fresh & (thr <= params.wedge_throughput_max)
    by_util = np.zeros(grid.size, dtype=bool)
    if metrics.gpu_util is not None:
        util, fresh = metrics.gpu_util.asof(grid)
        by_util = fresh & ~by_throughput
        stopped |= by_util & (util <= params.wedge_gpu_util_max)
    wedged = np.flatnonzero((running.values > 0) & stopped)
    if wedged.size == 0:
        return []
    breaks = (np.diff(wedged) != 1) | (np.diff(grid[wedged]) > _LOOKBACK_MS)
    firsts = np.concatenate(([0], np.flatnonzero(breaks) + 1))
    lasts = np.concatenate((np.flatnonzero(breaks), [wedged.size - 1]))
    min_ms = params.wedge_min_duration.total_seconds() * 1000
    symptoms: list[Symptom] = []
    for a, b in zip(wedged[firsts], wedged[lasts], strict=True):
        if grid[b] - grid[a] < min_ms:
            continue
        sl = slice(int(a), int(b) + 1)
        start, end = from_ms(int(grid[a])), from_ms(int(grid[b]))
        what = [f"up to {_num(float(running.values[sl].max()))} requests running"]
        if by_throughput[sl].any():
            peak = float(thr[sl][by_throughput[sl]].max())
            what.append(f"generation throughput at most {peak:.2f} tok/s")
        if by_util[sl].any():
            peak = float(util[sl][by_util[sl]].max())
            what.append(f"GPU utilisation at most {peak:.1f}%")
        title = f"wedge for {fmt_duration(end - start)}: " + ", ".join(what)
        symptoms.append(Symptom(SymptomKind.WEDGE, start, end, title))
    return symptoms


# --- requests -------------------------------------------------------------------------------------


def merge_spans(spans: Sequence[LogSpan]) -> tuple[I64, I64]:
    """The union of log spans as sorted, disjoint [start, end] millisecond arrays."""
    if not spans:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy()
    pairs = sorted((to_ms(s.start), to_ms(s.end)) for s in spans)
    starts: list[int] = []
    ends: list[int] = []
    for lo, hi in pairs:
        if starts and lo <= ends[-1]:
            ends[-1] = max(ends[-1], hi)
        else:
            starts.append(lo)
            ends.append(hi)
    return np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)


def _covered(span_starts: I64, span_ends: I64, t_ms: I64) -> NDArray[np.bool_]:
    if span_starts.size == 0:
        return np.zeros(t_ms.shape, dtype=bool)
    idx = np.searchsorted(span_starts, t_ms, side="right") - 1
    ok = idx >= 0
    covered: NDArray[np.bool_] = ok & (t_ms <= span_ends[np.maximum(idx, 0)])
    return covered


@dataclass(frozen=True)
class RequestVerdict:
    """What the requests show: dropped (never finished, or late) and those of unknown fate."""

    dropped: list[Symptom]
    unknown: Sequence[Request]  # Requests (columns)


def find_dropped_requests(
    requests: Sequence[Request],
    log_spans: Sequence[LogSpan],
    timeout: dt.timedelta,
    server_of: Mapping[int, int] | None = None,
) -> RequestVerdict:
    """Requests received and not finished within ``timeout`` while the server kept logging.

    A request that finished after the timeout is dropped too (late). One never finished whose
    deadline (received + timeout) no log span covers is of unknown fate, not dropped: the log
    may simply have ended. With ``server_of`` (log -> server), a request counts as covered only
    by the logs of its own server: another server logging on says nothing of it (a copy of
    node-b's log taken while a request ran, node-a's log going on).
    """
    if not requests:
        return RequestVerdict([], ())
    table = Requests.of(requests)
    received = _rint_ms_of_us(table.received_us)
    done = table.finished
    finished = np.where(done, _ms_of_us(table.finished_us), np.nan)
    timeout_ms = timeout.total_seconds() * 1000
    deadline = received + np.int64(round(timeout_ms))
    never = ~done
    late = done & (finished > deadline)
    covered = _covered_by_own_server(table, log_spans, deadline, server_of)
    dropped: list[Symptom] = []
    limit = fmt_duration(timeout)
    kind = SymptomKind.DROPPED_REQUEST
    picked = np.flatnonzero(late | (never & covered))
    rids = strings_at(table.rid, picked)
    at = datetimes_of_us(table.received_us[picked])
    is_late = late[picked].tolist()
    ends = datetimes_of_us(np.where(done[picked], table.finished_us[picked], 0))
    for rid, ref, received_at, finished_at, was_late in zip(
        rids, table.ref[picked].tolist(), at, ends, is_late, strict=True
    ):
        if was_late:
            title = (
                f"request {rid} finished late, {fmt_duration(finished_at - received_at)}"
                f" after it was received (timeout {limit})"
            )
            dropped.append(Symptom.fast(kind, received_at, finished_at, title, (ref,)))
        else:
            title = (
                f"request {rid} never finished: the server kept logging past its {limit} timeout"
            )
            dropped.append(Symptom.fast(kind, received_at, None, title, (ref,)))
    return RequestVerdict(dropped, table.take(np.flatnonzero(never & ~covered)))


def _covered_by_own_server(
    table: Requests,
    log_spans: Sequence[LogSpan],
    deadline: NDArray[np.int64],
    server_of: Mapping[int, int] | None,
) -> NDArray[np.bool_]:
    """Whether a log span of the request's own server covers its deadline (any span, for a
    request of no known log or without ``server_of``)."""
    span_starts, span_ends = merge_spans(log_spans)
    if not server_of or len(set(server_of.values())) < 2 or not table.source.any():
        return _covered(span_starts, span_ends, deadline)
    sources, inverse = np.unique(table.source, return_inverse=True)
    keys = np.array([server_of.get(int(src), -1) for src in sources.tolist()], dtype=np.int64)
    keys = keys[inverse]
    covered = np.zeros(deadline.size, dtype=bool)
    unknown = keys == -1
    if unknown.any():
        covered[unknown] = _covered(span_starts, span_ends, deadline[unknown])
    for k in np.unique(keys[~unknown]).tolist():
        mine = keys == k
        own = [sp for sp in log_spans if server_of.get(sp.source) == k]
        starts_k, ends_k = merge_spans(own)
        covered[mine] = _covered(starts_k, ends_k, deadline[mine])
    return covered


# --- harness --------------------------------------------------------------------------------------


def status_is(runs: HarnessRuns, wanted: Callable[[str], bool]) -> NDArray[np.bool_]:
    """Which runs have a status ``wanted`` accepts (asked once per distinct status)."""
    status = np.array(runs.status, dtype=object)
    mask = np.zeros(status.size, dtype=bool)
    for value in set(runs.status):
        if wanted(value):
            mask |= status == value
    return mask


def failed_runs(runs: HarnessRuns) -> NDArray[np.bool_]:
    """Which runs failed or errored (:func:`harness_failed`)."""
    return status_is(runs, harness_failed)


def find_harness_failures(runs: Sequence[HarnessRun]) -> list[Symptom]:
    """Every harness run with status fail or error."""
    table = HarnessRuns.of(runs)
    failed = (table.row(i) for i in np.flatnonzero(failed_runs(table)).tolist())
    return [
        Symptom(
            SymptomKind.HARNESS_FAILURE,
            run.at,
            None,
            f"harness {run.suite}/{run.case} {run.status}"
            + ("" if run.score is None else f" (score {run.score:g})"),
            (run.ref,),
        )
        for run in failed
    ]


_SYMPTOM_ORDER = operator.attrgetter("at", "kind", "title")


def sort_symptoms(symptoms: Sequence[Symptom]) -> list[Symptom]:
    """Symptoms in time order (then kind and title, for a stable order)."""
    return sorted(symptoms, key=_SYMPTOM_ORDER)


# --- load -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """When the server carried load, as sorted disjoint millisecond intervals.

    ``source`` says where it was read from ("metrics" or "server log requests").
    """

    starts: I64
    ends: I64
    source: str

    @cached_property
    def _cumulative(self) -> I64:
        lengths = self.ends - self.starts
        cumulative: I64 = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        return cumulative

    def _loaded_before(self, t_ms: int, cumulative: I64) -> int:
        k = int(np.searchsorted(self.starts, t_ms, side="right"))
        if k == 0:
            return 0
        partial = min(int(self.ends[k - 1]), t_ms) - int(self.starts[k - 1])
        return int(cumulative[k - 1]) + max(partial, 0)

    def loaded(self, a: dt.datetime, b: dt.datetime) -> dt.timedelta:
        """How long the server carried load between ``a`` and ``b``."""
        if b <= a or self.starts.size == 0:
            return dt.timedelta(0)
        cumulative = self._cumulative
        ms = self._loaded_before(to_ms(b), cumulative) - self._loaded_before(to_ms(a), cumulative)
        return dt.timedelta(milliseconds=ms)


def load_from_metrics(metrics: Metrics) -> Load | None:
    """Load = running requests > 0, each such sample counting until the next (at most LOOKBACK)."""
    running = metrics.running
    if running is None or running.ts_ms.size == 0:
        return None
    ts = running.ts_ms
    ends = np.append(np.minimum(ts[1:], ts[:-1] + _LOOKBACK_MS), ts[-1])
    busy = running.values > 0
    return Load(ts[busy], ends[busy], "metrics")


def load_from_requests(requests: Sequence[Request]) -> Load | None:
    """Load = some request in flight, bridging quiet gaps shorter than LOOKBACK."""
    if not requests:
        return None
    table = Requests.of(requests)
    starts = _rint_ms_of_us(table.received_us)
    ends = _rint_ms_of_us(np.where(table.finished, table.finished_us, table.received_us))
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum(ends[order], starts[order])
    reach = np.maximum.accumulate(ends)
    new_group = np.concatenate(([True], starts[1:] > reach[:-1] + _LOOKBACK_MS))
    firsts = np.flatnonzero(new_group)
    lasts = np.append(firsts[1:] - 1, starts.size - 1)
    return Load(starts[firsts], reach[lasts], "server log requests")
