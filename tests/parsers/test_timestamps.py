"""The shared time rules (ingest/parsers/timestamps.py) and every parser keeping to them."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from ingest.parsers.docs import parse_markdown_doc
from ingest.parsers.gitlog import parse_git_log
from ingest.parsers.harness import parse_harness_jsonl, parse_junit
from ingest.parsers.lm_eval import parse_lm_eval
from ingest.parsers.nvidia_smi import parse_nvidia_smi
from ingest.parsers.prometheus import parse_exposition, parse_query_range
from ingest.parsers.pyspy import parse_pyspy
from ingest.parsers.serverlog import parse_sglang_log
from ingest.parsers.stacks import capture_time
from ingest.parsers.timestamps import (
    MAX_MS,
    MIN_MS,
    LocalTimeError,
    TimeError,
    epoch_ms,
    from_epoch,
    in_zone,
    ms_iso,
    parse_iso,
    parse_offset,
    to_epoch_ms,
    wall_clock,
)
from ingest.parsers.types import UTC, ParseContext, ParseError

LA = ZoneInfo("America/Los_Angeles")
# 2026 in Los Angeles: clocks jump 02:00 -> 03:00 on 8 March, go back 02:00 -> 01:00 on 1 November.
GAP = dt.datetime(2026, 3, 8, 2, 30)  # noqa: DTZ001 (a wall-clock reading)
TWICE = dt.datetime(2026, 11, 1, 1, 30)  # noqa: DTZ001
PLAIN = dt.datetime(2026, 11, 20, 15, 40)  # noqa: DTZ001


# --- the helpers ----------------------------------------------------------------------------------


def test_a_naive_time_is_a_wall_clock_reading_in_the_given_zone() -> None:
    assert in_zone(PLAIN, LA) == dt.datetime(2026, 11, 20, 23, 40, tzinfo=UTC)
    assert in_zone(PLAIN, UTC) == PLAIN.replace(tzinfo=UTC)


def test_an_aware_time_keeps_its_own_zone_whatever_zone_is_given() -> None:
    aware = dt.datetime(2026, 11, 20, 15, 40, tzinfo=dt.timezone(dt.timedelta(hours=-8)))
    assert in_zone(aware, ZoneInfo("Asia/Tokyo")) == dt.datetime(2026, 11, 20, 23, 40, tzinfo=UTC)
    assert in_zone(aware, LA).tzinfo is UTC


def test_a_wall_clock_time_that_happens_twice_is_reported_with_both_offsets() -> None:
    with pytest.raises(LocalTimeError) as caught:
        in_zone(TWICE, LA)
    message = str(caught.value)
    assert "2026-11-01 01:30:00 happens twice in America/Los_Angeles" in message
    assert "UTC-07:00 to UTC-08:00" in message
    assert "expected a time with a UTC offset" in message


def test_a_wall_clock_time_skipped_by_the_clocks_is_reported() -> None:
    with pytest.raises(LocalTimeError) as caught:
        wall_clock(2026, 3, 8, 2, 30, tz=LA)
    assert "2026-03-08 02:30:00 does not exist in America/Los_Angeles" in str(caught.value)


def test_the_hours_either_side_of_a_clock_change_are_read() -> None:
    assert wall_clock(2026, 11, 1, 0, 59, 59, tz=LA) == dt.datetime(
        2026, 11, 1, 7, 59, 59, tzinfo=UTC
    )
    assert wall_clock(2026, 11, 1, 2, 0, tz=LA) == dt.datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
    assert wall_clock(2026, 3, 8, 3, 0, tz=LA) == dt.datetime(2026, 3, 8, 10, 0, tzinfo=UTC)


def test_a_fixed_offset_zone_has_no_ambiguous_times() -> None:
    pst = dt.timezone(dt.timedelta(hours=-8))
    assert in_zone(TWICE, pst) == dt.datetime(2026, 11, 1, 9, 30, tzinfo=UTC)


def test_fields_that_make_no_date_are_a_time_error_not_a_local_time_error() -> None:
    with pytest.raises(TimeError) as caught:
        wall_clock(2026, 11, 31, tz=LA)
    assert not isinstance(caught.value, LocalTimeError)
    assert "expected a real date" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "hours"),
    [("Z", 0), ("UTC", 0), ("+08:00", 8), ("-0800", -8), ("+05:30", 5.5), ("-03", -3)],
)
def test_offsets_are_read_in_every_spelling(text: str, hours: float) -> None:
    assert parse_offset(text).utcoffset(None) == dt.timedelta(hours=hours)


@pytest.mark.parametrize("text", ["+8", "0800", "+25:00", "+08:0", "PST"])
def test_what_is_not_an_offset_is_a_time_error(text: str) -> None:
    with pytest.raises(TimeError, match="expected a UTC offset"):
        parse_offset(text)


def test_iso_times_with_and_without_a_zone() -> None:
    expected = dt.datetime(2026, 11, 20, 16, 0, tzinfo=UTC)
    assert parse_iso("2026-11-20T08:00:00-08:00", UTC) == expected
    assert parse_iso("2026-11-20T16:00:00Z", LA) == expected
    assert parse_iso(" 2026-11-20 08:00:00 ", LA) == expected
    with pytest.raises(TimeError, match="expected an ISO 8601 time"):
        parse_iso("20 Nov 2026", LA)
    with pytest.raises(LocalTimeError):
        parse_iso("2026-11-01T01:30:00", LA)


def test_epoch_numbers_in_each_unit_name_the_same_moment() -> None:
    moment = dt.datetime(2026, 11, 20, 23, 40, 0, 123000, tzinfo=UTC)
    assert from_epoch(1795218000.123, "s") == moment
    assert from_epoch(1795218000123, "ms") == moment
    assert from_epoch(1795218000123000, "us") == moment
    assert epoch_ms(1795218000.123, "s") == 1795218000123
    assert epoch_ms(1795218000123, "ms") == 1795218000123
    assert epoch_ms(1795218000123999, "us") == 1795218000123  # cut to the millisecond
    assert epoch_ms(1795218000, "s") == 1795218000000
    assert to_epoch_ms(moment) == 1795218000123
    assert ms_iso(1795218000123) == "2026-11-20T23:40:00.123000Z"


@pytest.mark.parametrize(
    ("value", "unit"),
    [
        (99999999999999999999, "ms"),
        (MAX_MS + 1, "ms"),
        (MIN_MS - 1, "ms"),
        (1e300, "s"),
        (-1e300, "s"),
        (float("nan"), "s"),
        (float("inf"), "ms"),
    ],
)
def test_an_epoch_number_outside_the_years_1_to_9999_is_a_time_error(
    value: float, unit: str
) -> None:
    with pytest.raises(TimeError):
        epoch_ms(value, unit)  # type: ignore[arg-type]
    with pytest.raises(TimeError):
        from_epoch(value, unit)  # type: ignore[arg-type]


def test_the_ends_of_the_range_are_times() -> None:
    assert from_epoch(MAX_MS, "ms").year == 9999
    assert from_epoch(MIN_MS, "ms").year == 1
    assert ms_iso(99999999999999999999) == "99999999999999999999 ms"


# --- every parser keeps to them ------------------------------------------------------------------


def _raises_at(line: int, needle: str, parse: object, data: bytes, ctx: ParseContext) -> None:
    with pytest.raises(ParseError) as caught:
        parse(data, ctx)  # type: ignore[operator]
    assert caught.value.line == line, caught.value
    assert needle in caught.value.message, caught.value


def test_a_server_log_line_in_the_repeated_hour_is_read_from_the_order_of_lines() -> None:
    # Issue 13: a server log's time never goes back, so its lines say which pass of the
    # repeated hour they are in (tests/parsers/test_logclock.py); it is no longer refused.
    log = b"[2026-11-01 00:59:58] Decode batch. #running-req: 1\n[2026-11-01 01:00:03] x\n"
    result = parse_sglang_log(log, ParseContext("s.log", tz=LA))
    # nothing went back, so 01:00:03 is the first pass (still daylight time, UTC-07:00)
    assert result.events[-1].ends_at == dt.datetime(2026, 11, 1, 8, 0, 3, tzinfo=UTC)
    assert "read from the order of the lines as its first pass" in result.warnings[0]
    # With the zone the log was written in, UTC, the same lines are plain times.
    result = parse_sglang_log(log, ParseContext("s.log", tz=UTC))
    assert result.events[-1].ends_at == dt.datetime(2026, 11, 1, 1, 0, 3, tzinfo=UTC)
    assert result.warnings == []


def test_an_nvidia_smi_row_in_the_skipped_hour_is_refused_at_its_line() -> None:
    csv = b"timestamp, index, utilization.gpu [%]\n2026/03/08 02:30:00.000, 0, 5 %\n"
    _raises_at(
        2,
        "does not exist in America/Los_Angeles",
        parse_nvidia_smi,
        csv,
        ParseContext("smi.csv", tz=LA),
    )


def test_a_changelog_item_in_the_repeated_hour_is_refused_at_its_line() -> None:
    doc = b"# Deploy\n\n## Changelog\n\n- 2026-11-01 01:30 set FOO=1\n"
    _raises_at(5, "happens twice", parse_markdown_doc, doc, ParseContext("d.md", tz=LA))
    with_offset = b"# Deploy\n\n## Changelog\n\n- 2026-11-01 01:30-08:00 set FOO=1\n"
    result = parse_markdown_doc(with_offset, ParseContext("d.md", tz=LA))
    assert result.config_changes[0].at == dt.datetime(2026, 11, 1, 9, 30, tzinfo=UTC)


def test_harness_times_in_the_repeated_hour_are_refused_at_their_line() -> None:
    run = {"ts": "2026-11-01T01:30:00", "suite": "s", "case": "c", "status": "pass"}
    jsonl = b"\n" + json.dumps(run).encode() + b"\n"
    _raises_at(2, "happens twice", parse_harness_jsonl, jsonl, ParseContext("h.jsonl", tz=LA))
    junit = (
        b'<testsuite name="s" timestamp="2026-11-01T01:30:00">\n'
        b'<testcase name="c"/>\n</testsuite>\n'
    )
    _raises_at(1, "happens twice", parse_junit, junit, ParseContext("j.xml", tz=LA))


def test_a_git_date_without_a_zone_in_the_repeated_hour_is_refused() -> None:
    log = (
        "commit " + "a" * 40 + "\nAuthor: A <a@example.com>\nDate: 2026-11-01T01:30:00\n\n"
        "    subject\n"
    ).encode()
    _raises_at(3, "happens twice", parse_git_log, log, ParseContext("r.gitlog", tz=LA))


def test_a_dump_named_with_a_skipped_local_time_is_refused() -> None:
    with pytest.raises(ParseError, match="does not exist in America/Los_Angeles"):
        capture_time(ParseContext("dump_2026-03-08T02-30-00.txt", tz=LA))


def test_a_naive_default_time_is_read_in_the_bundle_zone_by_every_parser() -> None:
    # Formerly the stack and harness parsers read a naive default time in the machine's zone.
    expected = dt.datetime(2026, 11, 20, 23, 40, tzinfo=UTC)
    ctx = ParseContext("x", tz=LA, default_time=PLAIN)
    pyspy = b'Process 1: python3 x.py\nPython v3.11.7\n\nThread 0x1 (idle): "t"\n    f (x.py:1)\n'
    assert parse_pyspy(pyspy, ctx).events[0].at == expected
    junit = b'<testsuite name="s">\n<testcase name="c"/>\n</testsuite>\n'
    assert parse_junit(junit, ctx).events[0].at == expected
    lm_eval = b'{"results": {"t": {"acc,none": 0.5}}}'
    assert parse_lm_eval(lm_eval, ctx).events[0].at == expected
    doc = b"# Deploy\n\nText.\n"
    assert parse_markdown_doc(doc, ctx).events[0].at == expected
    prom = b"up 1\n"
    assert parse_exposition(prom, ctx).samples[0].ts_ms[0] == to_epoch_ms(expected)


def test_a_prometheus_timestamp_past_the_year_9999_is_dropped_with_a_warning_at_its_line() -> None:
    # It used to escape as an OverflowError and leave the artifact running; then it refused the
    # file. Neither format bounds a timestamp (the official OpenMetrics suite says such a file
    # parses, issue 18), so the file loads and the sample the timeline cannot place is dropped,
    # counted in a warning naming its line.
    data = b"up 1 1795218000000\nup 1 99999999999999999999\n"
    result = parse_exposition(data, ParseContext("m.prom"))
    assert [list(b.ts_ms) for b in result.samples] == [[1795218000000]]
    assert result.warnings[0].startswith("m.prom:2: 1 sample(s) dropped")
    assert "outside the years 1 to 9999" in result.warnings[0]
    om = b"up 1 1795218000\nup 1 1e300\n# EOF\n"
    result = parse_exposition(om, ParseContext("m.om"))
    assert [list(b.ts_ms) for b in result.samples] == [[1795218000000]]
    assert result.warnings[0].startswith("m.om:2: 1 sample(s) dropped")


def test_a_query_range_time_past_the_year_9999_is_a_parse_error() -> None:
    doc = {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1e300, "1"]]}]},
    }
    with pytest.raises(ParseError, match=r"result\[0\]\.values\[0\]: .*outside the years"):
        parse_query_range(json.dumps(doc).encode(), ParseContext("q.json"))


def test_no_parser_builds_a_datetime_of_its_own() -> None:
    # One set of rules for zones and epochs: a parser that builds datetimes itself is where the
    # four rules for naive times came from.
    parsers = Path(__file__).resolve().parents[2] / "ingest" / "parsers"
    pattern = re.compile(r"datetime\.fromisoformat|fromtimestamp|tzinfo=|datetime\(")
    offenders = [
        f"{path.relative_to(parsers)}:{number}"
        for path in sorted(parsers.rglob("*.py"))
        if path.name != "timestamps.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


def test_a_wall_reading_past_the_year_9999_in_utc_is_a_time_error_not_an_overflow():
    import zoneinfo

    from ingest.parsers.timestamps import TimeError, wall_reading

    with pytest.raises(TimeError, match="outside the years 1 to 9999"):
        wall_reading(9999, 12, 31, 23, 0, 0, tz=zoneinfo.ZoneInfo("America/New_York"))
