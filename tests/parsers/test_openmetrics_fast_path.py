"""The OpenMetrics fast path (om_bulk) accepts exactly what the careful line-by-line reader
accepts and reads it the same, on generated expositions valid and broken (issue 18)."""

from __future__ import annotations

import math
import random
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.parsers.prometheus import chunks as chunks_module
from ingest.parsers.prometheus import exposition, parse_exposition
from ingest.parsers.prometheus.bulk import Bail
from ingest.parsers.prometheus.grammar import Registry
from ingest.parsers.prometheus.om_bulk import parse_openmetrics_bulk
from ingest.parsers.prometheus.openmetrics import OmColumns, parse_openmetrics_careful
from ingest.parsers.types import ParseError
from tests.parsers.om_cases import CTX, om

# --- the fast path agrees with the careful reader ------------------------------------------------


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _generated(rng: random.Random) -> str:
    """A valid exposition: a few families of every type, one or more points per metric."""
    kinds = ["counter", "gauge", "histogram", "gaugehistogram", "stateset", "info", "summary"]
    lines: list[str] = []
    for f in range(rng.randint(0, 4)):
        kind = rng.choice([*kinds, "unknown"])
        name = f"m{f}_{kind}"
        help_text = _escape(rng.choice(["", 'a "b"']))
        meta = [f"# TYPE {name} {kind}", f"# HELP {name} {help_text}"]
        rng.shuffle(meta)
        lines += meta[: rng.randint(0, 2)] if kind == "unknown" else meta
        timed = rng.random() < 0.6
        for m in range(rng.randint(0, 3)):
            base = [("m", str(m))] + ([("sp", "x y # }")] if rng.random() < 0.3 else [])
            for p in range(rng.randint(1, 3) if timed else 1):
                stamp = f" {1795218000 + 15 * p}{rng.choice(['', '.5'])}" if timed else ""
                rows: list[tuple[str, list[tuple[str, str]], str]] = []
                if kind == "counter":
                    rows.append((f"{name}_total", base, str(rng.randint(0, 9))))
                elif kind in ("gauge", "unknown"):
                    rows.append((name, base, rng.choice(["1", "-2.5", "NaN", "+Inf"])))
                elif kind in ("histogram", "gaugehistogram"):
                    count = 0
                    les = sorted(rng.sample([-1.0, 0.5, 2.0], rng.randint(0, 2)))
                    for le in [*les, math.inf]:
                        count += rng.randint(0, 3)
                        text = "+Inf" if le == math.inf else repr(le)
                        rows.append((f"{name}_bucket", [*base, ("le", text)], str(count)))
                    negative = bool(les) and les[0] < 0
                    if kind == "gaugehistogram" and rng.random() < 0.7:
                        gsum = "-1" if negative else "2"
                        rows += [(f"{name}_gcount", base, str(count)), (f"{name}_gsum", base, gsum)]
                    elif kind == "histogram" and not negative and rng.random() < 0.7:
                        rows += [(f"{name}_count", base, str(count)), (f"{name}_sum", base, "2")]
                elif kind == "summary":
                    for q in rng.sample(["0.5", "0.99"], rng.randint(0, 2)):
                        rows.append((name, [*base, ("quantile", q)], "0.25"))
                    rows += [(f"{name}_count", base, "3"), (f"{name}_sum", base, "1.5")]
                elif kind == "stateset":
                    for state in ("on", "off"):
                        rows.append((name, [*base, (name, state)], rng.choice(["0", "1"])))
                else:
                    rows.append((f"{name}_info", [*base, ("v", "1")], "1"))
                for sample, labels, value in rows:
                    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
                    lines.append(f"{sample}{{{inner}}} {value}{stamp}")
    return "\n".join([*lines, "# EOF"]) + "\n"


def _mutated(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        op = rng.randrange(6)
        if op == 0:
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 1:
            lines.insert(j, lines[i])
        elif op == 2 and len(lines) > 1:
            del lines[i]
        elif op == 3 and " " in lines[i] and not lines[i].startswith("#"):
            head, _, _ = lines[i].rpartition(" ")
            lines[i] = head + " " + rng.choice(["-1", "NaN", "0.5", "2", "1e999", "+nan", "x"])
        elif op == 4:
            lines.insert(i, rng.choice(["", "# TYPE m0_gauge gauge", "# HELP m1_counter x"]))
        elif lines[i]:
            k = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:k] + rng.choice('"{},\\ =\tz') + lines[i][k + 1 :]
    return "\n".join(lines)


def _snapshot(cols: OmColumns) -> tuple[list[bytes], list[bytes], list[tuple[str, str, str, str]]]:
    return (
        [c.tobytes() for c in cols.ts_cols],
        [c.tobytes() for c in cols.val_cols],
        [(f.name, f.type, f.unit, f.help) for f in cols.families],
    )


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**32), mutate=st.booleans(), small_chunks=st.booleans())
def test_the_fast_path_accepts_only_what_the_careful_reader_accepts_and_reads_it_the_same(
    seed: int, mutate: bool, small_chunks: bool
) -> None:
    rng = random.Random(seed)
    text = _generated(rng)
    if mutate:
        text = _mutated(rng, text)
    data = text.encode()
    # Small chunks put a family, a metric, a point across pieces of a few lines.
    with mock.patch.object(chunks_module, "CHUNK_BYTES", 64 if small_chunks else 1 << 22):
        try:
            expected = _snapshot(parse_openmetrics_careful(data, CTX, Registry()))
        except ParseError as exc:
            with pytest.raises(Bail):
                parse_openmetrics_bulk(data, CTX, Registry())
            if len(exposition._expositions(data)) > 1:
                return  # whole expositions one after another: read as consecutive scrapes
            with pytest.raises(ParseError) as caught:
                parse_exposition(data, CTX)
            assert str(caught.value) == str(exc)
            return
        try:
            got = _snapshot(parse_openmetrics_bulk(data, CTX, Registry()))
        except Bail:
            return
    assert got == expected


def test_the_fast_path_takes_an_ordinary_exposition() -> None:
    rng = random.Random(3)
    data = "".join(
        [
            "# TYPE rpc histogram\n",
            *(
                f'rpc_bucket{{host="gpu node {h}",le="{le}"}} {n} {1795218000 + t}\n'
                for h in range(3)
                for t in range(5)
                for le, n in (("0.5", 1), ("+Inf", 2))
            ),
            "# TYPE up gauge\n",
            *(
                f'up{{host="{h}"}} {rng.randint(0, 1)} {1795218000 + t}.25\n'
                for h in "ab"
                for t in range(9)
            ),
            "# EOF\n",
        ]
    ).encode()
    fast = parse_openmetrics_bulk(data, CTX, Registry())
    assert _snapshot(fast) == _snapshot(parse_openmetrics_careful(data, CTX, Registry()))
    assert sum(len(c) for c in fast.ts_cols) == 3 * 5 * 2 + 2 * 9


def test_a_blank_line_anywhere_sends_the_fast_path_to_the_careful_reader() -> None:
    lines = [f'up{{n="{i}"}} {i} {1795218000 + i}' for i in range(12)]
    with mock.patch.object(chunks_module, "CHUNK_BYTES", 16):  # a chunk boundary at every line
        assert parse_openmetrics_bulk(om(*lines), CTX, Registry()).ts_cols
        for at in range(len(lines) + 1):
            data = om(*lines[:at], "", *lines[at:])
            with pytest.raises(Bail):
                parse_openmetrics_bulk(data, CTX, Registry())
            with pytest.raises(ParseError, match="blank line"):
                parse_exposition(data, CTX)
