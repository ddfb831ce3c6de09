"""Timestamps the formats allow but the timeline cannot place (issue 18).

Neither OpenMetrics nor Prometheus text 0.0.4 bounds a timestamp; the timeline holds the years 1
to 9999 (Python's datetime, Postgres). Such a file parses; each sample the timeline cannot place
is dropped and counted in one warning naming its series and first line. No OverflowError escapes,
however many digits a timestamp has.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from ingest.parsers.prometheus import (
    ExpositionStream,
    StreamFallback,
    parse_exposition,
    parse_query_range,
)
from ingest.parsers.prometheus.careful import parse_careful
from ingest.parsers.prometheus.grammar import Meta, Registry
from ingest.parsers.timestamps import TimeError, epoch_ms
from ingest.parsers.types import UTC, ParseContext, ParseError, ParseResult

WHEN = dt.datetime(2026, 11, 20, 23, 40, tzinfo=UTC)
WHEN_MS = 1795218000000


def _points(result: ParseResult) -> dict[str, list[tuple[int, float]]]:
    return {
        f"{b.key.name}{dict(b.key.labels) or ''}": list(zip(b.ts_ms, b.values, strict=True))
        for b in result.samples
    }


def _om(*lines: str) -> bytes:
    return ("\n".join([*lines, "# EOF"]) + "\n").encode()


# Valid OpenMetrics timestamps past the year 9999: a long decimal, an exponent, more digits than
# a float64 holds, the largest float64, and far before the year 1.
FAR_OM = [
    "98765432109876543210.0123456789",
    "3e11",
    "9" * 400,
    "1.7976931348623157e308",
    "-1e300",
]


@pytest.mark.parametrize("stamp", FAR_OM)
def test_an_openmetrics_file_with_a_far_timestamp_parses_and_drops_that_sample(stamp: str) -> None:
    data = _om(
        "# TYPE jobs counter",
        'jobs_total{q="a"} 1 1795218000',
        f'jobs_total{{q="b"}} 2 {stamp}',
        'jobs_total{q="c"} 3 1795218000.5',
    )
    result = parse_exposition(data, ParseContext("far.om"))
    assert _points(result) == {
        "jobs_total{'q': 'a'}": [(WHEN_MS, 1.0)],
        "jobs_total{'q': 'c'}": [(WHEN_MS + 500, 3.0)],
    }
    (warning,) = result.warnings
    assert warning.startswith("far.om:3: 1 sample(s) dropped: their timestamps are valid but ")
    assert "outside the years 1 to 9999" in warning
    assert 'jobs_total{q="b"} (line 3)' in warning


FAR_TEXT = ["99999999999999999999", "-99999999999999999999", "9" * 5000, "253402300800000"]


@pytest.mark.parametrize("stamp", FAR_TEXT)
def test_a_text_file_with_a_far_timestamp_parses_and_drops_that_sample(stamp: str) -> None:
    # 253402300800000 ms is 10000-01-01; 5,000 digits is past what int() reads from text.
    data = f"up 1 {WHEN_MS}\nup 2 {stamp}\nup 3 {WHEN_MS + 1000}\ndown 4 {stamp}\n".encode()
    result = parse_exposition(data, ParseContext("far.prom"))
    assert _points(result) == {"up": [(WHEN_MS, 1.0), (WHEN_MS + 1000, 3.0)]}
    (warning,) = result.warnings
    assert warning.startswith("far.prom:2: 2 sample(s) dropped")
    assert warning.endswith("cannot hold: up (line 2), down (line 4)")


def test_the_last_millisecond_of_9999_is_still_placed() -> None:
    last = 253402300799999  # 9999-12-31T23:59:59.999Z
    result = parse_exposition(f"up 1 {last}\n".encode(), ParseContext("edge.prom"))
    assert _points(result) == {"up": [(last, 1.0)]}
    assert result.warnings == []


def test_the_warning_counts_every_sample_and_names_five_series() -> None:
    lines = [f'up{{i="{i}"}} {i} {10**20 + i}' for i in range(8)] + ["up 1 1000", "up 2 2000"]
    lines += ['up{i="0"} 9 99999999999999999999']
    result = parse_exposition(("\n".join(lines) + "\n").encode(), ParseContext("m.prom"))
    assert _points(result) == {"up": [(1000, 1.0), (2000, 2.0)]}
    (warning,) = result.warnings
    assert warning.startswith("m.prom:1: 9 sample(s) dropped")
    assert 'up{i="4"} (line 5)' in warning
    assert 'up{i="5"}' not in warning
    assert warning.endswith(" and 3 more series")


def test_a_dropped_sample_is_still_judged_by_the_openmetrics_rules() -> None:
    # Dropped after the rules ran: a negative counter or a step back is refused as ever.
    negative = _om("# TYPE jobs counter", "jobs_total -1 1e300")
    with pytest.raises(ParseError, match="negative") as caught:
        parse_exposition(negative, ParseContext("m.om"))
    assert caught.value.line == 2
    backwards = _om("# TYPE jobs gauge", "jobs 1 1e300", "jobs 2 1795218000")
    with pytest.raises(ParseError, match="timestamp going backwards") as caught:
        parse_exposition(backwards, ParseContext("m.om"))
    assert caught.value.line == 3


@pytest.mark.parametrize(
    ("data", "name", "expected"),
    [
        (_om("jobs 1 Inf"), "m.om", "expected seconds since 1970 as a number, got 'Inf'"),
        (_om("jobs 1 NaN"), "m.om", "expected seconds since 1970 as a number, got 'NaN'"),
        (_om("jobs 1 1e"), "m.om", "expected seconds since 1970 as a number, got '1e'"),
        (b"up 1 12x\n", "m.prom", "expected integer milliseconds, got '12x'"),
        (b"up 1 1_000\n", "m.prom", "expected integer milliseconds, got '1_000'"),
        (b"up 1 1.5\n", "m.prom", "expected integer milliseconds, got '1.5'"),
    ],
)
def test_what_is_no_timestamp_at_all_is_still_refused(
    data: bytes, name: str, expected: str
) -> None:
    with pytest.raises(ParseError) as caught:
        parse_exposition(data, ParseContext(name))
    assert caught.value.line == 1
    assert expected in caught.value.message


def test_a_long_bad_timestamp_is_cut_in_the_message() -> None:
    with pytest.raises(ParseError) as caught:
        parse_exposition(b"up 1 " + b"9" * 300 + b"x\n", ParseContext("m.prom"))
    assert "... (301 characters)" in caught.value.message
    assert len(caught.value.message) < 200


def test_the_careful_reader_returns_the_warning_too() -> None:
    registry, meta = Registry(), Meta()
    data = f"up 1 {WHEN_MS}\nup 2 99999999999999999999\n".encode()
    ts_cols, val_cols, warnings = parse_careful(data, ParseContext("m.prom"), False, registry, meta)
    assert [list(c) for c in ts_cols] == [[WHEN_MS]]
    assert [list(c) for c in val_cols] == [[1.0]]
    assert len(warnings) == 1


def test_the_streaming_reader_leaves_a_far_timestamp_to_the_whole_file_path() -> None:
    # The loader then parses the file whole, which drops and counts the sample.
    data = f"up 1 {WHEN_MS}\nup 2 99999999999999999999\n".encode()
    with pytest.raises(StreamFallback):
        list(ExpositionStream(data, ParseContext("m.prom")))


@pytest.mark.parametrize("seconds", [1e308, -1.7e308, 1e300])
def test_no_overflow_error_escapes_epoch_ms_or_query_range(seconds: float) -> None:
    with pytest.raises(TimeError, match="outside the years 1 to 9999"):
        epoch_ms(seconds, "s")
    doc = {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[seconds, "1"]]}]},
    }
    with pytest.raises(ParseError, match=r"result\[0\]\.values\[0\]: .*outside the years"):
        parse_query_range(json.dumps(doc).encode(), ParseContext("q.json"))
