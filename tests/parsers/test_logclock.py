"""Time you can trust in a server log (issue 13): local times across a DST change are read from
the order of the lines; a skipped hour is a warning, never a crash."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from evidence.vocabulary import EventKind
from ingest.parsers.serverlog import parse_sglang_log
from ingest.parsers.types import ParseContext, ParseResult

LA = ZoneInfo("America/Los_Angeles")
UTC = dt.UTC
DECODE = (
    "Decode batch. #running-req: {n}, #token: 9, token usage: 0.20, "
    "gen throughput (token/s): {tput}, #queue-req: 0,"
)


def parse(lines: list[str], tz: dt.tzinfo = LA) -> ParseResult:
    return parse_sglang_log(("\n".join(lines) + "\n").encode(), ParseContext("s.log", tz=tz))


def running(result: ParseResult) -> list[tuple[dt.datetime, float]]:
    block = next(b for b in result.samples if b.key.name == "sglang:num_running_reqs")
    return [
        (dt.datetime.fromtimestamp(t / 1000, tz=UTC), v)
        for t, v in zip(block.ts_ms, block.values, strict=True)
    ]


# The night of 2026-11-01 in Los Angeles: 01:00-01:59 happens twice (PDT, then PST).
FALL_BACK_NIGHT = [
    "[2026-11-01 00:50:00] server_args=ServerArgs(model_path='/m', tp_size=8)",
    "[2026-11-01 00:51:00] The server is fired up and ready to roll!",
    *(
        f"[2026-11-01 {hhmm}:00 TP0] " + DECODE.format(n=2, tput="80.00")
        for hhmm in ("00:55", "01:10", "01:40", "01:59")
    ),
    # clocks go back: the second pass of 01:xx
    "[2026-11-01 01:00:30 TP0] " + DECODE.format(n=2, tput="80.00"),
    "[2026-11-01 01:20:00] Receive: obj=GenerateReqInput(rid='stuck-1', text='hi')",
    "[2026-11-01 01:20:05 TP0] " + DECODE.format(n=3, tput="0.00"),
    "[2026-11-01 01:20:04] ERROR first bad: the scheduler stopped",
    "[2026-11-01 01:45:00 TP0] " + DECODE.format(n=3, tput="0.00"),
    "[2026-11-01 02:10:00 TP0] " + DECODE.format(n=3, tput="0.00"),
]


def test_a_log_across_the_fall_back_night_keeps_its_order() -> None:
    result = parse(FALL_BACK_NIGHT)
    times = [at for at, _ in running(result)]
    assert times == sorted(times)  # never back
    assert [t.strftime("%H:%M") for t in times] == [
        "07:55",  # 00:55 PDT
        "08:10",
        "08:40",
        "08:59",  # 01:59 PDT
        "09:00",  # 01:00:30 PST: the second pass, not an hour back
        "09:20",
        "09:45",
        "10:10",  # 02:10 PST
    ]


def test_the_first_bad_moment_in_the_second_pass_does_not_jump_an_hour() -> None:
    result = parse(FALL_BACK_NIGHT)
    (error,) = [e for e in result.events if e.kind == EventKind.LOG_ERROR]
    assert error.at == dt.datetime(2026, 11, 1, 9, 20, 4, tzinfo=UTC)  # 01:20:04 PST
    (stuck,) = [e for e in result.events if e.kind == EventKind.REQUEST]
    assert stuck.at == dt.datetime(2026, 11, 1, 9, 20, tzinfo=UTC)
    (start,) = [e for e in result.events if e.kind == EventKind.SERVER_START]
    assert start.ends_at == dt.datetime(2026, 11, 1, 10, 10, tzinfo=UTC)
    # what was resolved is said, and kept for the check against the metrics
    assert [w.split(":", 2)[1] for w in result.warnings] == ["4", "7"]
    assert "as its first pass (UTC-07:00)" in result.warnings[0]
    assert (
        "lines 7-11" in result.warnings[1]
        and "as its second pass (UTC-08:00)" in (result.warnings[1])
    )
    (span,) = [e for e in result.events if e.kind == EventKind.LOG_SPAN]
    assert [(w["how"], w["fold"], w["lines"]) for w in span.attrs["clock"]] == [
        ("repeated", 0, [4, 6]),
        ("repeated", 1, [7, 11]),
    ]


def test_lines_a_few_seconds_out_of_order_stay_in_the_first_pass() -> None:
    result = parse(
        [
            "[2026-11-01 01:59:58 TP0] " + DECODE.format(n=1, tput="1.00"),
            "[2026-11-01 01:59:55 TP1] " + DECODE.format(n=1, tput="1.00"),
        ]
    )
    assert {e.ends_at for e in result.events if e.kind == EventKind.LOG_SPAN} == {
        dt.datetime(2026, 11, 1, 8, 59, 58, tzinfo=UTC)
    }


def test_a_log_that_opens_inside_the_repeated_hour_says_it_assumed_the_first_pass() -> None:
    result = parse(["[2026-11-01 01:30:00] The server is fired up and ready to roll!"])
    (start,) = [e for e in result.events if e.kind == EventKind.SERVER_START]
    assert start.at == dt.datetime(2026, 11, 1, 8, 30, tzinfo=UTC)
    assert "nothing earlier in the log tells which pass: read as the first" in result.warnings[0]


def test_a_spring_forward_gap_is_a_warning_not_a_crash() -> None:
    # 2026-03-08 02:00-02:59 does not exist in Los Angeles: a log that shows it was not written
    # in that zone (or its clock was not moved); its lines are read, in order, and flagged.
    result = parse(
        [
            "[2026-03-08 01:59:00 TP0] " + DECODE.format(n=1, tput="50.00"),
            "[2026-03-08 02:30:00 TP0] " + DECODE.format(n=1, tput="50.00"),
            "[2026-03-08 02:31:00] ERROR boom",
            "[2026-03-08 03:01:00 TP0] " + DECODE.format(n=1, tput="50.00"),
        ]
    )
    times = {at for at, _ in running(result)}
    assert times == {
        dt.datetime(2026, 3, 8, 9, 59, tzinfo=UTC),
        dt.datetime(2026, 3, 8, 10, 30, tzinfo=UTC),  # 02:30 at UTC-08:00
        dt.datetime(2026, 3, 8, 10, 1, tzinfo=UTC),  # 03:01 PDT, a plain time
    }
    (warning,) = result.warnings
    assert warning.startswith("s.log:2: 2 line(s), lines 2-3 carry local times that do not exist")
    assert "the log's clock may not be in America/Los_Angeles" in warning
    (span,) = [e for e in result.events if e.kind == EventKind.LOG_SPAN]
    assert span.attrs["clock"][0]["how"] == "skipped"


def test_a_log_in_utc_has_no_dst_and_no_warning() -> None:
    result = parse(FALL_BACK_NIGHT, tz=UTC)
    assert result.warnings == []
    assert "clock" not in next(e for e in result.events if e.kind == EventKind.LOG_SPAN).attrs
