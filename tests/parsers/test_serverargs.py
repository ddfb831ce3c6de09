"""SGLang start-up in the server log: the ServerArgs line field by field, starts, ready,
shutdown, restarts, crash loops and the symptom of each server error (issue 13)."""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from evidence.vocabulary import EventKind, Lane, SymptomKind
from ingest.parsers import serverargs
from ingest.parsers.serverlog import parse_sglang_log
from ingest.parsers.types import ParseContext, ParseError, ParseResult

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "sglang"
PST = ZoneInfo("America/Los_Angeles")


def parse(text: str, name: str = "server.log") -> ParseResult:
    return parse_sglang_log(text.encode(), ParseContext(name, tz=PST))


def real(name: str) -> ParseResult:
    return parse_sglang_log((REAL / name).read_bytes(), ParseContext(name))


def starts(result: ParseResult) -> list[object]:
    return [e for e in result.events if e.kind == EventKind.SERVER_START]


def by_ast(line: str) -> dict[str, str]:
    """The fields of a ServerArgs line read another way, for the tests only: Python's own
    parser (the real lines are all literals), each value's source text as written."""
    text = line[serverargs.find(line) :]
    text = text[: text.rindex(")") + 1]
    call = ast.parse(text, mode="eval").body
    assert isinstance(call, ast.Call) and not call.args
    out = {}
    for kw in call.keywords:
        assert kw.arg is not None
        segment = ast.get_source_segment(text, kw.value)
        assert segment is not None
        out[kw.arg] = segment
    return out


# --- the line itself ----------------------------------------------------------------------------


def test_values_are_kept_as_logged_with_nested_brackets_quotes_and_escapes() -> None:
    line = (
        "ServerArgs(model_path='/m/a,b(c)', chunked_prefill_size=8192, "
        'json_model_override_args=\'{"rope": [1, 2], "x": "a)b"}\', '
        "cuda_graph_bs=[1, 2, 4, 8], "
        "speculative_algorithm=None, lora_paths=None, mm_process_config={}, "
        "quote='it\\'s, \"here\"', nested={'a': (1, [2, {3: ')'}])}, flag=True, "
        "ratio=0.88, enum=<Policy.LPM: 'lpm'>, empty='')"
    )
    assert serverargs.read(line) == {
        "model_path": "'/m/a,b(c)'",
        "chunked_prefill_size": "8192",
        "json_model_override_args": '\'{"rope": [1, 2], "x": "a)b"}\'',
        "cuda_graph_bs": "[1, 2, 4, 8]",
        "speculative_algorithm": "None",
        "lora_paths": "None",
        "mm_process_config": "{}",
        "quote": "'it\\'s, \"here\"'",
        "nested": "{'a': (1, [2, {3: ')'}])}",
        "flag": "True",
        "ratio": "0.88",
        "enum": "<Policy.LPM: 'lpm'>",
        "empty": "''",
    }


def test_logged_values_read_as_literals_for_effective_comparison() -> None:
    assert serverargs.literal("8192") == 8192
    assert serverargs.literal("'fa3'") == "fa3"
    assert serverargs.literal("None") is None
    assert serverargs.literal("True") is True
    assert serverargs.literal("[1, 2]") == [1, 2]
    assert serverargs.literal("'{}'") == "{}"
    for text in ("<Policy.LPM: 'lpm'>", "__import__('os').system('true')", "device(type='cuda')"):
        with pytest.raises(ValueError, match="not a literal"):
            serverargs.literal(text)


def test_empty_server_args_has_no_fields() -> None:
    assert serverargs.read("ServerArgs()") == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ServerArgs(model_path='/m', tp_size=8", "ServerArgs( is not closed"),
        ("ServerArgs(model_path='/m, tp_size=8)", "string opened with ' is not closed"),
        ("ServerArgs(cuda_graph_bs=[1, 2, tp_size=8", "'[' is not closed"),
        ("ServerArgs(cuda_graph_bs=[1, 2), tp_size=8)", "')' closes '['"),
        ("ServerArgs(model_path='/m', 8)", "expected name=value, got '8'"),
        ("ServerArgs(tp_size=8, tp_size=4)", "the field tp_size is given twice"),
        ("ServerArgs(tp_size=8,, x=1)", "expected name=value between two commas"),
    ],
)
def test_bad_server_args_text_says_what_was_expected(text: str, expected: str) -> None:
    with pytest.raises(serverargs.ServerArgsError) as err:
        serverargs.read(text)
    assert expected in err.value.message


def test_a_cut_server_args_line_is_a_parse_error_naming_file_and_line() -> None:
    text = (
        "[2026-11-20 08:00:00] Load weight begin.\n"
        "[2026-11-20 08:00:01] server_args=ServerArgs(model_path='/m', cuda_graph_bs=[1, 2,\n"
    )
    with pytest.raises(ParseError) as err:
        parse(text)
    assert err.value.file == "server.log" and err.value.line == 2
    assert "'[' is not closed (the line may have been cut)" in str(err.value)


# --- real start-up logs -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("glm5_rocm_two_launches_sigquit.log", [12, 1060]),
        ("glm5_rocm_hip_oom.log", [15]),
        ("llms_in_clouds_qwq32b_start_ready.log", [2]),
    ],
)
def test_every_field_of_the_real_server_args_lines_is_read_as_logged(
    name: str, lines: list[int]
) -> None:
    raw = (REAL / name).read_text().splitlines()
    found = starts(real(name))
    assert [e.attrs["line"] for e in found] == lines
    for event, lineno in zip(found, lines, strict=True):
        expected = by_ast(raw[lineno - 1])
        assert event.attrs["server_args"] == expected
        assert list(event.attrs["server_args"]) == list(expected)  # logged order kept
        assert event.title.endswith(f"{len(expected)} args")


def test_real_server_args_values_by_example() -> None:
    glm = starts(real("glm5_rocm_two_launches_sigquit.log"))
    first = glm[0].attrs["server_args"]
    assert len(first) == 327
    assert first["model_path"] == "'zai-org/GLM-5-FP8'"
    assert first["tp_size"] == "8"
    assert first["kv_cache_dtype"] == "'fp8_e4m3'"
    assert first["json_model_override_args"] == "'{}'"
    assert first["speculative_algorithm"] == "None"
    assert first["lora_paths"] == "None"
    assert first["uvicorn_access_log_exclude_prefixes"] == "[]"
    bs = first["cuda_graph_bs"]
    assert bs.startswith("[1, 2, 4, 8, 12,") and bs.endswith("496, 512]")
    assert first["mm_process_config"] == "{}"
    qwq = starts(real("llms_in_clouds_qwq32b_start_ready.log"))[0].attrs["server_args"]
    assert len(qwq) == 107
    assert qwq["chunked_prefill_size"] == "2048"
    assert qwq["cuda_graph_bs"] == "None"
    assert qwq["mem_fraction_static"] == "0.85"


def test_two_launches_in_one_log_are_two_starts_each_ending_at_its_sigquit() -> None:
    found = starts(real("glm5_rocm_two_launches_sigquit.log"))
    assert [(e.at.isoformat(), e.ends_at.isoformat()) for e in found] == [
        ("2026-02-26T05:19:58+00:00", "2026-02-26T05:35:13+00:00"),
        ("2026-02-26T05:43:36+00:00", "2026-02-26T05:59:01+00:00"),
    ]
    assert [e.attrs["shutdown_at"] for e in found] == [
        "2026-02-26T05:35:13+00:00",
        "2026-02-26T05:59:01+00:00",
    ]
    assert all(e.lane == Lane.LIVE_CONFIG and e.attrs["ready_at"] is None for e in found)
    assert "Down at line" in found[0].body and "Received sigquit" in found[0].body
    # what the second launch changed: what an operator would diff
    a, b = (e.attrs["server_args"] for e in found)
    changed = {k for k in a.keys() & b.keys() if a[k] != b[k]}
    assert "random_seed" in changed
    assert found[0].key != found[1].key


def test_a_start_that_came_up_has_its_pid_and_ready_time_and_runs_to_the_end() -> None:
    (start,) = starts(real("llms_in_clouds_qwq32b_start_ready.log"))
    assert start.title == "Server start (pid 3207): 107 args"
    assert start.attrs["pid"] == 3207
    assert start.attrs["ready_at"] == "2025-03-08T12:29:33+00:00"
    assert start.attrs["shutdown_at"] is None
    assert start.ends_at == dt.datetime(2025, 3, 8, 12, 29, 47, tzinfo=dt.UTC)
    assert "fired up and ready to roll" in start.body and "chunked_prefill_size=2048" in start.body


# --- restarts without real logs of them: written the way SGLang and uvicorn print -----------


DECODE = (
    "Decode batch. #running-req: 1, #token: 10, token usage: 0.10, "
    "gen throughput (token/s): 50.00, #queue-req: 0,"
)
RESTARTS = f"""\
[2026-11-20 08:00:00] server_args=ServerArgs(model_path='/m', chunked_prefill_size=8192, tp_size=8)
[2026-11-20 08:00:30] INFO:     Started server process [4100]
[2026-11-20 08:00:31] The server is fired up and ready to roll!
[2026-11-20 09:00:00] INFO:     Shutting down
[2026-11-20 09:00:01] INFO:     Finished server process [4100]
[2026-11-20 09:05:00] server_args=ServerArgs(model_path='/m', chunked_prefill_size=16384, tp_size=8)
INFO:     Started server process [4200]
[2026-11-20 09:05:40] The server is fired up and ready to roll!
[2026-11-20 10:00:00 TP0] {DECODE}
[2026-11-20 10:30:00] The server is fired up and ready to roll!
[2026-11-20 10:40:00 TP0] {DECODE}
"""


def test_each_restart_is_its_own_start_with_its_own_configuration() -> None:
    found = starts(parse(RESTARTS))
    local = [e.at.astimezone(PST).strftime("%H:%M:%S") for e in found]
    assert local == ["08:00:00", "09:05:00", "10:30:00"]
    first, second, third = found
    assert first.attrs["pid"] == 4100 and second.attrs["pid"] == 4200
    assert first.attrs["server_args"]["chunked_prefill_size"] == "8192"
    assert second.attrs["server_args"]["chunked_prefill_size"] == "16384"
    # the first went down at "Shutting down"; the second was never seen to go down: it ends at
    # the last line before the next start; the third (no ServerArgs line) at the end of the log
    assert first.ends_at.astimezone(PST).strftime("%H:%M:%S") == "09:00:00"
    assert second.ends_at.astimezone(PST).strftime("%H:%M:%S") == "10:00:00"
    assert third.ends_at.astimezone(PST).strftime("%H:%M:%S") == "10:40:00"
    assert third.attrs["server_args"] == {} and third.title == "Server start: no ServerArgs line"
    assert second.title == "Server start (pid 4200): 3 args"


def test_an_excerpt_that_begins_with_the_ready_line_still_has_its_start() -> None:
    (start,) = starts(parse("[2026-11-20 10:30:00] The server is fired up and ready to roll!\n"))
    assert start.attrs["server_args"] == {} and start.attrs["line"] == 1
    assert start.attrs["ready_at"] == start.at.isoformat()


def test_reading_the_same_bytes_twice_gives_the_same_keys_and_another_file_too() -> None:
    keys = [e.key for e in starts(parse(RESTARTS))]
    assert keys == [e.key for e in starts(parse(RESTARTS))]
    assert keys == [e.key for e in starts(parse(RESTARTS, name="copy-of-server.log"))]
    assert len(set(keys)) == 3
    # an excerpt that lost the uvicorn lines (no pid) names the same two configured starts
    excerpt = "".join(line for line in RESTARTS.splitlines(True) if "Started server" not in line)
    assert [e.key for e in starts(parse(excerpt))][:2] == keys[:2]


def test_starts_in_quick_succession_are_a_crash_loop_symptom() -> None:
    text = "".join(
        f"[2026-11-20 08:0{m}:00] server_args=ServerArgs(model_path='/m', tp_size=8)\n"
        f"[2026-11-20 08:0{m}:20] Received sigquit from a child process. It usually means the "
        "child failed.\n"
        for m in range(4)
    )
    result = parse(text)
    loops = [e for e in result.events if e.attrs.get("symptom") == SymptomKind.CRASH_LOOP]
    (loop,) = loops
    assert loop.kind == EventKind.LOG_ERROR and loop.title == "Crash loop: 4 starts in 3 min"
    assert loop.attrs["starts"] == 4 and loop.attrs["went_down"] == 4
    assert loop.at.astimezone(PST).strftime("%H:%M") == "08:02"  # the third start
    assert len(starts(result)) == 4


def test_two_restarts_far_apart_are_no_crash_loop() -> None:
    assert not [e for e in parse(RESTARTS).events if e.attrs.get("symptom")]


# --- symptoms of server errors -----------------------------------------------------------------


def test_real_errors_carry_their_symptom_and_the_exception_as_headline() -> None:
    oom = [e for e in real("glm5_rocm_hip_oom.log").events if e.kind == EventKind.LOG_ERROR]
    assert {e.attrs["symptom"] for e in oom if "Scheduler" in e.title} == {SymptomKind.OOM}
    assert oom[0].title.startswith(
        "Scheduler hit an exception: torch.OutOfMemoryError: HIP out of memory."
    )
    crash = real("glm5_rocm_two_launches_sigquit.log").events
    scheduler = [e for e in crash if e.title.startswith("Scheduler hit an exception")]
    assert {e.title for e in scheduler} == {
        "Scheduler hit an exception: TypeError: cannot unpack non-iterable ForwardMetadata object"
    }
    assert {e.attrs["symptom"] for e in scheduler} == {SymptomKind.CRASH}
    sigquit = [e for e in crash if e.title.startswith("Received sigquit")]
    assert sigquit and {e.attrs["symptom"] for e in sigquit} == {SymptomKind.CRASH}
    watchdog = real("issue5034_watchdog_timeout.log").events
    # two ranks' copies of one timeout, in the same second: one event, its copy counted
    (timeout,) = [e for e in watchdog if e.kind == EventKind.LOG_ERROR]
    assert timeout.attrs["symptom"] == SymptomKind.WATCHDOG_TIMEOUT
    assert timeout.attrs["copies"] == 1
    # the batch the watchdog printed after it: the request it was running when it fired
    assert timeout.attrs["rids"] == ["71d702268ab8458b98bc40e7667f80ec"]


def test_a_traceback_under_one_request_is_an_error_but_no_crash() -> None:
    text = (
        "[2026-11-20 08:00:00] Exception in ASGI application\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in run_asgi\n'
        "ConnectionResetError: [Errno 104] Connection reset by peer\n"
        "[2026-11-20 08:00:01] ERROR: something odd\n"
    )
    errors = [e for e in parse(text).events if e.kind == EventKind.LOG_ERROR]
    assert [(e.title, e.attrs) for e in errors] == [
        ("ConnectionResetError: [Errno 104] Connection reset by peer", {}),
        ("ERROR: something odd", {}),
    ]


def test_an_older_server_args_line_without_a_time_takes_the_time_of_the_line_before() -> None:
    # SGLang 0.2 printed it bare (https://github.com/sgl-project/sglang/issues/1100)
    text = (
        "[2026-11-20 08:00:00] Launching\n"
        "server_args=ServerArgs(model_path='qwen/Qwen2-57B-A14B-Instruct-GPTQ-Int4', "
        "additional_ports=[8001, 8002, 8003, 8004], mem_fraction_static=0.87, "
        "chunked_prefill_size=None, schedule_policy='lpm', tp_size=2)\n"
        "[2026-11-20 08:01:00] The server is fired up and ready to roll!\n"
    )
    (start,) = starts(parse(text))
    assert start.attrs["line"] == 2
    assert start.at.astimezone(PST).strftime("%H:%M") == "08:00"
    assert start.attrs["server_args"]["additional_ports"] == "[8001, 8002, 8003, 8004]"
    assert start.attrs["ready_at"] is not None
