"""SGLang server log parser."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from evidence.vocabulary import EventKind, Lane
from ingest.parsers.serverlog import looks_like_sglang_log, parse_sglang_log
from ingest.parsers.types import (
    UTC,
    ParseContext,
    ParseError,
    ParseResult,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
PST = ZoneInfo("America/Los_Angeles")
CTX = ParseContext("server.log", tz=PST)


def parse(text: str, ctx: ParseContext = CTX) -> ParseResult:
    return parse_sglang_log(text.encode(), ctx)


def wedge() -> ParseResult:
    data = (FIXTURES / "sglang_wedge.log").read_bytes()
    return parse_sglang_log(data, ParseContext("sglang_wedge.log", tz=PST))


def summary(result: ParseResult) -> dict[str, Any]:
    return {
        "events": [
            {
                "kind": e.kind,
                "lane": e.lane,
                "at": e.at.isoformat(),
                "ends_at": e.ends_at.isoformat() if e.ends_at else None,
                "key": e.key,
                "title": e.title,
                "attrs": e.attrs,
                "line": e.line,
            }
            for e in result.events
        ],
        "samples": [
            {
                "name": b.key.name,
                "labels": [list(p) for p in b.key.labels],
                "ts_ms": list(b.ts_ms),
                "values": list(b.values),
            }
            for b in result.samples
        ],
        "warnings": result.warnings,
    }


def requests(result: ParseResult) -> dict[str, Any]:
    return {e.key: e for e in result.events if e.kind == EventKind.REQUEST}


def errors(result: ParseResult) -> list[Any]:
    return [e for e in result.events if e.kind == EventKind.LOG_ERROR]


def at(hms: str) -> dt.datetime:
    h, m, s = (int(x) for x in hms.split(":"))
    return dt.datetime(2026, 11, 20, h, m, s, tzinfo=PST).astimezone(UTC)


# --- golden ---------------------------------------------------------------------------------------


def test_wedge_log_matches_its_golden_summary() -> None:
    golden = json.loads((FIXTURES / "sglang_wedge.golden.json").read_text())
    assert summary(wedge()) == golden


def test_requests_received_and_never_finished_stay_open() -> None:
    result = wedge()
    reqs = requests(result)
    assert len(reqs) == 5
    dropped = [e for e in reqs.values() if e.ends_at is None]
    assert [(e.key, e.at) for e in dropped] == [
        ("9f2c4e1a7b3d4c5e8f6a0b1c2d3e4f5a", dt.datetime(2026, 11, 20, 23, 39, 58, tzinfo=UTC)),
        ("77aa88bb99cc00dd11ee22ff33aa44bb", dt.datetime(2026, 11, 20, 23, 40, 3, tzinfo=UTC)),
    ]
    first = dropped[0]
    assert first.lane == Lane.REQUESTS
    assert first.title == "request 9f2c4e1a7b3d"
    assert first.attrs == {
        "rid": "9f2c4e1a7b3d4c5e8f6a0b1c2d3e4f5a",
        "finished": False,
        "receive_line": 33,
    }


def test_log_span_covers_first_to_last_timestamp_with_counts() -> None:
    span = next(e for e in wedge().events if e.kind == EventKind.LOG_SPAN)
    assert span.lane == Lane.SERVER
    assert (span.at, span.ends_at) == (at("15:39:40"), at("15:42:05"))
    assert span.key == "sglang_wedge.log:2026-11-20T23:39:40+00:00:2026-11-20T23:42:05+00:00"
    assert span.attrs == {
        "lines": 42,
        "requests": 5,
        "unfinished": 2,
        # a Finish whose Receive is not in this file, kept for an earlier log of the server
        "finishes": {"ffee0000aaaa1111bbbb2222cccc3333": "2026-11-20T23:39:55+00:00"},
    }


def test_only_real_server_errors_become_error_events() -> None:
    found = errors(wedge())
    assert [(e.line, e.at) for e in found] == [(27, at("15:39:56")), (39, at("15:41:25"))]
    traceback, watchdog = found
    # titled by the exception line that ended the traceback (#14), not by its first line
    assert traceback.title == "ConnectionResetError: [Errno 104] Connection reset by peer"
    assert "ConnectionResetError: [Errno 104] Connection reset by peer" in traceback.body
    assert traceback.key == "sglang_wedge.log:27"
    assert watchdog.title.startswith("ERROR: watchdog: scheduler has made no progress")


def test_batch_lines_become_per_second_samples_labelled_by_rank() -> None:
    blocks = {b.key.name: b for b in wedge().samples}
    running = blocks["sglang:num_running_reqs"]
    assert running.key.labels == (("source", "server_log"), ("tp", "TP0"))
    assert running.type == "gauge"
    throughput = blocks["sglang:gen_throughput"]
    # decode lines only: the prefill lines at :44, :47 and :58 carry no throughput
    assert len(throughput.ts_ms) == 6
    assert list(throughput.values)[-3:] == [0.0, 0.0, 0.0]
    # two lines in 15:39:46 and two in 15:42:00 (with millis): the last one of each second wins
    usage_block = blocks["sglang:token_usage"]
    usage = dict(zip(usage_block.ts_ms, usage_block.values, strict=True))
    assert usage[int(at("15:39:46").timestamp() * 1000)] == 0.39
    assert usage[int(at("15:42:00").timestamp() * 1000)] == 0.45


# --- payload is never read for meaning ------------------------------------------------------------


def test_prompt_mentioning_traceback_and_error_is_not_an_error() -> None:
    text = (
        "[2026-11-20 15:40:00] Receive: obj=GenerateReqInput(rid='r1', text='Traceback (most "
        "recent call last):\\nERROR: CRITICAL failure', sampling_params={})\n"
    )
    result = parse(text)
    assert errors(result) == []
    assert list(requests(result)) == ["r1"]


def test_multi_line_prompt_with_a_traceback_line_is_payload() -> None:
    text = (
        "[2026-11-20 15:40:00] Receive: obj=GenerateReqInput(rid='r1', text='look at this:\n"
        "Traceback (most recent call last):\n"
        "ERROR: boom', sampling_params={})\n"
        "[2026-11-20 15:40:01] Finish: obj=GenerateReqInput(rid='r1'), out={'text': 'ok\n"
        "Traceback (most recent call last):'}\n"
    )
    result = parse(text)
    assert errors(result) == []
    assert requests(result)["r1"].ends_at == at("15:40:01")


def test_rid_mentioned_inside_the_prompt_does_not_confuse_the_request_id() -> None:
    text = (
        "[2026-11-20 15:40:00] Receive: obj=GenerateReqInput(rid='real-1', text=\"set rid='x'\")\n"
        "[2026-11-20 15:40:01] Receive: obj=GenerateReqInput(text=\"please use rid='evil'\", "
        "rid='real-2')\n"
    )
    assert list(requests(parse(text))) == ["real-1", "real-2"]


def test_double_quoted_rid_pairs_with_its_finish() -> None:
    text = (
        '[2026-11-20 15:40:00] Receive: obj=GenerateReqInput(rid="abc", text="hi")\n'
        "[2026-11-20 15:40:07] Finish: obj=GenerateReqInput(rid='abc'), out={}\n"
    )
    event = requests(parse(text))["abc"]
    assert (event.at, event.ends_at, event.attrs["finished"]) == (
        at("15:40:00"),
        at("15:40:07"),
        True,
    )


def test_finish_without_receive_is_a_warning_and_no_event() -> None:
    text = "[2026-11-20 15:40:07] Finish: obj=GenerateReqInput(rid='lost'), out={}\n"
    result = parse(text)
    assert requests(result) == {}
    assert result.warnings == [
        "server.log:1: Finish for request lost whose Receive is not in this file; no request "
        "event (kept for the same server's earlier log, if given)"
    ]
    (span,) = [e for e in result.events if e.kind == EventKind.LOG_SPAN]
    assert span.attrs["finishes"] == {"lost": "2026-11-20T23:40:07+00:00"}


# --- errors and lines -----------------------------------------------------------------------------


def test_bracketed_error_line_takes_following_traceback_into_one_event() -> None:
    text = (
        "[2026-11-20 15:40:00 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "scheduler.py", line 2100, in run_scheduler_process\n'
        "torch.OutOfMemoryError: CUDA out of memory.\n"
        "[2026-11-20 15:40:01] ERROR:    Exception in ASGI application\n"
    )
    found = errors(parse(text))
    assert [e.line for e in found] == [1, 4]
    assert "torch.OutOfMemoryError" in found[0].body
    assert found[0].title.startswith("Scheduler hit an exception")


def test_traceback_before_the_first_timestamp_takes_the_first_time() -> None:
    text = "Traceback (most recent call last):\nKeyError: 'x'\n[2026-11-20 15:40:00] ready\n"
    found = errors(parse(text))
    assert [(e.line, e.at) for e in found] == [(1, at("15:40:00"))]


def test_uvicorn_access_lines_are_not_events() -> None:
    text = (
        '[2026-11-20 15:40:00] INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1" 200 OK\n'
        'INFO:     127.0.0.1:2 - "GET /health HTTP/1.1" 200 OK\n'
    )
    result = parse(text)
    assert [e.kind for e in result.events] == [EventKind.LOG_SPAN]
    assert result.events[0].attrs == {"lines": 2, "requests": 0, "unfinished": 0}


def test_naive_times_use_the_context_timezone_and_millis_are_kept() -> None:
    text = "[2026-11-20 15:40:00,250] Receive: obj=GenerateReqInput(rid='m', text='')\n"
    event = requests(parse(text))["m"]
    assert event.at == dt.datetime(2026, 11, 20, 23, 40, 0, 250000, tzinfo=UTC)
    utc = parse(text, ParseContext("server.log"))
    assert requests(utc)["m"].at == dt.datetime(2026, 11, 20, 15, 40, 0, 250000, tzinfo=UTC)


def test_data_parallel_rank_is_a_label_too() -> None:
    text = (
        "[2026-11-20 15:40:00 DP1 TP0] Decode batch. #running-req: 3, "
        "gen throughput (token/s): 5.0\n"
    )
    labels = {b.key.labels for b in parse(text).samples}
    assert labels == {(("dp", "DP1"), ("source", "server_log"), ("tp", "TP0"))}


def test_log_without_timestamped_lines_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse("INFO:     Started server process [1]\nhello\n")
    assert (caught.value.line, caught.value.message) == (
        1,
        "expected SGLang log lines starting with [YYYY-MM-DD HH:MM:SS]",
    )


def test_impossible_date_is_a_parse_error_on_its_line() -> None:
    with pytest.raises(ParseError) as caught:
        parse("[2026-11-20 15:40:00] ok\n[2026-11-31 15:40:01] Decode batch. #running-req: 1\n")
    assert caught.value.line == 2
    assert "invalid timestamp [2026-11-31 15:40:01]" in caught.value.message


def test_non_numeric_batch_field_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse("[2026-11-20 15:40:00 TP0] Decode batch. #running-req: two, #queue-req: 0\n")
    assert caught.value.line == 1
    assert "expected a number after '#running-req:'" in caught.value.message


def test_undecodable_bytes_are_a_parse_error() -> None:
    with pytest.raises(ParseError) as caught:
        parse_sglang_log(b"[2026-11-20 15:40:00] ok\n\xff\xfe\n", CTX)
    assert caught.value.line == 2


def test_looks_like_sglang_log() -> None:
    head = (FIXTURES / "sglang_wedge.log").read_bytes()[:400]
    assert looks_like_sglang_log("server.log", head)
    assert not looks_like_sglang_log("x.prom", b"# TYPE up gauge\nup 1\n")
    assert not looks_like_sglang_log("x.log", b"2026-11-20 15:40:00 INFO started\n")


# --- what the server did to running requests (retract, orphan output, abort) -------------------


def test_orphan_outputs_and_aborts_fold_into_one_event_each_naming_their_rids() -> None:
    # The shapes SGLang's TokenizerManager and scheduler log (WARNING / INFO, no ERROR word):
    # without this, a burst of them was no event at all.
    result = parse(
        "[2026-11-20 10:00:00] Receive: obj=GenerateReqInput(rid='a1b2', text='hi')\n"
        "[2026-11-20 10:00:05] Abort request a1b2\n"
        "[2026-11-20 10:00:06] Abort request c3d4\n"
        "[2026-11-20 10:00:07] Received output for rid='a1b2' but the state was deleted in "
        "TokenizerManager.\n"
        "[2026-11-20 10:00:07] Received output for rid='a1b2' but the state was deleted in "
        "TokenizerManager.\n"
        "[2026-11-20 10:00:08] Received output for rid='e5f6' but the state was deleted in "
        "TokenizerManager.\n"
        "[2026-11-20 10:30:00] Abort request g7h8\n"
    )
    notices = [e for e in result.events if e.kind == EventKind.LOG_ERROR]
    by_kind = [(e.attrs["notice"], e.attrs["lines"], e.attrs.get("rids")) for e in notices]
    assert by_kind == [
        ("abort", 2, ["a1b2", "c3d4"]),
        ("orphan output", 3, ["a1b2", "e5f6"]),
        ("abort", 1, ["g7h8"]),  # half an hour later: a burst of its own
    ]
    assert all("symptom" not in e.attrs for e in notices)  # said, not judged a symptom
    assert notices[0].ends_at is not None and notices[0].ends_at > notices[0].at
