"""Small OpenMetrics expositions and how the OpenMetrics tests read them (shared by
test_openmetrics.py, test_openmetrics_points.py and test_openmetrics_fast_path.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from ingest.parsers.prometheus import parse_exposition
from ingest.parsers.types import UTC, ParseContext, ParseError, ParseResult

WHEN = dt.datetime(2026, 11, 20, 23, 40, tzinfo=UTC)
WHEN_MS = 1795218000000
CTX = ParseContext("scrape.om", default_time=WHEN)


def om(*lines: str) -> bytes:
    """An exposition of these lines, ``# EOF`` last."""
    return ("\n".join([*lines, "# EOF"]) + "\n").encode()


def parse(data: bytes, name: str = "scrape.om") -> ParseResult:
    return parse_exposition(data, ParseContext(name, default_time=WHEN))


def refused(data: bytes, name: str = "scrape.om") -> ParseError:
    with pytest.raises(ParseError) as caught:
        parse(data, name)
    assert caught.value.file == name
    return caught.value


def points(result: ParseResult) -> dict[tuple[str, tuple[tuple[str, str], ...]], list]:
    return {
        (b.key.name, b.key.labels): [(ts, repr(v)) for ts, v in zip(b.ts_ms, b.values, strict=True)]
        for b in result.samples
    }
