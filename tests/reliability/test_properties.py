"""Property-based tests of the pure parsers (no database).

1. Whatever bytes arrive (random, or a real fixture cut, spliced and corrupted), every parser
   either returns a result or raises its own ParseError; the sniffers never raise at all.
2. Round-trips: exposition text (Prometheus text and OpenMetrics, in several spellings) and
   query_range JSON written from samples parse back to the same samples; so does text written
   by the official prometheus_client.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from ingest import sniff
from ingest.parsers.prometheus import parse_exposition, parse_query_range
from ingest.parsers.types import UTC, ParseContext, ParseError, ParseResult

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DEFAULT_TIME = dt.datetime(2026, 11, 20, 23, 40, tzinfo=UTC)
T0 = 1795218000000
# RELIABILITY_EXAMPLES=5000 for a long hunt; the default keeps the suite quick.
EXAMPLES = int(os.environ.get("RELIABILITY_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# A real file of each format, to corrupt: deep paths are reached from valid-looking input.
SEEDS: dict[str, bytes] = {
    fmt.kind: data
    for fmt, data in (
        (sniff.BY_KIND[kind], (FIXTURES / rel).read_bytes())
        for kind, rel in (
            ("prometheus_text", "metrics/two_scrapes.prom"),
            ("prometheus_query_range", "metrics/query_range.json"),
            ("nvidia_smi_csv", "metrics/nvidia_smi.csv"),
            ("junit_xml", "harness/junit_stability_and_smoke.xml"),
            ("harness_jsonl", "harness/stability.jsonl"),
            ("lm_eval_json", "harness/results_2026-11-20T12-00-13.json"),
            ("sglang_log", "logs/sglang_wedge.log"),
            ("sglang_router_log", "real/sglang/pr11310_router_grpc_health_errors.log"),
            ("pyspy_dump", "dumps/scheduler_2026-11-20T15-45-00.pyspy.txt"),
            ("goroutine_dump", "dumps/agent-harness-20261120T154600.goroutines.txt"),
            ("git_log", "git/deploy.gitlog"),
            ("markdown_doc", "docs/DSV4_DEPLOY.md"),
        )
    )
}
OPENMETRICS_SEED = (FIXTURES / "metrics" / "openmetrics.txt").read_bytes()


def test_every_format_has_a_seed():
    assert set(SEEDS) == set(sniff.BY_KIND)


def _parse_only_raises_parse_error(kind: str, data: bytes, with_time: bool) -> None:
    ctx = ParseContext(
        name=f"fuzz.{kind}", tz=UTC, default_time=DEFAULT_TIME if with_time else None
    )
    try:
        result = sniff.BY_KIND[kind].parse(data, ctx)
    except ParseError as exc:
        assert exc.file == ctx.name
        assert exc.line >= 0
        assert str(exc).startswith(ctx.name)
        return
    assert isinstance(result, ParseResult)
    for block in result.samples:
        assert len(block.ts_ms) == len(block.values)
        assert all(b > a for a, b in zip(block.ts_ms, block.ts_ms[1:], strict=False))
    for event in result.events:
        assert event.at.tzinfo is not None
        # (the database refuses an event that ends before it starts)
        assert event.ends_at is None or event.ends_at >= event.at, event


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """A seed file cut, spliced and corrupted a few times."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["cut", "delete", "insert", "flip", "dup_line", "swap_lines"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "cut":
            del data[at:]
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 40))]
        elif op == "insert":
            noise = draw(
                st.one_of(
                    st.binary(max_size=12),
                    st.sampled_from(
                        [
                            b"\n",
                            b"\\",
                            b'"',
                            b"{",
                            b"}",
                            b"NaN",
                            b"-Inf",
                            b"# EOF\n",
                            b"\t",
                            b"\x00",
                        ]
                    ),
                )
            )
            data[at:at] = noise
        elif op == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        else:
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            j = draw(st.integers(0, len(lines) - 1))
            if op == "dup_line":
                lines.insert(j, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"\n".join(lines))
    return bytes(data)


@FUZZ
@given(kind=st.sampled_from(sorted(SEEDS)), data=st.data(), with_time=st.booleans())
def test_corrupted_real_files_raise_only_parse_error(kind, data, with_time):
    _parse_only_raises_parse_error(kind, data.draw(mutated(SEEDS[kind])), with_time)


@FUZZ
@given(data=st.data(), with_time=st.booleans())
def test_corrupted_openmetrics_raises_only_parse_error(data, with_time):
    _parse_only_raises_parse_error(
        "prometheus_text", data.draw(mutated(OPENMETRICS_SEED)), with_time
    )


@FUZZ
@given(kind=st.sampled_from(sorted(SEEDS)), blob=st.binary(max_size=2000), with_time=st.booleans())
def test_random_bytes_raise_only_parse_error(kind, blob, with_time):
    _parse_only_raises_parse_error(kind, blob, with_time)


@FUZZ
@given(
    kind=st.sampled_from(sorted(SEEDS)),
    text=st.text(alphabet=st.characters(codec="utf-8"), max_size=600),
    with_time=st.booleans(),
)
def test_random_text_raises_only_parse_error(kind, text, with_time):
    _parse_only_raises_parse_error(kind, text.encode("utf-8", "surrogatepass"), with_time)


@FUZZ
@given(
    name=st.sampled_from(["a.prom", "a.json", "a.xml", "a.md", "a.log", "a.csv", "x", ""]),
    head=st.one_of(st.binary(max_size=600), st.sampled_from(list(SEEDS.values()))),
)
def test_sniffing_never_raises(name, head):
    fmt = sniff.sniff(name, head[: sniff.HEAD_BYTES])
    assert fmt is None or fmt.kind in sniff.BY_KIND


# --- round-trips ---------------------------------------------------------------------------------

metric_names = st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,20}", fullmatch=True)
label_names = st.from_regex(r"[a-zA-Z][a-zA-Z0-9_]{0,12}", fullmatch=True).filter(
    lambda n: n != "le" and not n.startswith("__")
)
label_values = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=16
)
sample_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.integers(-(10**12), 10**12).map(float),
)


@st.composite
def series_sets(draw: st.DrawFn) -> dict[tuple[str, tuple[tuple[str, str], ...]], list]:
    """Up to five distinct series, each with strictly increasing millisecond timestamps."""
    out = {}
    for _ in range(draw(st.integers(1, 5))):
        name = draw(metric_names)
        labels = draw(st.dictionaries(label_names, label_values, max_size=3))
        n = draw(st.integers(1, 6))
        steps = draw(st.lists(st.integers(1, 10**7), min_size=n, max_size=n))
        start = draw(st.integers(T0 - 10**10, T0 + 10**10))
        stamps = [start + sum(steps[: i + 1]) for i in range(n)]
        values = draw(st.lists(sample_values, min_size=n, max_size=n))
        out[(name, tuple(sorted(labels.items())))] = list(zip(stamps, values, strict=True))
    return out


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def _points(result: ParseResult) -> dict:
    return {
        (b.key.name, b.key.labels): [(ts, repr(v)) for ts, v in zip(b.ts_ms, b.values, strict=True)]
        for b in result.samples
    }


def _expected(series: dict) -> dict:
    return {key: [(ts, repr(v)) for ts, v in pts] for key, pts in series.items()}


def _write_exposition(series: dict, *, openmetrics: bool, style: dict) -> bytes:
    """Write the samples in one of several spellings: the text format scrape by scrape
    (interleaved series), OpenMetrics as its specification orders it (a family's TYPE, then
    each of its series' points in turn; single spaces, no blank lines, ``# EOF`` last)."""
    sep = " " if openmetrics or not style["wide"] else "  "
    rows = []
    for (name, labels), pts in series.items():
        pairs = list(labels)
        if style["reverse_labels"]:
            pairs.reverse()
        inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
        text = f"{name}{{{inner}}}" if pairs or style["empty_braces"] else name
        for i, (ts, value) in enumerate(pts):
            stamp = f"{ts / 1000:.3f}" if openmetrics else str(ts)
            rows.append((name, i, f"{text}{sep}{_number(value)}{sep}{stamp}"))
    names = list(dict.fromkeys(n for n, _ in series))
    if openmetrics:
        lines = []
        for name in names:
            lines.append(f"# TYPE {name} gauge")
            lines += [line for family, _, line in rows if family == name]
        return ("\n".join([*lines, "# EOF"]) + "\n").encode()
    rows.sort(key=lambda r: r[1])  # stable: scrape i of every series, then scrape i + 1
    lines = [f"# TYPE {name} gauge" for name in names]
    lines += [line for _, _, line in rows]
    if style["blank_lines"]:
        lines = [x for line in lines for x in (line, "")]
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(
    series=series_sets(),
    openmetrics=st.booleans(),
    style=st.fixed_dictionaries(
        {
            "wide": st.booleans(),
            "reverse_labels": st.booleans(),
            "empty_braces": st.booleans(),
            "blank_lines": st.booleans(),
        }
    ),
)
def test_exposition_written_from_samples_parses_back_to_the_same_samples(
    series, openmetrics, style
):
    data = _write_exposition(series, openmetrics=openmetrics, style=style)
    result = parse_exposition(data, ParseContext(name="roundtrip.prom"))
    assert _points(result) == _expected(series)
    assert {b.type for b in result.samples} == {"gauge"}


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    gauges=st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True),
        st.lists(
            st.tuples(label_values, st.floats(allow_nan=True, allow_infinity=True)),
            min_size=1,
            max_size=4,
            unique_by=lambda p: p[0],
        ),
        min_size=1,
        max_size=4,
    )
)
def test_text_from_the_official_client_parses_back(gauges):
    registry = CollectorRegistry()
    for name, children in gauges.items():
        gauge = Gauge(name, f"help for {name}", ["pod"], registry=registry)
        for pod, value in children:
            gauge.labels(pod=pod).set(value)
    ctx = ParseContext(name="client.prom", default_time=DEFAULT_TIME)
    result = parse_exposition(generate_latest(registry), ctx)
    at = int(DEFAULT_TIME.timestamp() * 1000)
    expected = {
        (name, (("pod", pod),)): [(at, repr(float(value)))]
        for name, children in gauges.items()
        for pod, value in children
    }
    assert _points(result) == expected
    for block in result.samples:
        assert block.help == f"help for {block.key.name}"


@settings(max_examples=EXAMPLES, deadline=None)
@given(series=series_sets())
def test_query_range_json_written_from_samples_parses_back(series):
    # query_range carries seconds with millisecond precision and every value as a string.
    doc = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": {"__name__": name, **dict(labels)},
                    "values": [[ts / 1000, _number(v)] for ts, v in pts],
                }
                for (name, labels), pts in series.items()
            ],
        },
    }
    result = parse_query_range(json.dumps(doc).encode(), ParseContext(name="qr.json"))
    assert _points(result) == _expected(series)
