"""Stack dumps: py-spy text and Go goroutine dumps."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from evidence.vocabulary import EventKind, Lane
from ingest.parsers.goroutines import looks_like_goroutines, parse_goroutines
from ingest.parsers.pyspy import looks_like_pyspy, parse_pyspy
from ingest.parsers.stacks import capture_time
from ingest.parsers.types import (
    ParseContext,
    ParseError,
)
from tests.parsers.golden import (
    assert_golden,  # noqa: E402
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "dumps"
LA = ZoneInfo("America/Los_Angeles")
UTC = dt.UTC
PYSPY = "scheduler_2026-11-20T15-45-00.pyspy.txt"
GOROUTINES = "agent-harness-20261120T154600.goroutines.txt"


def _ctx(name: str, default_time: dt.datetime | None = None) -> ParseContext:
    return ParseContext(name=name, tz=LA, default_time=default_time)


# --- py-spy ---------------------------------------------------------------------------------------


def test_pyspy_matches_its_golden_file() -> None:
    result = parse_pyspy((FIXTURES / PYSPY).read_bytes(), _ctx(f"dumps/{PYSPY}"))
    assert_golden(result, FIXTURES / f"{PYSPY}.expected.json")


def test_pyspy_dump_is_one_event_with_threads_and_frames() -> None:
    data = (FIXTURES / PYSPY).read_bytes()
    result = parse_pyspy(data, _ctx(PYSPY))
    assert result.kind == "pyspy_dump"
    [event] = result.events
    assert (event.kind, event.lane) == (EventKind.STACK_DUMP, Lane.DUMPS)
    assert event.at == dt.datetime(2026, 11, 20, 23, 45, tzinfo=UTC)  # 15:45 PST
    assert event.title == "py-spy dump of scheduler (pid 48213): 3 threads, 1 active"
    assert event.key == f"py-spy:{PYSPY}:{hashlib.sha256(data).hexdigest()[:16]}"
    attrs = event.attrs
    assert (attrs["format"], attrs["pid"], attrs["cmdline"], attrs["python"]) == (
        "py-spy",
        48213,
        "sglang::scheduler",
        "3.11.9",
    )
    threads = attrs["threads"]
    assert [(t["id"], t["state"], t["name"]) for t in threads] == [
        ("0x7F3A2B4C5740", "active", "MainThread"),
        ("0x7F38E77FE640", "idle", "Thread-2 (watchdog_thread)"),
        ("0x7F38E6FFD640", "idle", "Thread-3 (_thread_main)"),
    ]
    main = threads[0]["frames"]
    assert main[0] == {
        "func": "synchronize",
        "file": "torch/cuda/streams.py",
        "line": 224,
        "arguments": {"self": "<Event at 0x7f3a1c0e2d10>"},
    }
    assert main[1]["locals"] == {
        "result": "<GenerationBatchResult at 0x7f39d4a1b9d0>",
        "batch": "<ScheduleBatch at 0x7f39d4a1ba30>",
    }
    assert main[-1] == {"func": "<module>", "file": "<string>", "line": 1}
    assert len(main) == 9


def test_pyspy_without_thread_names_or_line_numbers() -> None:
    data = (
        b"Process 7: /usr/bin/python3 -m sglang.launch_server --tp 8\n"
        b"Python v3.11.9 (/usr/bin/python3.11)\n\n"
        b"Thread 0x7F00 (active+gil)\n    <native> (libcuda.so.1)\n    step (model.py:10)\n"
    )
    [event] = parse_pyspy(data, _ctx("x", dt.datetime(2026, 11, 20, 15, 0, tzinfo=UTC))).events
    assert event.title == "py-spy dump of launch_server (pid 7): 1 thread, 1 active"
    [thread] = event.attrs["threads"]
    assert thread["name"] == ""
    assert thread["frames"] == [
        {"func": "<native>", "file": "libcuda.so.1", "line": None},
        {"func": "step", "file": "model.py", "line": 10},
    ]


def test_pyspy_with_two_processes_keeps_each_threads_pid() -> None:
    one = b'Process 1: a\nPython v3.11.9\nThread 0x1 (idle): "MainThread"\n    f (a.py:1)\n'
    two = b'Process 2: b\nPython v3.11.9\nThread 0x2 (active): "MainThread"\n    g (b.py:2)\n'
    result = parse_pyspy(one + two, _ctx("dump_20261120T154500.txt"))
    assert [t["pid"] for t in result.events[0].attrs["threads"]] == [1, 2]
    assert result.warnings and "2 processes" in result.warnings[0]


@pytest.mark.parametrize(
    ("data", "line", "message"),
    [
        (b"hello\n", 1, "expected py-spy's 'Process <pid>: <command line>' header"),
        (b"Process 1: x\nPython v3.11.9\nnot a thread\n", 3, "expected 'Thread 0x7F..."),
        (b'Process 1: x\nThread 0x1 (idle): "m"\n    no frame here\n', 3, "expected a frame"),
        (b'Process 1: x\nThread 0x1 (idle): "m"\n    f (a.py:1)\n        junk\n', 4,
         "expected 'Arguments:', 'Locals:' or 'name: value'"),
        (b"Process 1: x\n\xff\n", 2, "expected UTF-8 text"),
    ],
)  # fmt: skip
def test_pyspy_bad_input_names_the_line(data: bytes, line: int, message: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_pyspy(data, _ctx("d_2026-11-20T15-45-00.txt"))
    assert err.value.line == line
    assert err.value.message.startswith(message)


def test_looks_like_pyspy() -> None:
    assert looks_like_pyspy("x", (FIXTURES / PYSPY).read_bytes()[:200])
    assert not looks_like_pyspy("x", (FIXTURES / GOROUTINES).read_bytes()[:200])
    assert not looks_like_pyspy("x", b"Process finished with exit code 0\n")


# --- goroutines -----------------------------------------------------------------------------------


def test_goroutine_dump_matches_its_golden_file() -> None:
    result = parse_goroutines((FIXTURES / GOROUTINES).read_bytes(), _ctx(f"dumps/{GOROUTINES}"))
    assert_golden(result, FIXTURES / f"{GOROUTINES}.expected.json")


def test_goroutines_are_grouped_by_identical_stack_most_first() -> None:
    data = (FIXTURES / GOROUTINES).read_bytes()
    result = parse_goroutines(data, _ctx(GOROUTINES))
    assert result.kind == "goroutine_dump"
    [event] = result.events
    assert event.at == dt.datetime(2026, 11, 20, 23, 46, tzinfo=UTC)
    assert event.key == f"goroutines:{GOROUTINES}:{hashlib.sha256(data).hexdigest()[:16]}"
    assert event.title == (
        "goroutine dump: 8 goroutines, 5 in net/http.(*persistConn).roundTrip [select]"
    )
    assert event.attrs["format"] == "goroutines"
    assert event.attrs["total"] == 8
    groups = event.attrs["groups"]
    summary = [
        (g["count"], g["state"], g["wait_minutes_max"], g["ids"], g["created_by"]) for g in groups
    ]
    assert summary == [
        (5, "select", 6, [17, 18, 19, 21, 23], "main.(*Harness).Start"),
        (2, "IO wait", 6, [33, 35], "net/http.(*Transport).dialConn"),
        (1, "chan receive", 6, [1], ""),
    ]
    top = groups[0]["frames"]
    assert top[2] == {
        "func": "net/http.(*persistConn).roundTrip",
        "file": "/usr/local/go/src/net/http/transport.go",
        "line": 2675,
    }
    assert top[4]["func"] == "net/http.(*Transport).RoundTrip"  # a "(...)" elided call
    assert len(top) == 11


def test_goroutine_ids_are_capped_at_twenty_per_group() -> None:
    block = "goroutine {n} [IO wait]:\nmain.f()\n\t/src/m.go:3 +0x1\n\n"
    data = "".join(block.format(n=n) for n in range(1, 26)).encode()
    [event] = parse_goroutines(data, _ctx("g_2026-11-20T15:46:00Z.txt")).events
    [group] = event.attrs["groups"]
    assert (group["count"], group["ids"], group["wait_minutes_max"]) == (
        25,
        list(range(1, 21)),
        None,
    )
    assert event.at == dt.datetime(2026, 11, 20, 15, 46, tzinfo=UTC)


def test_goroutine_call_without_its_file_line_is_an_error() -> None:
    data = b"goroutine 1 [running]:\nmain.main()\nmain.other()\n\t/m.go:1\n"
    with pytest.raises(ParseError) as err:
        parse_goroutines(data, _ctx("g_20261120T154600.txt"))
    assert err.value.line == 3
    assert "expected a '\\t/path/file.go:123 +0x1d' line after 'main.main'" in err.value.message


def test_text_without_goroutines_is_an_error() -> None:
    with pytest.raises(ParseError, match="expected at least one 'goroutine <id> \\[<state>\\]:'"):
        parse_goroutines(b"panic: nothing\n", _ctx("g_20261120T154600.txt"))


def test_looks_like_goroutines() -> None:
    assert looks_like_goroutines("x", (FIXTURES / GOROUTINES).read_bytes()[:300])
    assert looks_like_goroutines("x", b"goroutine 1 gp=0xc000002380 m=0 mp=0x1 [running]:\n")
    assert not looks_like_goroutines("x", (FIXTURES / PYSPY).read_bytes())


# --- capture time -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("dumps/scheduler_2026-11-20T15-45-00.txt", dt.datetime(2026, 11, 20, 23, 45)),
        ("dumps/harness-20261120T154600.txt", dt.datetime(2026, 11, 20, 23, 46)),
        ("dump-2026-11-20T15:45:00Z.txt", dt.datetime(2026, 11, 20, 15, 45)),
        ("dump-2026-11-20T15:45:00-08:00.txt", dt.datetime(2026, 11, 20, 23, 45)),
        ("2026-11-20/dump_20261120_154512.txt", dt.datetime(2026, 11, 20, 23, 45, 12)),
    ],
)
def test_capture_time_comes_from_the_file_name(name: str, expected: dt.datetime) -> None:
    assert capture_time(_ctx(name)) == expected.replace(tzinfo=UTC)


def test_capture_time_falls_back_to_the_default_time() -> None:
    at = dt.datetime(2026, 11, 20, 15, 45, tzinfo=LA)
    assert capture_time(_ctx("scheduler.txt", at)) == dt.datetime(2026, 11, 20, 23, 45, tzinfo=UTC)
    # Digits that are no date (build 20261399T999999) do not count as a time.
    assert capture_time(_ctx("build-20261399T999999.txt", at)) == at.astimezone(UTC)


def test_dump_without_any_capture_time_is_an_error() -> None:
    data = (FIXTURES / GOROUTINES).read_bytes()
    with pytest.raises(ParseError) as err:
        parse_goroutines(data, _ctx("goroutines.txt"))
    assert err.value.line == 0
    assert err.value.message.startswith("a stack dump needs a capture time")
    assert "--at" in err.value.message
