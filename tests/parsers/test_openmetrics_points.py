"""OpenMetrics histogram and gauge-histogram points, and exemplars (issue 18): each class of
violation the official parser test suite checks, on small inputs of our own."""

from __future__ import annotations

import pytest

from tests.parsers.om_cases import WHEN_MS, om, parse, points, refused

# --- histograms ----------------------------------------------------------------------------------

HISTOGRAM_ERRORS = [
    (["rpc_count 2", "rpc_sum 1"], 4, "point without buckets"),
    (['rpc_bucket{le="1"} 1'], 3, 'point without a le="+Inf" bucket'),
    (['rpc_bucket{le="5"} 1', 'rpc_bucket{le="1"} 1'], 4, "expected buckets in increasing order"),
    (['rpc_bucket{le="1"} 1', 'rpc_bucket{le="1.0"} 1'], 4, "increasing order of le"),
    (['rpc_bucket{le="1"} 3', 'rpc_bucket{le="+Inf"} 2'], 4, "expected cumulative buckets"),
    (['rpc_bucket{le="+Inf"} 2', "rpc_sum 1"], 4, "rpc_sum without rpc_count"),
    (['rpc_bucket{le="+Inf"} 2', "rpc_count 2"], 4, "rpc_count without rpc_sum"),
    (['rpc_bucket{le="+Inf"} 2', "rpc_count 3", "rpc_sum 1"], 4, "rpc_count is 3.0 but the +Inf"),
    (["rpc_count 2", 'rpc_bucket{le="+Inf"} 2'], 3, "rpc_count without rpc_sum"),
    (
        ['rpc_bucket{le="-1"} 1', 'rpc_bucket{le="+Inf"} 2', "rpc_count 2", "rpc_sum 0"],
        6,
        "a histogram with negative buckets has no sum",
    ),
    (
        ['rpc_bucket{le="+Inf"} 2', "rpc_count 2", "rpc_sum 1", "rpc_sum 1"],
        6,
        "second rpc_sum in one point",
    ),
    (['rpc_bucket{le="+Inf"} 2', "#rpc_sum 1"], 4, "OpenMetrics allows no other line"),
]


@pytest.mark.parametrize(("lines", "line", "message"), HISTOGRAM_ERRORS)
def test_a_histogram_point_is_whole(lines: list[str], line: int, message: str) -> None:
    error = refused(om("# HELP pad x", "# TYPE rpc histogram", *lines))
    assert (error.line, message in error.message) == (line, True), error


GAUGE_HISTOGRAM_ERRORS = [
    (["q_gsum 1"], 3, "point without buckets"),
    (['q_bucket{le="+Inf"} 2', "q_gsum 1"], 4, "q_gsum without q_gcount"),
    (['q_bucket{le="+Inf"} 2', "q_gcount 2"], 4, "q_gcount without q_gsum"),
    (['q_bucket{le="+Inf"} 2', "q_gcount 2", "q_gsum -1"], 5, "negative without negative buckets"),
    (['q_bucket{le="2"} 2', 'q_bucket{le="+Inf"} 1'], 4, "expected cumulative buckets"),
]


@pytest.mark.parametrize(("lines", "line", "message"), GAUGE_HISTOGRAM_ERRORS)
def test_a_gauge_histogram_point_is_whole(lines: list[str], line: int, message: str) -> None:
    error = refused(om("# HELP pad x", "# TYPE q gaugehistogram", *lines))
    assert (error.line, message in error.message) == (line, True), error


def test_histograms_the_specification_allows() -> None:
    result = parse(
        om(
            "# TYPE rpc histogram",
            'rpc_bucket{le="-1.0"} 0 10',
            'rpc_bucket{le="1e-04"} 1 10',
            'rpc_bucket{le="0.00011"} 1 10',
            'rpc_bucket{le="1.1e+23"} 2 10',
            'rpc_bucket{le="+Inf"} 4 10',
            'rpc_bucket{le="0.5"} 1 20',  # the next point may have other buckets
            'rpc_bucket{le="+Inf"} 5 20',
            "rpc_count 5 20",
            "rpc_sum 3.5 20",
            "rpc_created 1 20",
            "# TYPE q gaugehistogram",
            'q_bucket{le="-5"} 1',
            'q_bucket{le="+Inf"} 3',
            "q_gcount 3",
            "q_gsum -7.5",
        )
    )
    assert result.sample_count == 14


# --- exemplars -----------------------------------------------------------------------------------

EXEMPLAR_ERRORS = [
    ('rpc_bucket{le="+Inf"} 1 #', "malformed exemplar"),
    ('rpc_bucket{le="+Inf"} 1#{} 1', "bad number"),
    ('rpc_bucket{le="+Inf"} 1 #{} 1', "bad timestamp"),
    ('rpc_bucket{le="+Inf"} 1 # {}2', "expected ' value' after '}'"),
    ('rpc_bucket{le="+Inf"} 1 # {} 2 ', "got nothing"),
    ('rpc_bucket{le="+Inf"} 1 # {} 2 3 ', "nothing after"),
    ('rpc_bucket{le="+Inf"} 1 # {} ', "got nothing"),
    ('rpc_bucket{le="+Inf"} 1 5 # span="x"} 1', "malformed exemplar"),
    ('rpc_bucket{le="+Inf"} 1 5 span="x"} 1', "malformed exemplar"),
    ('rpc_bucket{le="+Inf"} 1 # {span=x} 1', "expected '=\"' after label 'span'"),
    ('rpc_bucket{le="+Inf"} 1 # {} 0x10', "bad number"),
    ('rpc_bucket{le="+Inf"} 1 # {} 1 0x10', "bad timestamp of the exemplar"),
    ('rpc_bucket{le="+Inf"} 1 # {} 1 NaN', "bad timestamp of the exemplar"),
    ('rpc_bucket{le="+Inf"} 1 # {} 1 -Inf', "bad timestamp of the exemplar"),
    ('rpc_bucket{le="+Inf"} 1 # {trace="' + "x" * 124 + '"} 1', "hold 129 characters"),
    ('rpc_bucket{le="+Inf"} 1 # {trace="' + "é" * 124 + '"} 1', "hold 129 characters"),
    ('rpc_bucket{le="1"} 1 # {} 1.5', "above the bucket le='1'"),
    ("rpc_sum 1 # {} 1", "expected exemplars only on counter totals and histogram buckets"),
    ("rpc_created 1 # {} 1", "only on counter totals"),
]


@pytest.mark.parametrize(("line", "message"), EXEMPLAR_ERRORS)
def test_exemplars_are_spelled_right_and_only_where_allowed(line: str, message: str) -> None:
    error = refused(om("# TYPE rpc histogram", line))
    assert (error.line, message in error.message) == (2, True), error


@pytest.mark.parametrize(
    "lines",
    [
        ["# TYPE temp gauge", "temp 1 # {} 1"],
        ["# TYPE build info", 'build_info{v="1"} 1 # {} 1'],
        ["# TYPE mode stateset", 'mode{mode="on"} 1 # {} 1'],
        ["# TYPE rpc summary", 'rpc{quantile="0.5"} 1 # {} 1'],
        ["# TYPE reqs counter", "reqs_created 1 # {} 1"],
        ["# TYPE temp_bucket gauge", "temp_bucket 1 # {} 1"],
        ["untyped 1 # {} 1"],
    ],
)
def test_exemplars_on_other_types_are_refused(lines: list[str]) -> None:
    assert "only on counter totals" in refused(om(*lines)).message


def test_exemplars_are_checked_then_dropped() -> None:
    result = parse(
        om(
            "# TYPE reqs counter",
            'reqs_total{path="/ # x"} 7 1795218000 # {trace="ab # c",span=""} 0.5 1795217999.5',
            "# TYPE rpc histogram",
            'rpc_bucket{le="0.5"} 1 # {} 0.25',
            'rpc_bucket{le="+Inf"} 2 # {trace="' + "é" * 123 + '"} 9',
        )
    )
    assert points(result)[("reqs_total", (("path", "/ # x"),))] == [(WHEN_MS, "7.0")]
    assert points(result)[("rpc_bucket", (("le", "+Inf"),))] == [(WHEN_MS, "2.0")]
