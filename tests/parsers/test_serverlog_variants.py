"""SGLang logs as people have them (#14.2): behind a log shipper's prefix, from other SGLang
versions and model kinds. The real excerpts these come from are in tests/fixtures/real/sglang/
(provenance in its README); here each variant is pinned down on its own."""

from __future__ import annotations

import datetime as dt

import pytest

from evidence.vocabulary import EventKind
from ingest.parsers.logprefix import strip_line, unwrap
from ingest.parsers.serverlog import looks_like_sglang_log, parse_sglang_log
from ingest.parsers.types import ParseContext, ParseError, ParseResult

UTC = dt.UTC
CTX = ParseContext("server.log")
LINE = "[2026-06-15 14:10:59 TP7] Decode batch. #running-req: 3, #queue-req: 1,"


def parse(text: str) -> ParseResult:
    return parse_sglang_log(text.encode(), CTX)


def series(result: ParseResult) -> dict[tuple[str, tuple[tuple[str, str], ...]], list[float]]:
    return {(b.key.name, b.key.labels): list(b.values) for b in result.samples}


def errors(result: ParseResult) -> list:
    return [e for e in result.events if e.kind == EventKind.LOG_ERROR]


# --- shippers' prefixes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "shipper"),
    [
        (f"ERROR 2026-06-15T14:10:59.392125190Z {LINE}", "Cloud Logging"),
        (f"1765000000000\t2026-06-15T14:10:59.392Z\t{LINE}", "tab-separated export"),
        (f"(WorkerDict pid=29239) {LINE}", "Ray actor"),
        (f"(WorkerDict pid=616, ip=192.168.149.159) {LINE}", "Ray actor"),
        (f"\x1b[36m(WorkerDict pid=39179)\x1b[0m {LINE}", "Ray actor"),
        (f"2026-06-15T14:10:59.392125190Z {LINE}", "kubectl/docker timestamps"),
        (f"[2026-06-15T14:10:59.392Z] {LINE}", "bracketed UTC time"),
        (f"[pod/sglang-0/server] {LINE}", "kubectl --prefix"),
        (f"2026-06-15T14:10:59.392125190Z (WorkerDict pid=1) {LINE}", "kubectl/docker timestamps"),
    ],
)
def test_a_shippers_prefix_is_taken_off_and_the_line_reads_as_the_server_wrote_it(
    line: str, shipper: str
) -> None:
    bare, name, _ = strip_line(line)
    assert (bare, name) == (LINE, shipper)
    assert looks_like_sglang_log("export.txt", line.encode())
    result = parse(line + "\n")
    assert series(result)[("sglang:num_running_reqs", (("source", "server_log"), ("tp", "TP7")))]
    # The server's own time stays the record's time, not the shipper's.
    span = result.events[-1]
    assert span.at == dt.datetime(2026, 6, 15, 14, 10, 59, tzinfo=UTC)


def test_continuation_lines_keep_their_indentation_behind_a_prefix() -> None:
    lines = unwrap(
        [
            "(WorkerDict pid=1) [2025-03-22 01:05:30 TP0] Scheduler hit an exception: "
            "Traceback (most recent call last):",
            '(WorkerDict pid=1)   File "scheduler.py", line 1748, in run_scheduler_process',
            "(WorkerDict pid=1) RuntimeError: CUDA error: an illegal memory access was encountered",
        ]
    )
    assert lines[1] == '  File "scheduler.py", line 1748, in run_scheduler_process'
    (crash,) = errors(parse("\n".join(lines) + "\n"))
    assert crash.title == (
        "Scheduler hit an exception: RuntimeError: CUDA error: an illegal memory access was "
        "encountered"
    )


def test_an_export_listing_the_newest_entry_first_is_refused_with_what_to_do() -> None:
    text = (
        f"1765000001000\t2026-06-15T14:11:00.000Z\t{LINE}\n"
        f"1765000000000\t2026-06-15T14:10:59.000Z\t{LINE}\n"
    )
    with pytest.raises(ParseError) as caught:
        parse(text)
    assert "tab-separated export log lists the newest entry first" in caught.value.message
    assert "export it in ascending time order" in caught.value.message


# --- records ---------------------------------------------------------------------------------


def test_a_finish_line_without_its_time_takes_the_time_of_the_line_before() -> None:
    text = (
        "[2026-06-15 14:10:50] Receive: obj=GenerateReqInput(rid='r1', text='hi')\n"
        "[2026-06-15 14:10:59 TP0] Decode batch. #running-req: 1, #queue-req: 0,\n"
        "Finish: obj=GenerateReqInput(rid='r1'), out={'text': 'ok', 'meta_info': {}}\n"
    )
    result = parse(text)
    (request,) = [e for e in result.events if e.kind == EventKind.REQUEST]
    assert request.ends_at == dt.datetime(2026, 6, 15, 14, 10, 59, tzinfo=UTC)
    assert request.attrs["finished"] is True
    assert result.warnings == []


def test_finish_text_inside_a_multi_line_prompt_is_still_payload() -> None:
    text = (
        "[2026-06-15 14:10:50] Receive: obj=GenerateReqInput(rid='r1', text='a prompt that says\n"
        "Finish: obj=GenerateReqInput(rid='r1'), out={}\n"
        "and ends here', sampling_params={})\n"
    )
    (request,) = [e for e in parse(text).events if e.kind == EventKind.REQUEST]
    assert request.ends_at is None


def test_prefill_and_decode_lines_of_one_second_are_separate_series() -> None:
    text = (
        "[2026-04-05 20:02:51] Decode batch, #running-req: 32, #token: 11179, token usage: "
        "0.08, cuda graph: True, gen throughput (token/s): 1635.11, #queue-req: 0\n"
        "[2026-04-05 20:02:51] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, "
        "token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, "
        "input throughput (token/s): 559.53\n"
    )
    found = series(parse(text))
    assert found[("sglang:num_running_reqs", (("source", "server_log"),))] == [32.0]
    assert found[("sglang:num_running_reqs", (("batch", "prefill"), ("source", "server_log")))] == [
        31.0
    ]
    assert parse(text).warnings == []


def test_lines_of_one_series_in_one_second_are_counted_in_a_warning() -> None:
    result = parse(f"{LINE}\n{LINE}\n{LINE}\n")
    assert result.warnings == [
        "server.log: 2 batch lines shared their second with a later batch line of the same rank "
        "and kind (samples are kept one per second): the last line of each second was kept"
    ]


def test_hybrid_models_full_token_usage_is_the_token_usage_series() -> None:
    text = (
        "[2026-07-04 04:31:24 TP0] Prefill batch, #new-seq: 12, #new-token: 43008, "
        "#cached-token: 0, full token usage: 0.14, mamba usage: 0.20, #running-req: 1, "
        "#queue-req: 97\n"
    )
    labels = (("batch", "prefill"), ("source", "server_log"), ("tp", "TP0"))
    found = series(parse(text))
    assert found[("sglang:token_usage", labels)] == [0.14]
    assert found[("sglang:mamba_usage", labels)] == [0.20]


@pytest.mark.parametrize(
    ("tag", "labels"),
    [
        ("TP0", (("tp", "TP0"),)),
        ("DP13 TP13", (("dp", "DP13"), ("tp", "TP13"))),
        ("TP0 EP0", (("ep", "EP0"), ("tp", "TP0"))),
        ("DP0 TP0 EP0", (("dp", "DP0"), ("ep", "EP0"), ("tp", "TP0"))),
    ],
)
def test_rank_tags_become_labels(tag: str, labels: tuple[tuple[str, str], ...]) -> None:
    text = f"[2026-06-15 14:10:59 {tag}] Decode batch, #running-req: 2, #queue-req: 0\n"
    (key,) = {k for k in series(parse(text)) if k[0] == "sglang:num_running_reqs"}
    assert key[1] == tuple(sorted((*labels, ("source", "server_log"))))


def test_cache_hit_rate_in_percent_and_accept_len_are_series() -> None:
    text = (
        "[2026-06-15 14:10:59 TP0] Prefill batch. #new-seq: 4, #new-token: 8192, "
        "#cached-token: 291, cache hit rate: 2.76%, token usage: 0.04, #running-req: 1, "
        "#queue-req: 38\n"
        "[2026-06-15 14:11:00 TP0] Decode batch. #running-req: 1, #token: 353, token usage: "
        "0.00, accept len: 2.93, cuda graph: True, gen throughput (token/s): 41.96, "
        "#queue-req: 0\n"
    )
    found = {name: values for (name, _), values in series(parse(text)).items()}
    assert found["sglang:cache_hit_rate"] == [0.0276]
    assert found["sglang:spec_accept_length"] == [2.93]


def test_a_crash_is_titled_by_its_exception_line() -> None:
    text = (
        "[2026-06-15 14:10:59 TP7] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "scheduler.py", line 2815, in run_scheduler_process\n'
        "    scheduler.event_loop_overlap()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call.\n"
        "[2026-06-15 14:10:59] Received sigquit from a child process. It usually means the "
        "child failed.\n"
    )
    crash, sigquit = errors(parse(text))
    assert crash.title == (
        "Scheduler hit an exception: RuntimeError: CUDA error: an illegal memory access was "
        "encountered"
    )
    assert sigquit.title.startswith("Received sigquit from a child process")


def test_a_chained_traceback_is_titled_by_the_last_exception() -> None:
    text = (
        "[2026-06-15 14:10:59] ERROR: request failed\n"
        "Traceback (most recent call last):\n"
        '  File "a.py", line 1, in f\n'
        "KeyError: 'x'\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "a.py", line 3, in f\n'
        "torch.OutOfMemoryError: CUDA out of memory.\n"
    )
    (crash,) = errors(parse(text))
    assert crash.title == "ERROR: request failed: torch.OutOfMemoryError: CUDA out of memory."


def test_a_batch_line_glued_after_other_text_is_read_from_its_time_and_counted() -> None:
    """A progress bar redrawn without a newline (or a paste's prefix) before a batch line's
    [time]: the record is read from its [time] on, and a warning names the line. Other text
    holding a [time] and "Decode batch" (a prompt, an error's body) is left as it was."""
    from ingest.parsers.serverlog import parse_sglang_log
    from ingest.parsers.types import ParseContext

    text = (
        "[2026-08-23 09:05:30 TP0] Load weight end.\n"
        "Capturing batches (bs=8):  50%|█████     | 2/4 [00:01<00:01][2026-08-23 09:05:37 TP0] "
        "Decode batch, #running-req: 3, #full token: 1, full token usage: 0.02, #swa token: 7, "
        "swa token usage: 0.40, accept len: 2.5, accept rate: 0.75, gen throughput (token/s): "
        "50.00, #queue-req: 0\n"
        "[2026-08-23 09:05:40] Receive: obj=GenerateReqInput(rid='a', text='line one\n"
        "[2026-08-23 09:05:41 TP0] Decode batch, #running-req: 99, #queue-req: 0\n"
        "end of prompt')\n"
        "[2026-08-23 09:05:42] ERROR: something failed\n"
        "  quoted [2026-08-23 09:05:43 TP0] Decode batch, #running-req: 77\n"
    )
    result = parse_sglang_log(text.encode(), ParseContext("glued.log"))
    values = {
        (b.key.name, b.ts_ms[0]): b.values[0]
        for b in result.samples
        if dict(b.key.labels).get("batch") != "prefill"
    }
    at = 1_787_475_937_000  # 2026-08-23 09:05:37 UTC
    assert values[("sglang:num_running_reqs", at)] == 3
    assert values[("sglang:swa_token_usage", at)] == 0.40
    assert values[("sglang:spec_accept_rate", at)] == 0.75
    assert values[("sglang:token_usage", at)] == 0.02
    # Neither the prompt's line nor the error's body became samples.
    assert {v for (name, _), v in values.items() if name == "sglang:num_running_reqs"} == {3}
    (glued,) = [w for w in result.warnings if "other text before" in w]
    assert "glued.log: 1 batch or request lines" in glued and "lines 2)" in glued


def test_repeats_of_a_glog_line_out_of_order_never_end_before_they_start() -> None:
    """Two threads' glog lines come out of order by microseconds: the folded error spans from
    the earliest to the latest (the database refuses an event that ends before it starts)."""
    from ingest.parsers.serverlog import parse_sglang_log
    from ingest.parsers.types import ParseContext

    text = (
        "[2025-04-14 03:56:40] The server is fired up and ready to roll!\n"
        "E0414 03:56:41.856248 77969 transfer_engine.cpp:173] Failed to connect to peer "
        "10.0.0.5:12001\n"
        "E0414 03:56:41.850001 77970 transfer_engine.cpp:173] Failed to connect to peer "
        "10.0.0.6:12001\n"
    )
    result = parse_sglang_log(text.encode(), ParseContext("mc.log"))
    (error,) = [e for e in result.events if e.kind == "log_error"]
    assert error.attrs["repeats"] == 1
    assert error.at.microsecond == 850001 and error.ends_at.microsecond == 856248


def test_a_log_opening_with_many_lines_of_other_output_is_still_recognised() -> None:
    """NCCL's INFO lines (60 of them) before SGLang's first record: the whole head is read,
    and the undated-log refusal never describes a dated log."""
    from ingest import sniff
    from ingest.parsers.serverlog import undated_sglang_log

    head = "".join(
        f"node-1:123:123 [0] NCCL INFO Channel {i:02d} : 0[0] -> 1[1]\n" for i in range(60)
    )
    head += "[2026-11-20 14:00:00 TP0] Decode batch. #running-req: 1, #queue-req: 0\n"
    fmt = sniff.sniff("server.log", head.encode())
    assert fmt is not None and fmt.kind == "sglang_log"
    assert undated_sglang_log(head.encode()) is None


def test_glog_repeats_that_differ_only_in_hex_addresses_fold() -> None:
    """Mooncake's transfer errors name the buffer's address (``0x7f3a...``): its letters change
    from line to line, and each line was an error of its own (27 of them in one paste)."""
    from ingest.parsers.serverlog import parse_sglang_log
    from ingest.parsers.types import ParseContext

    text = "[2025-04-14 03:56:40] The server is fired up and ready to roll!\n" + "".join(
        f"E0414 03:56:4{i}.85{i}248 77969 transfer_engine.cpp:210] Failed to register memory "
        f"at addr 0x7f{a}a000, length 4096\n"
        for i, a in enumerate(("3a9c", "3b0e", "c41f"))
    )
    result = parse_sglang_log(text.encode(), ParseContext("mc.log"))
    (error,) = [e for e in result.events if e.kind == "log_error"]
    assert error.attrs["repeats"] == 2
