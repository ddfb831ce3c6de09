"""Golden summaries of the real-world corpus (tests/fixtures/real/, provenance in its README):
each file is recognised by content, parsed, and gives the counts, kinds and key values below.

These files were written by the real tools (make.sh) or pasted by real users in public issues;
when make.sh regenerates them, the numbers that depend on the run change here too."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ingest import sniff
from ingest.parsers.series import mark_origins
from ingest.parsers.types import ParseContext, ParseError, ParseResult

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
# The time given for files that carry none (scrapes, dumps, lm-eval 0.3, nvidia-smi).
AT = dt.datetime(2026, 12, 3, 9, 40, tzinfo=dt.UTC)


def parse(name: str, at: dt.datetime | None = AT) -> ParseResult:
    data = (REAL / name).read_bytes()
    fmt = sniff.sniff_ends(name, data[: sniff.HEAD_BYTES], data[-sniff.HEAD_BYTES :])
    assert fmt is not None, f"{name} not recognised"
    result = fmt.parse(data, ParseContext(name.rsplit("/", 1)[-1], default_time=at))
    assert result.kind == fmt.kind
    return result


def summary(result: ParseResult) -> dict[str, Any]:
    return {
        "kind": result.kind,
        "events": dict(Counter(str(e.kind) for e in result.events)),
        "series": len(result.samples),
        "samples": result.sample_count,
        "warnings": len(result.warnings),
    }


# name -> (kind, events by kind, series, samples, warnings, title of the first event or None)
GOLDEN: dict[str, tuple[str, dict[str, int], int, int, int, str | None]] = {
    "prometheus_self_metrics.prom": ("prometheus_text", {}, 376, 376, 0, None),
    "node_exporter_metrics.prom": ("prometheus_text", {}, 507, 507, 0, None),
    # DCGM_FI_DEV_MEMORY_TEMP 9223372036854775794: DCGM's "not supported", left out and said.
    "dcgm_exporter_readme.prom": ("prometheus_text", {}, 2, 2, 1, None),
    # Every line names its series by labels alone: {__name__="...", ...} value ms.
    "promtool242_tsdb_dump.txt": ("prometheus_text", {}, 4, 300, 0, None),
    # prometheus-client 0.26's OpenMetrics: ':' in family names, '_' in their samples' names.
    "prometheus_client026_openmetrics_colons.txt": ("prometheus_text", {}, 58, 58, 1, None),
    # Five /federate pulls 1 s apart at a 2 s scrape interval: 126 samples came twice.
    "prometheus242_federate_5x_1s.prom": ("prometheus_text", {}, 63, 189, 1, None),
    "query_range_up.json": ("prometheus_query_range", {}, 2, 26, 0, None),
    "query_range_rate_http_requests.json": ("prometheus_query_range", {}, 1, 13, 0, None),
    "nvidia_smi_bpytop26_no_timestamp.csv": ("nvidia_smi_csv", {}, 16, 16, 0, None),
    # A crash's own line heads the dump's title; the program's log line above it is counted.
    "go119_deadlock_stderr.txt": (
        "goroutine_dump",
        {"stack_dump": 1},
        0,
        0,
        1,
        "fatal error: all goroutines are asleep - deadlock! (goroutine dump: 3 goroutines, 1 in "
        "sync.runtime_Semacquire [semacquire])",
    ),
    # `go run` adds "exit status 2" after the stack: a line left out, and said; so are the
    # program's two log lines above the panic.
    "go119_panic_via_go_run.txt": (
        "goroutine_dump",
        {"stack_dump": 1},
        0,
        0,
        2,
        "panic: boom: 50 workers stuck (goroutine dump: 1 goroutine, 1 in main.main [running])",
    ),
    # GOTRACEBACK=crash: each thread's system stack (goroutine 0) ends in a register dump, and
    # after "-----" each thread reports its goroutine again. Its 53 heartbeat log lines above
    # the dump: counted.
    "go119_sigquit_gotraceback_crash.txt": (
        "goroutine_dump",
        {"stack_dump": 1},
        0,
        0,
        1,
        "goroutine dump: 32 goroutines, 7 in main.main.func1 [chan receive]",
    ),
    # The same kind of dump pasted where its tabs became spaces (its "listening" log line
    # above it: counted).
    "go119_sigquit_pasted_spaces.txt": (
        "goroutine_dump",
        {"stack_dump": 1},
        0,
        0,
        1,
        "goroutine dump: 32 goroutines, 7 in main.main.func1 [chan receive]",
    ),
    # 44 headers, one of them "goroutine 0 [idle]": the signal thread's system stack, no goroutine.
    # py-spy dump --subprocesses: five processes between rules, one command line over lines.
    "pyspy043_subprocesses.txt": (
        "pyspy_dump",
        {"stack_dump": 1},
        0,
        0,
        1,
        "py-spy dump of parent_subprocs.py (pid 12129): 5 threads, 0 active",
    ),
    # ... where py-spy failed on a child that is no Python process: its error is said.
    "pyspy043_subprocesses_nonpython_children.txt": (
        "pyspy_dump",
        {"stack_dump": 1},
        0,
        0,
        1,
        "py-spy dump of mixed_children.py (pid 12489): 1 thread, 0 active",
    ),
    "pyspy043_paren_filename.txt": (
        "pyspy_dump",
        {"stack_dump": 1},
        0,
        0,
        0,
        "py-spy dump of report (pid 12525): 1 thread, 0 active",
    ),
    # A Go service's 161 log lines (14 KB), then its SIGQUIT dump: sniffed from the file's end.
    "go119_logs_then_sigquit.txt": (
        "goroutine_dump",
        {"stack_dump": 1},
        0,
        0,
        1,
        "goroutine dump: 10 goroutines, 4 in main.worker [chan receive]",
    ),
    "go_sigquit_goroutines.txt": (
        "goroutine_dump",
        {"stack_dump": 1},
        0,
        0,
        0,
        "goroutine dump: 43 goroutines, 6 in net/http.(*persistConn).roundTrip [select]",
    ),
    "go_pprof_goroutine_debug2.txt": (
        "goroutine_dump",
        {"stack_dump": 1},
        0,
        0,
        0,
        "goroutine dump: 39 goroutines, 7 in net.(*netFD).Read [IO wait]",
    ),
    "go_pprof_goroutine_debug1.txt": (
        "goroutine_dump",
        {"stack_dump": 1},
        0,
        0,
        0,
        "goroutine profile: 39 goroutines, 6 in main.main.func1",
    ),
    "pyspy_dump.txt": (
        "pyspy_dump",
        {"stack_dump": 1},
        0,
        0,
        0,
        "py-spy dump of threads.py (pid 22751): 7 threads, 1 active",
    ),
    "pyspy_dump.json": (
        "pyspy_dump",
        {"stack_dump": 1},
        0,
        0,
        0,
        "py-spy dump of process (pid 22751): 7 threads, 1 active",
    ),
    "lm_eval_0.4_dummy_results.json": (
        "lm_eval_json",
        {"harness_run": 1},
        0,
        0,
        0,
        "lm-eval tiny_local_mc scored: acc,none 0.25",
    ),
    "lm_eval_0.3_hellaswag_results.json": (
        "lm_eval_json",
        {"harness_run": 1},
        0,
        0,
        0,
        "lm-eval hellaswag scored: acc 0.4014",
    ),
    # lm-eval 0.3 results with no standard error (perplexity-only, em/f1): recognised by
    # their shape, whatever the file is called.
    "lm_eval_0.3_wikitext_v1_no_stderr.json": (
        "lm_eval_json",
        {"harness_run": 1},
        0,
        0,
        0,
        "lm-eval wikitext scored: bits_per_byte 3.203e-05 (lower is better)",
    ),
    "lm_eval_0.3_mc_taco_v0_em_f1.json": (
        "lm_eval_json",
        {"harness_run": 1},
        0,
        0,
        0,
        "lm-eval mc_taco scored: em 0.07733",
    ),
    "pytest_xunit1.xml": ("junit_xml", {"harness_run": 4}, 0, 0, 0, "pytest: test_passes pass"),
    "pytest_xunit2.xml": ("junit_xml", {"harness_run": 4}, 0, 0, 0, "pytest: test_passes pass"),
    "sglang/pr22331_decode_batch_comma.log": ("sglang_log", {"log_span": 1}, 4, 32, 0, None),
    "sglang/pr22166_prefill_and_decode_same_second.log": (
        "sglang_log",
        {"log_span": 1},
        7,
        10,
        1,
        None,
    ),
    "sglang/shipped_cloud_logging.log": ("sglang_log", {"log_span": 1}, 7, 10, 1, None),
    "sglang/shipped_kubectl_timestamps.log": ("sglang_log", {"log_span": 1}, 7, 10, 1, None),
    "sglang/shipped_tab_export.tsv": ("sglang_log", {"log_span": 1}, 7, 10, 1, None),
    "sglang/pr30047_hybrid_full_token_mamba_usage.log": (
        "sglang_log",
        {"log_span": 1},
        4,
        20,
        0,
        None,
    ),
    "sglang/pr10622_dp_tp_ep_ranks.log": ("sglang_log", {"log_span": 1}, 16, 16, 0, None),
    # DeepSeek-V4 (SWA): full and swa token usage, accept len and rate; the first line glued
    # to a paste's file reference, read from its [time] on (a warning).
    "sglang/issue36081_dsv4_swa_glued_prefix.log": ("sglang_log", {"log_span": 1}, 11, 19, 1, None),
    # A progress bar's redraw glued before a Prefill batch [time]; columns cut by the terminal.
    # PD with Mooncake, quoted with "> ": Mooncake's glog ERROR line is a server error.
    "sglang/pr4880_mooncake_glog_quoted.log": (
        "sglang_log",
        {"log_error": 1, "server_start": 1, "log_span": 1},
        3,
        3,
        0,
        "E0414 03:56:41.856248 77969 transfer_metadata_plugin.cpp:173] Unexpected code in http "
        "response, GET http://10.6.131.5:89",
    ),
    # SGLang router logs (Rust): the gRPC workers it cannot reach, as ERROR lines (the second
    # worker's line folded into the first's, numbers aside); the first router's WARN lines.
    "sglang/pr11310_router_grpc_health_errors.log": (
        "sglang_router_log",
        {"log_error": 1, "log_span": 1},
        0,
        0,
        0,
        "router ERROR: Failed to connect gRPC client for worker grpc://localhost:20000: transport "
        "error",
    ),
    "sglang/issue4562_first_router_removed_worker.log": (
        "sglang_router_log",
        {"log_error": 2, "log_span": 1},
        0,
        0,
        0,
        "router WARN: Generate request to http://localhost:8001 failed (attempt 1/3)",
    ),
    # Its first line opens with the paste's backtick: read from its time on (a warning).
    "sglang/issue12621_router_startup.log": ("sglang_router_log", {"log_span": 1}, 0, 0, 1, None),
    "sglang/tokenspeed365_smg_prefixed.log": ("sglang_router_log", {"log_span": 1}, 0, 0, 0, None),
    "sglang/pr25960_tqdm_glued_clipped.log": ("sglang_log", {"log_span": 1}, 1, 1, 2, None),
    "sglang/issue18785_tp0_ep0_prefill.log": ("sglang_log", {"log_span": 1}, 3, 3, 0, None),
    "sglang/sglang_jax_pr564_decode_same_second.log": (
        "sglang_log",
        {"log_span": 1},
        4,
        4,
        1,
        None,
    ),
    "sglang/issue3713_scheduler_exception.log": (
        "sglang_log",
        {"log_error": 1, "log_span": 1},
        0,
        0,
        0,
        "Scheduler hit an exception: RuntimeError: CUDA error: an illegal memory access was "
        "encountered",
    ),
    "sglang/verl705_ray_actor_scheduler_exception.log": (
        "sglang_log",
        {"log_error": 1, "log_span": 1},
        0,
        0,
        0,
        # the excerpt ends before the exception line: the announcing line titles it
        "Scheduler hit an exception: Traceback (most recent call last):",
    ),
    "sglang/verl1611_ray_actor_cuda_error.log": (
        "sglang_log",
        {"log_error": 1, "log_span": 1},
        0,
        0,
        0,
        "Received sigquit from a child process. It usually means the child failed.",
    ),
    # Server starts (issue 13): two launches that each went down on a scheduler exception and
    # the child's SIGQUIT (8 TP ranks each), an OOM at start-up, a start that came up ready, a
    # watchdog timeout. Errors come first, then the starts.
    "sglang/glm5_rocm_two_launches_sigquit.log": (
        "sglang_log",
        {"log_error": 4, "server_start": 2, "log_span": 1},
        0,
        0,
        0,
        "Scheduler hit an exception: TypeError: cannot unpack non-iterable ForwardMetadata object",
    ),
    "sglang/glm5_rocm_hip_oom.log": (
        "sglang_log",
        {"log_error": 2, "server_start": 1, "log_span": 1},
        0,
        0,
        0,
        # titles are cut at 120 characters
        "Scheduler hit an exception: torch.OutOfMemoryError: HIP out of memory. Tried to allocate "
        "12.00 GiB. GPU 3 has a total ca",
    ),
    "sglang/llms_in_clouds_qwq32b_start_ready.log": (
        "sglang_log",
        {"server_start": 1, "log_span": 1},
        3,
        3,
        0,
        "Server start (pid 3207): 107 args",
    ),
    "sglang/issue5034_watchdog_timeout.log": (
        "sglang_log",
        {"log_error": 1, "log_span": 1},
        0,
        0,
        0,
        "Watchdog timeout (self.watchdog_timeout=300)",
    ),
    "sglang/issue12827_bracketed_iso_prefix.log": (
        "sglang_log",
        {"log_error": 1, "log_span": 1},
        0,
        0,
        0,
        "Received sigquit from a child process. It usually means the child failed.",
    ),
    # lm-eval 0.3 listing ppl before acc; 0.4 with a group, generation filters and a
    # perplexity task whose metrics are lower-is-better.
    "lm_eval_0.3_bloom560m_lambada.json": ("lm_eval_json", {"harness_run": 2}, 0, 0, 0, None),
    "lm_eval_0.4_group_gen_ppl_results.json": (
        "lm_eval_json",
        {"harness_run": 5},
        0,
        0,
        0,
        None,
    ),
    # Fixtures of a JUnit-reporting action (verbatim): a Surefire test that failed, then passed
    # on a rerun; container-structure-test's times in nanoseconds, fewer cases than declared.
    "surefire_flaky_failure.xml": ("junit_xml", {"harness_run": 1}, 0, 0, 0, None),
    "container_structure_test_ns_time.xml": ("junit_xml", {"harness_run": 3}, 0, 0, 2, None),
    # JUnit as six more producers write it (a sweep of 31 real harness files): an RFC 1123
    # timestamp (mocha), "no time" written as the epoch or year 1 (jest-junit, GoogleTest,
    # unittest-xml-reporting), tests that never ran said by an attribute (GoogleTest, CTest),
    # and a package that failed to build counted only in the totals (gotestsum).
    "mocha12_xunit_rfc1123_timestamp.xml": ("junit_xml", {"harness_run": 10}, 0, 0, 0, None),
    "jest_junit17_epoch_suite_error.xml": ("junit_xml", {"harness_run": 10}, 0, 0, 1, None),
    "gtest112_notrun_epoch.xml": ("junit_xml", {"harness_run": 10}, 0, 0, 1, None),
    "ctest325_disabled.xml": ("junit_xml", {"harness_run": 15}, 0, 0, 0, None),
    "gotestsum18_build_failed.xml": ("junit_xml", {"harness_run": 12}, 0, 0, 1, None),
    "mocha_junit_reporter221_utc.xml": ("junit_xml", {"harness_run": 8}, 0, 0, 1, None),
    "xmlrunner4_setupclass_year1.xml": ("junit_xml", {"harness_run": 1}, 0, 0, 1, None),
    # What a sweep of 30 pasted logs found (each is tested further below): a wrapper's time
    # before the server's own, a hard-wrapped ServerArgs, crashes printed outside SGLang's
    # logger, exception classes of any name, a 257-line traceback, one interleaved with other
    # processes' lines, failures SGLang reports at INFO, a Markdown quote, a Python logging
    # relay, a batched request, a line that lost its "[".
    "sglang/issue4305_wrapper_bracketed_time.log": ("sglang_log", {"log_span": 1}, 8, 24, 0, None),
    "sglang/issue3398_wrapped_server_args.log": (
        "sglang_log",
        {"server_start": 1, "log_span": 1},
        0,
        0,
        1,
        None,
    ),
    # SGLang's watchdog prints py-spy dumps into the log: stack_dump events at their line's time.
    "sglang/issue17941_watchdog_timeout_pyspy.log": (
        "sglang_log",
        {"log_error": 1, "stack_dump": 1, "log_span": 1},
        0,
        0,
        0,
        None,
    ),
    "sglang/issue31178_watchdog_pyspy_native.log": (
        "sglang_log",
        {"stack_dump": 1, "log_span": 1},
        0,
        0,
        0,
        "py-spy dump of scheduler_TP6 (pid 187): 3 threads, 0 active",
    ),
    # ... behind docker compose's "sglang-1  | " prefix.
    "sglang/issue12076_compose_prefix_pyspy.log": (
        "sglang_log",
        {"stack_dump": 1, "log_span": 1},
        0,
        0,
        0,
        None,
    ),
    "sglang/issue3368_nccl_watchdog_timeout.log": (
        "sglang_log",
        {"log_error": 1, "log_span": 1},
        0,
        0,
        0,
        "[rank6]:[E207 01:29:36.730311765 ProcessGroupNCCL.cpp:616] [Rank 6] Watchdog caught "
        "collective operation timeout: WorkNC",
    ),
    "sglang/issue5013_fatal_python_segfault.log": (
        "sglang_log",
        {"log_error": 1, "log_span": 1},
        0,
        0,
        0,
        "Caught signal 11 (Segmentation fault: address not mapped to object at address 0x17)",
    ),
    "sglang/issue2384_triton_outofresources.log": (
        "sglang_log",
        {"log_error": 1, "log_span": 1},
        0,
        0,
        0,
        "Scheduler hit an exception: triton.runtime.errors.OutOfResources: out of resource: "
        "shared memory, Required: 131072, Hard",
    ),
    # Mooncake's glog ERROR line, 22 times in the same millisecond range: one error, its
    # repeats counted; the traceback the lines interleave goes on past them.
    "sglang/issue6691_interleaved_traceback.log": (
        "sglang_log",
        {"log_error": 2, "log_span": 1},
        0,
        0,
        0,
        "E0528 06:32:54.253180 735017 tcp_transport.cpp:136] Session::writeBody failed. Error: "
        "Bad address (value: 14), total_tra",
    ),
    "sglang/slurmv4_pd_kvtransfer_failed.log": (
        "sglang_log",
        {"log_error": 5, "log_span": 1},
        0,
        0,
        0,
        None,
    ),
    "sglang/issue3658_markdown_quote.log": (
        "sglang_log",
        {"log_error": 2, "log_span": 1},
        8,
        8,
        0,
        None,
    ),
    "sglang/olmocr105_python_logging_relay.log": (
        "sglang_log",
        {"log_error": 1, "log_span": 1},
        0,
        0,
        0,
        # the excerpt ends inside the traceback: the announcing line titles it
        "Scheduler hit an exception: Traceback (most recent call last):",
    ),
    "sglang/issue8089_batched_rid_list.log": (
        "sglang_log",
        {"request": 6, "log_span": 1},
        0,
        0,
        6,  # the client sent the same batch again: "received again", kept the first
        None,
    ),
    "sglang/issue26248_lost_bracket.log": ("sglang_log", {"log_span": 1}, 5, 5, 2, None),
    # Retractions, every TP rank's copy, folded into one event per burst; the count per rank
    # and second is a series (sglang:num_retracted_reqs, as /metrics names it).
    "sglang/issue4184_decode_oom_retract.log": (
        "sglang_log",
        {"log_error": 1, "log_span": 1},
        8,
        11,
        0,
        "Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.1474 -> 0.1845",
    ),
    "sglang/peakkv_retract_requests.log": (
        "sglang_log",
        {"log_error": 1, "log_span": 1},
        5,  # running, queue, token usage, gen throughput, retracted
        26,
        0,
        "KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: 646, "
        "#new_token_ratio: 0.0980 -> 0.3487",
    ),
    # PD prefill queues: 4 ranks x (token usage, queue, bootstrap queue, inflight queue); the
    # warning: two DP8 lines in one second.
    "sglang/issue11648_pd_prefill_queues.log": ("sglang_log", {"log_span": 1}, 16, 16, 1, None),
    "sglang/issue6001_long_traceback.log": (
        "sglang_log",
        {"log_error": 2, "log_span": 1},
        0,
        0,
        0,
        "Scheduler hit an exception: Exception: Capture cuda graph failed: backend='inductor' "
        "raised:",
    ),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_each_real_file_gives_its_golden_summary(name: str) -> None:
    kind, events, series, samples, warnings, title = GOLDEN[name]
    result = parse(name)
    assert summary(result) == {
        "kind": kind,
        "events": events,
        "series": series,
        "samples": samples,
        "warnings": warnings,
    }
    if title is not None:
        assert result.events[0].title == title


# The corpus files refused, each with its own test below (tests/test_nothing_lost.py checks the
# whole corpus ingests with exactly these failing).
REFUSED = frozenset(
    {
        "query_range_error_bad_data.json",
        "sglang/shipped_tab_export_newest_first.tsv",
        "prometheus_client_3scrapes_no_timestamps.prom",
        "dcgm_exporter_readme_ellipsis.prom",
        "go127_pprof_debug2_truncated_mid_header.txt",
        "pyspy043_two_dumps_concat.txt",
        "go127_pprof_debug2_three_curls_concat.txt",
        "prometheus_client026_3scrapes.om.txt",
    }
)


def test_every_corpus_file_has_a_golden_summary_or_a_refusal_test() -> None:
    files = {
        str(p.relative_to(REAL))
        for p in [*REAL.glob("*"), *(REAL / "sglang").glob("*")]
        if p.is_file() and p.suffix not in (".sh", ".md", ".py") and p.name != "versions.txt"
    }
    assert files == set(GOLDEN) | REFUSED


# --- refusals name the format and what to do -----------------------------------------------------


def test_scrapes_appended_without_timestamps_are_refused_as_such() -> None:
    with pytest.raises(ParseError) as caught:
        parse("prometheus_client_3scrapes_no_timestamps.prom")
    # The second scrape's first sample whose value moved (the first lines repeat exactly).
    assert caught.value.line == 132
    assert "second scrape without timestamps" in str(caught.value)
    assert "one scrape per file" in str(caught.value)


def test_openmetrics_scrapes_appended_without_timestamps_are_refused_as_such() -> None:
    with pytest.raises(ParseError) as caught:
        parse("prometheus_client026_3scrapes.om.txt")
    assert caught.value.line == 98  # where the second exposition starts
    assert "scrapes without timestamps" in caught.value.message


def test_a_pasted_scrape_cut_with_an_ellipsis_is_read_as_one_and_refused_at_the_cut() -> None:
    with pytest.raises(ParseError) as caught:
        parse("dcgm_exporter_readme_ellipsis.prom")
    assert caught.value.line == 7
    assert "'...'" in str(caught.value)


def test_overlapping_federate_pulls_keep_each_sample_once_and_say_so() -> None:
    result = parse("prometheus242_federate_5x_1s.prom")
    assert any("126 samples repeated exactly" in w for w in result.warnings)
    for block in result.samples:
        assert list(block.ts_ms) == sorted(set(block.ts_ms))  # once each, in order


def test_openmetrics_samples_escaped_by_prometheus_client_keep_their_familys_colon_name() -> None:
    result = parse("prometheus_client026_openmetrics_colons.txt")
    names = {block.key.name for block in result.samples}
    assert {"sglang:num_running_reqs", "sglang:prompt_tokens_total", "sglang:server_state"} <= names
    assert not any(name.startswith("sglang_") for name in names)
    running = [b for b in result.samples if b.key.name == "sglang:num_running_reqs"]
    assert [b.type for b in running] == ["gauge", "gauge"]
    assert any("prometheus-client's escaping" in w for w in result.warnings)


def test_a_goroutine_dump_cut_inside_a_header_is_refused_not_shortened() -> None:
    with pytest.raises(ParseError) as caught:
        parse("go127_pprof_debug2_truncated_mid_header.txt")
    assert caught.value.line == 113
    assert "'goroutine 31 [s'" in str(caught.value)


def test_pyspy_subprocesses_keep_every_process_and_say_which_failed() -> None:
    event = parse("pyspy043_subprocesses.txt").events[0]
    assert sorted({t["pid"] for t in event.attrs["threads"]}) == [12129, 12133, 12134, 12135, 12136]
    partial = parse("pyspy043_subprocesses_nonpython_children.txt")
    assert "Failed to find python version" in partial.warnings[0]
    frames = parse("pyspy043_paren_filename.txt").events[0].attrs["threads"][0]["frames"]
    assert frames[0] == {"func": "f", "file": "report (1).py", "line": 3}


def test_goroutine_dumps_appended_in_one_file_are_refused_at_the_second() -> None:
    with pytest.raises(ParseError) as caught:
        parse("go127_pprof_debug2_three_curls_concat.txt")
    assert caught.value.line == 465
    assert "goroutine 1 again (first at line 23)" in str(caught.value)


def test_two_pyspy_dumps_of_one_process_in_one_file_are_refused_at_the_second() -> None:
    with pytest.raises(ParseError) as caught:
        parse("pyspy043_two_dumps_concat.txt")
    assert caught.value.line == 807
    assert "one dump per file" in str(caught.value)


def test_py_spy_dumps_in_a_server_log_are_dumps_at_their_lines_time() -> None:
    result = parse("sglang/issue17941_watchdog_timeout_pyspy.log")
    dump = next(e for e in result.events if str(e.kind) == "stack_dump")
    timeout = next(e for e in result.events if str(e.kind) == "log_error")
    assert "watchdog timeout" in timeout.title
    # "[2026-01-29 13:12:37 PP2 TP1] Pyspy dump for PID 88693:" then py-spy's own lines
    assert dump.at == dt.datetime(2026, 1, 29, 13, 12, 37, tzinfo=dt.UTC)
    assert dump.title.startswith("py-spy dump of scheduler_PP2_TP1 (pid 88693)")
    assert dump.line == 20
    frames = [f["func"] for f in dump.attrs["threads"][0]["frames"]]
    assert "c10d::ProcessGroupGloo::RecvWork::wait" in frames
    composed = parse("sglang/issue12076_compose_prefix_pyspy.log")
    dump = next(e for e in composed.events if str(e.kind) == "stack_dump")
    assert dump.title.startswith("py-spy dump of scheduler_TP7 (pid 310)")
    assert dump.attrs["threads"][0]["state"] == "active"


def test_a_crash_dump_keeps_its_reason_and_leaves_thread_stacks_out() -> None:
    deadlock = parse("go119_deadlock_stderr.txt").events[0]
    assert deadlock.attrs["crash"] == "fatal error: all goroutines are asleep - deadlock!"
    crash = parse("go119_sigquit_gotraceback_crash.txt")
    ids = [i for g in crash.events[0].attrs["groups"] for i in g["ids"]]
    # 32, as GOTRACEBACK=all gives for the same program: the threads' reports after "-----"
    # repeat goroutines listed above.
    assert 0 not in ids and crash.events[0].attrs["total"] == 32 and len(ids) == len(set(ids))
    # its registers are the dump's own lines; its log lines above the dump are counted
    assert crash.warnings == [
        "go119_sigquit_gotraceback_crash.txt: 53 line(s) before the dump (the program's own "
        "log?) are not part of it and were not read"
    ]
    # A SIGQUIT asked for is no crash.
    assert "crash" not in crash.events[0].attrs


def test_prometheus_error_answer_is_reported_as_prometheus_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse("query_range_error_bad_data.json")
    message = caught.value.message
    assert message.startswith(
        "Prometheus returned an error (bad_data): 1:9: parse error: missing unit character in "
        "duration"
    )
    assert "fix the query" in message


def test_newest_first_export_is_refused_with_what_to_do() -> None:
    with pytest.raises(ParseError) as caught:
        parse("sglang/shipped_tab_export_newest_first.tsv")
    assert "lists the newest entry first" in caught.value.message
    assert "export it in ascending time order" in caught.value.message


def test_lm_eval_03_without_a_time_asks_for_one() -> None:
    with pytest.raises(ParseError) as caught:
        parse("lm_eval_0.3_hellaswag_results.json", at=None)
    assert "lm-eval 0.3 results carry no date" in caught.value.message


def test_nvidia_smi_without_timestamp_and_without_a_time_asks_for_one() -> None:
    with pytest.raises(ParseError) as caught:
        parse("nvidia_smi_bpytop26_no_timestamp.csv", at=None)
    assert "or the time of this reading given for the file (--at)" in caught.value.message


# --- key values -----------------------------------------------------------------------------------


def _series(result: ParseResult) -> dict[tuple[str, tuple[tuple[str, str], ...]], list[float]]:
    return {(b.key.name, b.key.labels): list(b.values) for b in result.samples}


def test_two_exporters_scrapes_each_name_their_unlabelled_go_series_by_file() -> None:
    for name in ("prometheus_self_metrics.prom", "node_exporter_metrics.prom"):
        result = parse(name)
        assert mark_origins(result, ParseContext(name, default_time=AT)) == len(result.samples)
        goroutines = [b for b in result.samples if b.key == ("go_goroutines", ())] or [
            b for b in result.samples if b.key.name == "go_goroutines"
        ]
        assert [b.origin for b in goroutines] == [name]
        assert list(goroutines[0].ts_ms) == [int(AT.timestamp() * 1000)]


def test_query_range_answers_are_named_by_name_label_or_by_file() -> None:
    up = parse("query_range_up.json")
    assert sorted(dict(b.key.labels)["job"] for b in up.samples) == ["node", "prometheus"]
    assert {b.key.name for b in up.samples} == {"up"}
    assert all(v == 1.0 for b in up.samples for v in b.values)
    (rate,) = parse("query_range_rate_http_requests.json").samples
    assert rate.key.name == "query_range_rate_http_requests"
    assert dict(rate.key.labels)["handler"] == "/metrics"


def test_goroutine_dumps_group_the_waiting_http_clients_with_their_wait_times() -> None:
    for name in ("go_sigquit_goroutines.txt", "go_pprof_goroutine_debug2.txt"):
        (dump,) = parse(name).events
        groups = {g["site"]: g for g in dump.attrs["groups"]}
        round_trip = groups["net/http.(*persistConn).roundTrip"]
        assert (round_trip["count"], round_trip["state"]) == (6, "select")
        assert round_trip["wait_minutes_max"] == 2
    (profile,) = parse("go_pprof_goroutine_debug1.txt").events
    assert profile.attrs["total"] == 39
    assert sum(g["count"] for g in profile.attrs["groups"]) == 39
    sites = {g["site"]: g["count"] for g in profile.attrs["groups"]}
    assert sites["net/http.(*persistConn).roundTrip"] == 6


def test_pyspy_text_and_json_dumps_show_the_same_threads() -> None:
    (text,) = parse("pyspy_dump.txt").events
    (json_dump,) = parse("pyspy_dump.json").events

    def threads(event: Any) -> dict[str, tuple[str, list[str]]]:
        return {
            t["name"]: (t["state"], [f["func"] for f in t["frames"]])
            for t in event.attrs["threads"]
        }

    assert threads(text) == threads(json_dump)
    assert threads(text)["busy"][0] == "active+gil"
    assert threads(text)["lock-waiter"][0] == "idle"
    assert text.attrs["python"] == "3.11.7"


def test_lm_eval_is_headlined_by_the_tasks_metric_never_sample_len() -> None:
    (run04,) = parse("lm_eval_0.4_dummy_results.json").events
    assert run04.attrs["score"] == 0.25
    assert run04.attrs["metrics"]["sample_len"] == 8.0
    (run03,) = parse("lm_eval_0.3_hellaswag_results.json").events
    assert run03.attrs["score"] == pytest.approx(0.40141406094403503)
    assert run03.attrs["model"] == "/home/mwitiderrick/neuralmagic/sparseml/obcq_deployment"
    assert run03.at == AT


def test_junit_xunit1_and_xunit2_give_the_same_runs() -> None:
    def runs(name: str) -> list[tuple[str, str]]:
        return [(e.attrs["case"], e.attrs["status"]) for e in parse(name).events]

    expected = [
        ("test_passes", "pass"),
        ("test_fails", "fail"),
        ("test_errors", "error"),
        ("test_skipped", "skipped"),
    ]
    assert runs("pytest_xunit1.xml") == runs("pytest_xunit2.xml") == expected


def test_nvidia_smi_without_timestamp_reads_every_gpu_at_the_given_time() -> None:
    found = _series(parse("nvidia_smi_bpytop26_no_timestamp.csv"))
    assert found[("nvidia_smi_utilization_gpu", (("gpu", "0"),))] == [36.0]
    assert found[("nvidia_smi_utilization_gpu", (("gpu", "1"),))] == [0.0]
    assert found[("nvidia_smi_power_draw_w", (("gpu", "0"),))] == [106.56]


def test_sglang_excerpts_key_values() -> None:
    hybrid = _series(parse("sglang/pr30047_hybrid_full_token_mamba_usage.log"))
    prefill_tp0 = (("batch", "prefill"), ("source", "server_log"), ("tp", "TP0"))
    assert hybrid[("sglang:token_usage", prefill_tp0)] == [0.14, 0.2, 0.27, 0.33, 0.4]
    assert hybrid[("sglang:mamba_usage", prefill_tp0)] == [0.2, 0.3, 0.4, 0.5, 0.6]
    ranks = _series(parse("sglang/pr10622_dp_tp_ep_ranks.log"))
    assert {dict(labels)["dp"] for _, labels in ranks} == {"DP0", "DP1", "DP2", "DP3"}
    comma = _series(parse("sglang/pr22331_decode_batch_comma.log"))
    throughput = comma[("sglang:gen_throughput", (("source", "server_log"), ("tp", "TP0")))]
    assert throughput[0] == 144.95 and len(throughput) == 8
    for name in (
        "sglang/pr22166_prefill_and_decode_same_second.log",
        "sglang/shipped_cloud_logging.log",
        "sglang/shipped_kubectl_timestamps.log",
        "sglang/shipped_tab_export.tsv",
    ):
        same = _series(parse(name))
        assert same[("sglang:num_running_reqs", (("source", "server_log"),))] == [32.0]
        prefill = (("batch", "prefill"), ("source", "server_log"))
        assert same[("sglang:num_running_reqs", prefill)] == [31.0, 31.0]
    jax = parse("sglang/sglang_jax_pr564_decode_same_second.log")
    assert jax.warnings[0].startswith(
        "sglang_jax_pr564_decode_same_second.log: 8 batch lines shared their second"
    )


def _errors(result: ParseResult) -> list[Any]:
    return [e for e in result.events if e.kind == "log_error"]


def test_a_wrappers_time_before_the_servers_own_is_taken_off() -> None:
    """``[16:16:58] [01:16:58 TP0] Prefill batch...``: the samples are the server's, at its
    own time (the wrapper's clock is 15 hours off)."""
    result = parse("sglang/issue4305_wrapper_bracketed_time.log")
    running = _series(result)[
        ("sglang:num_running_reqs", (("batch", "prefill"), ("source", "server_log"), ("tp", "TP0")))
    ]
    assert running[:2] == [1.0, 9.0]
    (span,) = result.events
    assert span.at == dt.datetime(2025, 3, 11, 1, 16, 58, tzinfo=dt.UTC)


def test_a_hard_wrapped_server_args_line_is_read_whole() -> None:
    result = parse("sglang/issue3398_wrapped_server_args.log")
    (start,) = [e for e in result.events if e.kind == "server_start"]
    config = start.attrs["server_args"]
    # "quantization_param_path=Non" + "e, quantization=None": the wrap fell mid-word
    assert config["quantization_param_path"] == "None" and config["quantization"] == "None"
    assert config["tp_size"] == "16" and config["enable_hierarchical_cache"] == "False"
    assert result.warnings == [
        "issue3398_wrapped_server_args.log:1: server_args=ServerArgs(...) went on over the next "
        "8 lines (a wrapped paste); read as one line"
    ]


def test_crashes_printed_outside_sglangs_logger_are_errors_with_their_symptom() -> None:
    result = parse("sglang/issue3368_nccl_watchdog_timeout.log")
    (nccl,) = _errors(result)
    assert nccl.attrs["symptom"] == "watchdog_timeout"
    assert "terminate called after throwing" in nccl.body
    # At its own time ("[E207 01:29:36.73..."), ten minutes after SGLang's last line: the log
    # went on until then.
    crashed = dt.datetime(2025, 2, 7, 1, 29, 36, 730311, tzinfo=dt.UTC)
    (span,) = [e for e in result.events if e.kind == "log_span"]
    assert nccl.at == crashed and span.ends_at == crashed
    assert span.at == dt.datetime(2025, 2, 7, 1, 19, 40, tzinfo=dt.UTC)
    (segfault,) = _errors(parse("sglang/issue5013_fatal_python_segfault.log"))
    assert segfault.attrs["symptom"] == "crash" and "Fatal Python error" in segfault.body


def test_a_long_traceback_keeps_its_end_and_its_exception() -> None:
    """257 lines: the first 200 and the last 30 are kept, the count of the rest is said."""
    first, *_ = _errors(parse("sglang/issue6001_long_traceback.log"))
    body = first.body.splitlines()
    assert "... 27 lines left out ..." in body
    assert any(line.startswith("Exception: Capture cuda graph failed") for line in body[-30:])


def test_an_interleaved_traceback_goes_on_past_other_processes_lines() -> None:
    glog, error = _errors(parse("sglang/issue6691_interleaved_traceback.log"))
    assert error.attrs["symptom"] == "crash"
    assert 'raise RuntimeError("Mooncake Transfer Engine Return Error.")' in error.body
    assert "tcp_transport.cpp" not in error.body  # the other library's lines are not its own
    # The C++ library's glog ERROR line: one server error (not a crash), its 21 repeats counted.
    assert glog.line == 1 and "symptom" not in glog.attrs
    assert glog.attrs["repeats"] == 21
    assert glog.ends_at == dt.datetime(2025, 5, 28, 6, 32, 54, 258129, tzinfo=dt.UTC)
    assert (
        "(21 more lines like it, numbers aside; the last at 2025-05-28T06:32:54.258129" in glog.body
    )


def test_failures_sglang_reports_at_info_are_errors() -> None:
    errors = _errors(parse("sglang/slurmv4_pd_kvtransfer_failed.log"))
    (answered,) = [e for e in errors if e.line == 16]
    transfers = [e for e in errors if e is not answered]
    # 15 lines: four requests' failures, each logged once per rank in the same second, one
    # event per request with its copies counted
    assert len(transfers) == 4
    assert sum(1 + e.attrs["copies"] for e in transfers) == 15
    assert len({re.search(r"rid='(\w+)'", e.title).group(1) for e in transfers}) == 4
    assert all("with exception KVTransferError(" in e.body for e in transfers)
    # ... and the client got a 500 for it (uvicorn's access line)
    assert answered.title.endswith('"POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error')
    assert all("symptom" not in e.attrs for e in errors)  # one request's, not the server's


def test_quoted_and_relayed_pastes_read_as_the_server_wrote_them() -> None:
    quoted = parse("sglang/issue3658_markdown_quote.log")
    assert {dict(labels)["dp"] for _, labels in _series(quoted)} >= {"DP6", "DP7"}
    (relayed,) = _errors(parse("sglang/olmocr105_python_logging_relay.log"))
    assert relayed.at == dt.datetime(2025, 3, 8, 2, 4, 48, tzinfo=dt.UTC)
    assert relayed.body.splitlines()[2].startswith('  File "')  # the relay's prefix is gone


def test_a_batched_request_is_one_request_per_rid_and_a_lost_bracket_is_said() -> None:
    batched = parse("sglang/issue8089_batched_rid_list.log")
    requests = [e for e in batched.events if e.kind == "request"]
    assert len({e.key for e in requests}) == 6
    assert not any(e.attrs["finished"] for e in requests)  # the issue: "only Receive, no Finish"
    lost = parse("sglang/issue26248_lost_bracket.log")
    assert lost.warnings[0].startswith(
        "issue26248_lost_bracket.log: 1 batch lines have no readable [YYYY-MM-DD HH:MM:SS] "
        "prefix (lines 1)"
    )


def _statuses(result: ParseResult) -> Counter[str]:
    return Counter(str(e.attrs["status"]) for e in result.events)


def test_junit_times_as_producers_write_them() -> None:
    mocha = parse("mocha12_xunit_rfc1123_timestamp.xml")  # "Fri, 04 Dec 2026 15:26:45 GMT"
    assert {e.at for e in mocha.events} == {dt.datetime(2026, 12, 4, 15, 26, 45, tzinfo=dt.UTC)}
    # A suite that failed to load, stamped 1970-01-01: it ran with the file's other suites (its
    # error was the first bad moment of 1970 before).
    jest = parse("jest_junit17_epoch_suite_error.xml")
    (error,) = [e for e in jest.events if e.attrs["status"] == "error"]
    assert error.at == dt.datetime(2026, 12, 4, 15, 27, 3, tzinfo=dt.UTC)
    assert min(e.at for e in jest.events).year == 2026
    # Year 1: no other suite, so the file's given time (refused before, error and all).
    (setup,) = parse("xmlrunner4_setupclass_year1.xml").events
    assert setup.attrs["status"] == "error" and setup.at == AT


def test_junit_tests_that_never_ran_are_no_passes() -> None:
    gtest = parse("gtest112_notrun_epoch.xml")  # status="notrun" result="suppressed"
    assert _statuses(gtest) == {"pass": 4, "fail": 3, "skipped": 3}
    disabled = [e for e in gtest.events if e.attrs["case"].startswith("DISABLED_")]
    assert disabled and all(e.attrs["status"] == "skipped" for e in disabled)
    assert disabled[0].attrs["message"] == 'not run (status="notrun" result="suppressed")'
    ctest = parse("ctest325_disabled.xml")  # status="disabled", status="notrun"
    assert _statuses(ctest) == {"pass": 5, "fail": 5, "skipped": 5}


def test_failures_a_junit_file_counts_without_a_test_case_are_an_error_run() -> None:
    result = parse("gotestsum18_build_failed.xml")  # pkgc did not build: errors="1", no case
    (declared,) = [e for e in result.events if e.attrs["case"] == "(declared without a test case)"]
    assert declared.attrs["status"] == "error"
    assert declared.at == dt.datetime(2026, 12, 4, 15, 29, 19, tzinfo=dt.UTC)
    assert result.warnings == [
        "gotestsum18_build_failed.xml:2: <testsuites> declares 1 failures or errors more than "
        "its <testcase> elements show (e.g. a package that failed to build, a suite that failed "
        "to load, or skipped tests the producer does not list)"
    ]


def test_an_lm_eval_headline_is_a_score_with_its_direction() -> None:
    lambada = {e.attrs["task"]: e for e in parse("lm_eval_0.3_bloom560m_lambada.json").events}
    # 0.3 lists "ppl" first: the headline is the accuracy, not a perplexity of 28.7
    assert lambada["lambada_openai"].attrs["score_metric"] == "acc"
    assert lambada["lambada_openai"].attrs["score"] == pytest.approx(0.3539, abs=1e-4)
    assert lambada["lambada_openai"].attrs["higher_is_better"] is True
    tasks = {e.attrs["task"]: e for e in parse("lm_eval_0.4_group_gen_ppl_results.json").events}
    ppl = tasks["sweep_ppl"]  # "higher_is_better": {"sweep_ppl": {"word_perplexity": false}}
    assert ppl.attrs["score_metric"] == "word_perplexity,none"
    assert ppl.attrs["higher_is_better"] is False
    assert ppl.title.endswith("(lower is better)")


def test_a_flaky_pass_says_so_and_an_absurd_time_is_warned() -> None:
    (flaky,) = parse("surefire_flaky_failure.xml").events
    assert flaky.attrs["status"] == "pass"
    assert flaky.attrs["message"].startswith("flaky: passed after 1 failed run(s): Expected:")
    nanos = parse("container_structure_test_ns_time.xml")
    assert nanos.warnings[0].startswith(
        "container_structure_test_ns_time.xml:3: testcase 'Command Test: apt-get upgrade' took "
        "9.99638e+08 s"
    )


def test_junit_producers_that_write_utc_without_a_zone_are_read_as_utc() -> None:
    """jest-junit and mocha-junit-reporter cut the "Z" off toISOString(); GoogleTest writes
    the machine's local time (Los Angeles, when these ran at 15:27-15:28 UTC)."""
    import zoneinfo

    los_angeles = zoneinfo.ZoneInfo("America/Los_Angeles")
    for name, utc in (
        ("jest_junit17_epoch_suite_error.xml", dt.datetime(2026, 12, 4, 15, 27, 3, tzinfo=dt.UTC)),
        ("mocha_junit_reporter221_utc.xml", dt.datetime(2026, 12, 4, 15, 26, 54, tzinfo=dt.UTC)),
        ("gtest112_notrun_epoch.xml", dt.datetime(2026, 12, 4, 15, 28, 32, 319000, tzinfo=dt.UTC)),
    ):
        data = (REAL / name).read_bytes()
        fmt = sniff.sniff(name, data[: sniff.HEAD_BYTES])
        assert fmt is not None
        result = fmt.parse(data, ParseContext(name, tz=los_angeles))
        assert min(e.at for e in result.events) == utc, name


def test_a_dump_appended_to_a_long_log_is_sniffed_from_the_files_end(incident) -> None:  # type: ignore[no-untyped-def]
    """`kubectl logs` of a Go service sent SIGQUIT: 14 KB of its own log lines, then the
    runtime's dump. Its first 8 KB match no format; its last bytes hold goroutine headers."""
    from ingest import sniff
    from ingest.services.storage import artifact_register_bytes

    data = (REAL / "go119_logs_then_sigquit.txt").read_bytes()
    assert len(data) > 2 * sniff.HEAD_BYTES
    assert sniff.sniff("pod.log", data[: sniff.HEAD_BYTES]) is None
    artifact, _ = artifact_register_bytes(incident=incident, name="pod.log", data=data)
    assert artifact.kind == "goroutine_dump", artifact.error
