import datetime as dt

from tests.correlation.builders import (
    at,
    healthy_metrics,
    minutes,
    request,
    run,
    series,
    span,
    window,
)
from timeline.correlation.symptoms import (
    find_dropped_requests,
    find_harness_failures,
    find_wedges,
    load_from_metrics,
    load_from_requests,
    prepare_metrics,
)
from timeline.correlation.types import Params, Series

TIMEOUT = dt.timedelta(minutes=10)
PARAMS = Params()


# --- dropped requests ---------------------------------------------------------------------------


def test_a_request_never_finished_while_the_server_kept_logging_is_dropped():
    r = request("9f2c", at(23, 39, 58), None)

    verdict = find_dropped_requests([r], [span(at(20), at(23, 59))], TIMEOUT)

    assert [(s.kind, s.at, s.ends_at, s.refs) for s in verdict.dropped] == [
        ("dropped_request", at(23, 39, 58), None, (r.ref,))
    ]
    assert "9f2c" in verdict.dropped[0].title
    assert verdict.unknown == []


def test_a_request_received_within_the_timeout_of_the_log_end_is_unknown_not_dropped():
    r = request("tail", at(23, 55), None)

    verdict = find_dropped_requests([r], [span(at(20), at(23, 59))], TIMEOUT)

    assert verdict.dropped == []
    assert verdict.unknown == [r]


def test_a_request_finished_after_the_timeout_is_dropped_as_late():
    r = request("slow", at(12), at(12, 14))

    verdict = find_dropped_requests([r], [span(at(11), at(13))], TIMEOUT)

    assert [(s.at, s.ends_at) for s in verdict.dropped] == [(at(12), at(12, 14))]
    assert "late" in verdict.dropped[0].title
    assert "14 min" in verdict.dropped[0].title


def test_a_request_finished_within_the_timeout_is_not_a_symptom():
    r = request("ok", at(12), at(12, 9, 59))

    verdict = find_dropped_requests([r], [span(at(11), at(13))], TIMEOUT)

    assert verdict.dropped == [] and verdict.unknown == []


def test_an_unfinished_request_whose_deadline_falls_in_a_log_gap_is_unknown():
    r = request("gap", at(12), None)
    spans = [span(at(11), at(12, 5)), span(at(12, 20), at(14))]

    verdict = find_dropped_requests([r], spans, TIMEOUT)

    assert verdict.unknown == [r]


def test_dropped_requests_close_together_are_reported_individually_with_their_refs():
    rs = [request("a", at(15, 39, 58), None), request("b", at(15, 40, 3), None)]

    verdict = find_dropped_requests(rs, [span(at(15), at(17))], TIMEOUT)

    assert [s.refs for s in verdict.dropped] == [(rs[0].ref,), (rs[1].ref,)]


# --- wedges -------------------------------------------------------------------------------------


def _wedges(*given: Series, params: Params = PARAMS):
    return find_wedges(prepare_metrics(given), params)


def test_running_requests_with_zero_throughput_for_long_enough_are_one_wedge():
    found = _wedges(*healthy_metrics(at(15), at(17), wedges=((at(15, 40), at(16, 10)),)))

    assert [(s.kind, s.at, s.ends_at) for s in found] == [("wedge", at(15, 40), at(16, 9))]
    assert "2 requests running" in found[0].title
    assert "0.00 tok/s" in found[0].title


def test_a_stall_shorter_than_the_minimum_duration_is_not_a_wedge():
    # two stalled one-minute samples span 1 minute, less than the 2-minute minimum
    found = _wedges(*healthy_metrics(at(15), at(17), wedges=((at(15, 40), at(15, 42)),)))

    assert found == []


def test_a_stall_of_exactly_the_minimum_duration_is_a_wedge():
    found = _wedges(*healthy_metrics(at(15), at(17), wedges=((at(15, 40), at(15, 43)),)))

    assert [(s.at, s.ends_at) for s in found] == [(at(15, 40), at(15, 42))]


def test_zero_throughput_with_no_running_requests_is_idle_not_a_wedge():
    times = minutes(at(15), at(16))
    found = _wedges(
        series("sglang:num_running_reqs", times, lambda t: 0.0),
        series("sglang:gen_throughput", times, lambda t: 0.0),
    )

    assert found == []


def test_throughput_just_above_the_threshold_is_not_a_wedge_and_at_it_is():
    times = minutes(at(15), at(16))
    running = series("sglang:num_running_reqs", times, lambda t: 2.0)

    above = _wedges(running, series("sglang:gen_throughput", times, lambda t: 1.01))
    at_max = _wedges(running, series("sglang:gen_throughput", times, lambda t: 1.0))

    assert above == []
    assert len(at_max) == 1


def test_throughput_is_summed_across_ranks_before_the_threshold():
    times = minutes(at(15), at(16))
    running = series("sglang:num_running_reqs", times, lambda t: 2.0)
    # each rank alone is below 1.0 tok/s; together they are generating
    rank0 = series("sglang:gen_throughput", times, lambda t: 0.6, tp_rank="0")
    rank1 = series("sglang:gen_throughput", times, lambda t: 0.6, tp_rank="1")

    assert _wedges(running, rank0, rank1) == []
    assert len(_wedges(running, rank0)) == 1


def test_running_requests_take_the_max_across_series():
    times = minutes(at(15), at(16))
    idle_rank = series("sglang:num_running_reqs", times, lambda t: 0.0, tp_rank="1")
    busy_log = series("sglang:num_running_reqs", times, lambda t: 2.0, source="server_log")
    stalled = series("sglang:gen_throughput", times, lambda t: 0.0)

    assert len(_wedges(idle_rank, busy_log, stalled)) == 1
    assert _wedges(idle_rank, stalled) == []


def test_gpu_utilisation_is_averaged_across_gpus_when_throughput_is_absent():
    times = minutes(at(15), at(16))
    running = series("sglang:num_running_reqs", times, lambda t: 2.0)
    idle = [series("DCGM_FI_DEV_GPU_UTIL", times, lambda t: 0.0, gpu=str(i)) for i in range(7)]
    mean_five = series("DCGM_FI_DEV_GPU_UTIL", times, lambda t: 40.0, gpu="7")  # mean 5.0
    mean_six = series("DCGM_FI_DEV_GPU_UTIL", times, lambda t: 48.0, gpu="7")  # mean 6.0

    wedged = _wedges(running, *idle, mean_five)
    assert len(wedged) == 1
    assert "GPU utilisation at most 5.0%" in wedged[0].title
    assert _wedges(running, *idle, mean_six) == []


def test_nvidia_smi_utilisation_counts_as_gpu_utilisation():
    times = minutes(at(15), at(16))
    found = _wedges(
        series("sglang:num_running_reqs", times, lambda t: 2.0),
        series("nvidia_smi_utilization_gpu", times, lambda t: 0.0, gpu="0"),
    )

    assert len(found) == 1


def test_gpu_utilisation_does_not_override_a_fresh_throughput_sample():
    times = minutes(at(15), at(16))
    found = _wedges(
        series("sglang:num_running_reqs", times, lambda t: 2.0),
        series("sglang:gen_throughput", times, lambda t: 500.0),
        series("DCGM_FI_DEV_GPU_UTIL", times, lambda t: 0.0, gpu="0"),
    )

    assert found == []


def test_samples_of_one_scrape_a_few_milliseconds_apart_are_combined():
    times = minutes(at(15), at(16))
    jitter = tuple(t + dt.timedelta(milliseconds=7 * g) for t in times for g in (0,))
    running = series("sglang:num_running_reqs", times, lambda t: 2.0)
    # GPU 0 is idle, GPUs 1-3 busy, each sampled a few ms later: the mean is 60%, no wedge
    gpus = [series("DCGM_FI_DEV_GPU_UTIL", jitter, lambda t: 0.0, gpu="0")]
    for g in (1, 2, 3):
        shifted = tuple(t + dt.timedelta(milliseconds=40 * g) for t in times)
        gpus.append(series("DCGM_FI_DEV_GPU_UTIL", shifted, lambda t: 80.0, gpu=str(g)))

    assert _wedges(running, *gpus) == []


def test_a_healthy_sample_splits_two_wedges():
    times = minutes(at(15), at(16))
    stalled = window(at(15, 5), at(15, 30), 0.0, 900.0)
    thr = series(
        "sglang:gen_throughput",
        times,
        lambda t: 900.0 if t == at(15, 15) else stalled(t),
    )

    found = _wedges(series("sglang:num_running_reqs", times, lambda t: 2.0), thr)

    assert [(s.at, s.ends_at) for s in found] == [(at(15, 5), at(15, 14)), (at(15, 16), at(15, 29))]


def test_no_running_requests_series_means_no_wedge_check():
    times = minutes(at(15), at(16))

    assert _wedges(series("sglang:gen_throughput", times, lambda t: 0.0)) == []


# --- harness and load ---------------------------------------------------------------------------


def test_only_failed_and_errored_harness_runs_are_symptoms():
    runs = [
        run(at(8)),
        run(at(9), "fail", 0.41),
        run(at(10), "error", None),
        run(at(11), "skipped"),
    ]

    found = find_harness_failures(runs)

    assert [(s.kind, s.at, s.refs) for s in found] == [
        ("harness_failure", at(9), (runs[1].ref,)),
        ("harness_failure", at(10), (runs[2].ref,)),
    ]
    assert "score 0.41" in found[0].title


def test_load_from_metrics_counts_time_with_running_requests():
    times = minutes(at(8), at(12))
    running = series("sglang:num_running_reqs", times, window(at(9), at(11), 5.0, 0.0))

    load = load_from_metrics(prepare_metrics([running]))

    assert load is not None
    assert load.loaded(at(8), at(12)) == dt.timedelta(hours=2)
    assert load.loaded(at(10), at(10, 30)) == dt.timedelta(minutes=30)
    assert load.loaded(at(11), at(12)) == dt.timedelta(0)


def test_load_from_requests_bridges_short_quiet_gaps_only():
    rs = [
        request("a", at(8), at(8, 2)),
        request("b", at(8, 4), at(8, 6)),  # 2-minute gap: still under load
        request("c", at(9), at(9, 1)),  # 54-minute gap: idle in between
    ]

    load = load_from_requests(rs)

    assert load is not None
    assert load.loaded(at(7), at(10)) == dt.timedelta(minutes=7)
