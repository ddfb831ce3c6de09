"""Metrics parsers: exposition (text + OpenMetrics), query_range JSON, nvidia-smi CSV."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from ingest.parsers.nvidia_smi import looks_like_nvidia_smi, parse_nvidia_smi
from ingest.parsers.prometheus import (
    looks_like_exposition,
    looks_like_query_range,
    parse_exposition,
    parse_query_range,
)
from ingest.parsers.prometheus.careful import parse_careful
from ingest.parsers.prometheus.chunks import CHUNK_BYTES
from ingest.parsers.prometheus.grammar import Meta, Registry, default_type
from ingest.parsers.types import UTC, ParseContext, ParseError, ParseResult, SampleBlock

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "metrics"
PST = ZoneInfo("America/Los_Angeles")
T0 = 1795218000000  # 2026-11-20T23:40:00Z, 15:40 PST


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def summary(result: ParseResult) -> list[dict[str, Any]]:
    """A JSON-friendly view of the sample blocks (values as repr so NaN compares)."""
    return [
        {
            "name": b.key.name,
            "labels": [list(pair) for pair in b.key.labels],
            "ts_ms": list(b.ts_ms),
            "values": [repr(v) for v in b.values],
            "type": b.type,
            "unit": b.unit,
            "help": b.help,
        }
        for b in result.samples
    ]


def as_points(result: ParseResult) -> dict[tuple[str, tuple[tuple[str, str], ...], int], str]:
    return {
        (b.key.name, b.key.labels, ts): repr(v)
        for b in result.samples
        for ts, v in zip(b.ts_ms, b.values, strict=True)
    }


def careful(data: bytes, ctx: ParseContext, openmetrics: bool = False) -> ParseResult:
    """Run only the line-by-line reference path."""
    registry, meta = Registry(), Meta()
    ts_cols, val_cols, warnings = parse_careful(data, ctx, openmetrics, registry, meta)
    result = ParseResult(kind="prometheus_text", warnings=warnings)
    for key, ts, vals in zip(registry.keys, ts_cols, val_cols, strict=True):
        block = SampleBlock(key=key, ts_ms=ts, values=vals)
        meta.fill(block, default_type(openmetrics=openmetrics))
        result.samples.append(block)
    return result


def generate_scrapes(scrapes: int, seed: int = 11) -> str:
    """Several realistic scrapes: gauges, a counter, a histogram, escaped and spaced labels."""
    rnd = random.Random(seed)
    base = 'model_name="deepseek-ai/DeepSeek-V4",tp_rank="{r}"'
    lines: list[str] = []
    for i in range(scrapes):
        ts = T0 + i * 15000
        lines += [
            "# HELP sglang:num_running_reqs Running requests.",
            "# TYPE sglang:num_running_reqs gauge",
        ]
        for r in range(4):
            lines.append(f"sglang:num_running_reqs{{{base.format(r=r)}}} {rnd.randint(0, 9)} {ts}")
        lines += ["# TYPE sglang:prompt_tokens_total counter"]
        lines.append(
            f"sglang:prompt_tokens_total{{{base.format(r=0)}}} {rnd.random() * 1e9:.6e} {ts}"
        )
        lines += ["# TYPE sglang:e2e_request_latency_seconds histogram"]
        count = 0
        for le in ("0.5", "1", "5", "+Inf"):
            count += rnd.randint(0, 4)
            lines.append(f'sglang:e2e_request_latency_seconds_bucket{{le="{le}"}} {count} {ts}')
        lines.append(f"sglang:e2e_request_latency_seconds_sum {count * 0.7:.3f} {ts}")
        lines.append(f"sglang:e2e_request_latency_seconds_count {count} {ts}")
        util = rnd.choice(["0", "97", "NaN", "+Inf", "-Inf", "12.5"])
        lines.append(
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",modelName="NVIDIA B200",note="a \\"quoted\\" \\\\ '
            f'path\\nnext"}} {util} {ts}'
        )
        lines.append("")
    return "\n".join(lines) + "\n"


# --- exposition: golden files ---------------------------------------------------------------------


def test_two_scrapes_file_matches_its_golden_summary() -> None:
    result = parse_exposition(fixture("two_scrapes.prom"), ParseContext("two_scrapes.prom"))
    golden = json.loads(fixture("two_scrapes.golden.json"))
    assert summary(result) == golden
    assert result.kind == "prometheus_text"
    assert result.sample_count == 34
    assert result.warnings == []


def test_histogram_lines_are_separate_series_with_le_kept_and_family_metadata() -> None:
    result = parse_exposition(fixture("two_scrapes.prom"), ParseContext("x"))
    buckets = [b for b in result.samples if b.key.name.endswith("_seconds_bucket")]
    assert [dict(b.key.labels)["le"] for b in buckets] == ["0.1", "1.0", "+Inf"]
    assert {b.type for b in buckets} == {"histogram"}
    summary_sum = next(b for b in result.samples if b.key.name == "rpc_duration_seconds_sum")
    assert summary_sum.type == "summary"
    assert summary_sum.help == 'RPC latency.\nQuantiles over 10 minutes; path is "C:\\tmp".'


def test_label_order_variants_are_one_series_with_sorted_labels() -> None:
    result = parse_exposition(fixture("two_scrapes.prom"), ParseContext("x"))
    agent = [b for b in result.samples if b.key.name == "agent_last_error"]
    assert len(agent) == 1
    assert agent[0].key.labels == (
        ("msg", 'said "stop"\nthen hung'),
        ("path", "C:\\agent\\run.log"),
    )
    assert list(agent[0].ts_ms) == [T0, T0 + 15000]


def test_nan_and_infinities_are_values() -> None:
    result = parse_exposition(fixture("two_scrapes.prom"), ParseContext("x"))
    by_name = {(b.key.name, b.key.labels): b for b in result.samples}
    assert math.isnan(by_name[("rpc_duration_seconds", (("quantile", "0.99"),))].values[0])
    assert by_name[("process_max_fds", ())].values[0] == math.inf
    assert by_name[("process_min_value", ())].values[0] == -math.inf


def test_openmetrics_file_uses_second_timestamps_units_and_ignores_exemplars() -> None:
    result = parse_exposition(fixture("openmetrics.txt"), ParseContext("openmetrics.txt"))
    by_name = {(b.key.name, b.key.labels): b for b in result.samples}
    util = by_name[("DCGM_FI_DEV_GPU_UTIL", (("gpu", "0"),))]
    assert list(util.ts_ms) == [T0, T0 + 15250]
    bucket = by_name[
        ("sglang_e2e_request_latency_seconds_bucket", (("le", "10.0"), ("model_name", "dsv4")))
    ]
    assert list(bucket.values) == [40.0]
    assert (bucket.type, bucket.unit) == ("histogram", "seconds")
    total = by_name[("sglang_prompt_tokens_total", (("model_name", "dsv4"),))]
    assert (total.type, total.unit, total.help) == (
        "counter",
        "tokens",
        "Number of prefill tokens processed.",
    )
    assert result.sample_count == 9


def test_prometheus_text_timestamps_are_milliseconds() -> None:
    result = parse_exposition(b"up 1 1795218000123\n", ParseContext("x"))
    assert list(result.samples[0].ts_ms) == [1795218000123]
    assert result.samples[0].type == "untyped"


def test_sample_without_timestamp_takes_the_default_time() -> None:
    when = dt.datetime(2026, 11, 20, 15, 40, tzinfo=PST)
    data = b'# TYPE up gauge\nup{job="sglang",host="gpu node 17"} 1\nprocess_open_fds 41\n'
    result = parse_exposition(data, ParseContext("x", default_time=when))
    assert [list(b.ts_ms) for b in result.samples] == [[T0], [T0]]
    assert result.samples[0].key.labels == (("host", "gpu node 17"), ("job", "sglang"))


def test_crlf_line_endings_and_blank_lines_are_accepted() -> None:
    data = b"# TYPE up gauge\r\nup 1 1795218000000\r\n\r\nup 0 1795218015000\r\n"
    result = parse_exposition(data, ParseContext("x"))
    assert list(result.samples[0].values) == [1.0, 0.0]
    assert result.samples[0].type == "gauge"


def test_file_with_only_comments_yields_a_warning_not_samples() -> None:
    result = parse_exposition(b"# HELP up Up.\n# TYPE up gauge\n", ParseContext("empty.prom"))
    assert result.samples == []
    assert result.warnings == ["empty.prom: no samples found"]


# --- exposition: agreement with prometheus_client and between the two paths -----------------------


def test_samples_equal_prometheus_client_on_a_generated_multi_scrape_file() -> None:
    text = generate_scrapes(60)
    result = parse_exposition(text.encode(), ParseContext("gen.prom"))
    theirs = {
        (s.name, tuple(sorted(s.labels.items())), round(s.timestamp * 1000)): repr(float(s.value))
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert as_points(result) == theirs
    assert result.sample_count == 60 * 12


@pytest.mark.parametrize("name", ["two_scrapes.prom", "openmetrics.txt"])
def test_bulk_path_and_careful_path_agree_on_fixtures(name: str) -> None:
    data = fixture(name)
    ctx = ParseContext(name)
    assert summary(parse_exposition(data, ctx)) == summary(
        careful(data, ctx, openmetrics=b"# EOF" in data)
    )


def test_bulk_path_and_careful_path_agree_on_a_large_file() -> None:
    # Large enough to span several 4 MiB chunks.
    data = generate_scrapes(30000).encode()
    assert len(data) > 3 * CHUNK_BYTES
    ctx = ParseContext("big.prom")
    fast = parse_exposition(data, ctx)
    assert summary(fast) == summary(careful(data, ctx))


label_values = st.text(
    alphabet=st.sampled_from(list('ab \\"\n{}=,#')) | st.characters(codec="utf-8"), max_size=8
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["m", "m_total", "sglang:x"]),
            st.dictionaries(st.sampled_from(["a", "b", "le"]), label_values, max_size=3),
            st.sampled_from(["0", "1.5", "NaN", "+Inf", "-Inf", "1e3"]),
            st.integers(min_value=0, max_value=3),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_bulk_and_careful_paths_agree_on_arbitrary_label_values(
    rows: list[tuple[str, dict[str, str], str, int]],
) -> None:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    lines = []
    for step, (name, labels, value, gap) in enumerate(rows):
        inner = ",".join(f'{k}="{esc(v)}"' for k, v in labels.items())
        lines.append(f"{name}{{{inner}}} {value} {T0 + step * 1000 + gap}")
    data = ("\n".join(lines) + "\n").encode()
    ctx = ParseContext("prop.prom")
    try:
        expected = summary(careful(data, ctx))
    except ParseError as exc:
        with pytest.raises(ParseError) as caught:
            parse_exposition(data, ctx)
        assert str(caught.value) == str(exc)
        return
    assert summary(parse_exposition(data, ctx)) == expected


# --- exposition: errors ---------------------------------------------------------------------------

ERROR_CASES = [
    ('up{job="a" host="b"} 1 5\n', 1, "malformed label set: expected ',' or '}' after label 'job'"),
    ("up{job=a} 1 5\n", 1, "expected '\"' to open the value of label 'job'"),
    ('up{="a"} 1 5\n', 1, "malformed label set: expected a label name or '}'"),
    ('up{job="a\\tb"} 1 5\n', 1, "bad escape '\\t' in the value of label 'job'"),
    ("up 1_000 5\n", 1, "bad number for up: expected a float (or NaN, +Inf, -Inf), got '1_000'"),
    ("# TYPE up gauge\nup one 5\n", 2, "bad number for up"),
    ("up 1 2.5e3\n", 1, "bad timestamp for up: expected integer milliseconds, got '2.5e3'"),
    ('up 1 5\nup{job="a"\n', 2, "truncated label set: expected '}' to close it"),
    ('up{job="a\n', 1, "truncated value of label 'job'"),
    ('up 1 5\nup{job="a"}\n', 2, 'truncated line: expected a value after up{job="a"}'),
    ("up 1 5 6\n", 1, "expected a value and an optional timestamp after up, got 3 fields"),
    ("up 1 5\nup 2 5\n", 2, "duplicate sample for up at 1970-01-01T00:00:00.005000Z"),
    ("up 1 1795218000000\nup 1 1795217999000\n", 2, "timestamp going backwards for up"),
    ("# TYPE up gauge-ish\nup 1 5\n", 1, "expected a metric type after '# TYPE up'"),
    ("# HELP\n", 1, "truncated line: expected a metric name after # HELP"),
    ("up 1\n", 1, "sample for up has no timestamp: expected one, or a default time"),
    ("9up 1 5\n", 1, "expected a metric name, got '9up 1 5'"),
    ('up{__name__="x"} 1 5\n', 1, "metric name given twice"),
    ('up{job="a",job="b"} 1 5\n', 1, "label 'job' given twice"),
]


@pytest.mark.parametrize(("text", "line", "message"), ERROR_CASES)
def test_bad_exposition_raises_parse_error_naming_line_and_expectation(
    text: str, line: int, message: str
) -> None:
    with pytest.raises(ParseError) as caught:
        parse_exposition(text.encode(), ParseContext("bad.prom"))
    assert caught.value.file == "bad.prom"
    assert caught.value.line == line
    assert message in caught.value.message


def test_error_deep_in_a_multi_chunk_file_names_its_line() -> None:
    text = generate_scrapes(30000)
    lines = text.split("\n")
    target = len(lines) - 50
    while not lines[target] or lines[target].startswith("#"):
        target += 1
    lines[target] = lines[target].rsplit(" ", 1)[0] + " 17"  # a timestamp far in the past
    with pytest.raises(ParseError) as caught:
        parse_exposition("\n".join(lines).encode(), ParseContext("big.prom"))
    assert caught.value.line == target + 1
    assert "timestamp going backwards" in caught.value.message


def test_undecodable_bytes_are_a_parse_error_with_their_line() -> None:
    with pytest.raises(ParseError) as caught:
        parse_exposition(b'up 1 5\nup{job="\xff"} 1 6\n', ParseContext("x"))
    assert caught.value.line == 2
    assert "expected UTF-8 text" in caught.value.message


def test_looks_like_exposition() -> None:
    assert looks_like_exposition("anything", fixture("two_scrapes.prom")[:300])
    assert looks_like_exposition("m.txt", fixture("openmetrics.txt")[:200])
    assert looks_like_exposition("scrape.prom", b"up 1\nprocess_open_fds 12\n")
    assert not looks_like_exposition("notes.txt", b"hello world\nthis is prose\n")
    assert not looks_like_exposition("x.log", b"[2026-11-20 15:40:00] Decode batch.\n")
    assert not looks_like_exposition("q.json", fixture("query_range.json")[:200])


# --- query_range ----------------------------------------------------------------------------------


def test_query_range_matrix_becomes_series_named_by_their_name_label() -> None:
    result = parse_query_range(fixture("query_range.json"), ParseContext("q.json"))
    assert result.kind == "prometheus_query_range"
    running, anonymous = result.samples
    assert running.key.name == "sglang:num_running_reqs"
    assert running.key.labels == (
        ("instance", "gpu-node-17:9400"),
        ("job", "sglang"),
        ("model_name", "deepseek-ai/DeepSeek-V4"),
    )
    assert list(running.ts_ms) == [T0, T0 + 15000, T0 + 30000, T0 + 45500]
    assert list(running.values) == [1.0, 2.0, 2.0, 2.0]
    assert anonymous.key.name == "q"  # no __name__ (an expression): named after its file
    assert [repr(v) for v in anonymous.values] == ["88.31", "0.0", "nan", "inf"]


def test_query_vector_gives_one_sample_per_series_and_keeps_warnings() -> None:
    result = parse_query_range(fixture("query_vector.json"), ParseContext("v.json"))
    assert [(b.key.labels, list(b.ts_ms), list(b.values)) for b in result.samples] == [
        ((("gpu", "0"),), [T0 + 123], [0.0]),
        ((("gpu", "1"),), [T0 + 123], [3.0]),
    ]
    assert result.warnings == [
        "v.json: Prometheus warning: PromQL info: metric might not be a counter"
    ]


QUERY_ERRORS = [
    (
        b'{"status":"error","errorType":"bad_data","error":"parse error at char 4"}',
        "Prometheus returned an error (bad_data): parse error at char 4",
    ),
    (
        b'{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}',
        "expected \"resultType\" matrix or vector, got 'scalar'",
    ),
    (
        b'{"status":"success","data":{"resultType":"matrix","result":{}}}',
        'expected "data.result" to be a list',
    ),
    (
        b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}',
        "result[0].values[0]: bad number: expected a float, got 'x'",
    ),
    (
        b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1]]}]}}',
        'result[0].values[0]: expected [unix seconds, "value"]',
    ),
    (
        b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[2,"1"],[1,"1"]]}]}}',
        "timestamp going backwards for q:",
    ),
    (
        b'{"status":"success","data":{"resultType":"matrix","result":[{"values":[]}]}}',
        'result[0]: expected an object with a "metric" object',
    ),
    (b"[1, 2]", 'expected a JSON object with "status" and "data"'),
]


@pytest.mark.parametrize(("data", "message"), QUERY_ERRORS)
def test_bad_query_range_raises_parse_error_with_what_was_expected(
    data: bytes, message: str
) -> None:
    with pytest.raises(ParseError) as caught:
        parse_query_range(data, ParseContext("q.json"))
    assert message in caught.value.message


def test_invalid_json_names_its_line() -> None:
    with pytest.raises(ParseError) as caught:
        parse_query_range(b'{\n"status": "success",\n"data": }', ParseContext("q.json"))
    assert caught.value.line == 3
    assert caught.value.message.startswith("expected JSON")


def test_looks_like_query_range() -> None:
    assert looks_like_query_range("q.json", fixture("query_range.json")[:120])
    assert looks_like_query_range("v.json", fixture("query_vector.json")[:80])
    assert not looks_like_query_range("r.json", b'{"results": {"gsm8k": {}}}')
    assert not looks_like_query_range("m.prom", fixture("two_scrapes.prom")[:200])


# --- nvidia-smi -----------------------------------------------------------------------------------


def test_nvidia_smi_csv_becomes_per_gpu_series_in_utc() -> None:
    result = parse_nvidia_smi(fixture("nvidia_smi.csv"), ParseContext("smi.csv", tz=PST))
    assert result.kind == "nvidia_smi_csv"
    by_key = {(b.key.name, b.key.labels): b for b in result.samples}
    util0 = by_key[("nvidia_smi_utilization_gpu", (("gpu", "0"),))]
    assert list(util0.ts_ms) == [T0 + 123, T0 + 1124]
    assert list(util0.values) == [97.0, 0.0]
    assert util0.unit == "percent"
    mem1 = by_key[("nvidia_smi_memory_used_mib", (("gpu", "1"),))]
    assert list(mem1.values) == [70119.0, 70119.0]
    power1 = by_key[("nvidia_smi_power_draw_w", (("gpu", "1"),))]
    assert list(power1.ts_ms) == [T0 + 1126]  # [N/A] is no sample
    assert ("nvidia_smi_temperature_gpu", (("gpu", "0"),)) in by_key
    assert not any("name" in b.key.name for b in result.samples)
    assert len(result.samples) == 8


def test_nvidia_smi_naive_time_follows_daylight_saving() -> None:
    data = b"timestamp, index, utilization.gpu [%]\n2026/07/01 12:00:00.000, 0, 5 %\n"
    result = parse_nvidia_smi(data, ParseContext("smi.csv", tz=PST))
    expected = dt.datetime(2026, 7, 1, 19, 0, tzinfo=UTC)
    assert result.samples[0].ts_ms[0] == int(expected.timestamp() * 1000)


SMI_ERRORS = [
    (b"index, utilization.gpu [%]\n0, 5 %\n", 1, "expected a 'timestamp' column"),
    (
        b"timestamp, index, utilization.gpu [%]\n2026/11/20 15:40:00.123, 0\n",
        2,
        "expected 3 comma-separated fields, got 2",
    ),
    (
        b"timestamp, index, utilization.gpu [%]\n20-11-2026 15:40, 0, 5 %\n",
        2,
        "expected a timestamp like 2026/11/20 15:40:00.123",
    ),
    (
        b"timestamp, index, utilization.gpu [%]\n2026/11/31 15:40:00.000, 0, 5 %\n",
        2,
        "invalid timestamp '2026/11/31 15:40:00.000'",
    ),
    (
        b"timestamp, index, utilization.gpu [%]\n2026/11/20 15:40:00.000, 0, 5 %\n"
        b"2026/11/20 15:40:01.000, 0, lots\n",
        3,
        "bad number in column 'utilization.gpu'",
    ),
    (
        b"timestamp, index, utilization.gpu [%]\n2026/11/20 15:40:01.000, 0, 5 %\n"
        b"2026/11/20 15:40:00.000, 0, 6 %\n",
        3,
        "timestamp going backwards",
    ),
    (b"", 1, "expected the nvidia-smi CSV header line"),
]


@pytest.mark.parametrize(("data", "line", "message"), SMI_ERRORS)
def test_bad_nvidia_smi_csv_raises_parse_error(data: bytes, line: int, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_nvidia_smi(data, ParseContext("smi.csv", tz=PST))
    assert caught.value.line == line
    assert message in caught.value.message


def test_looks_like_nvidia_smi() -> None:
    assert looks_like_nvidia_smi("gpu.csv", fixture("nvidia_smi.csv")[:100])
    assert not looks_like_nvidia_smi("runs.csv", b"timestamp,suite,case,status\n")
    assert not looks_like_nvidia_smi("m.prom", fixture("two_scrapes.prom")[:100])
