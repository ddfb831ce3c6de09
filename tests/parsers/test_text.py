"""Decoding and KEY=VALUE (ingest/parsers/text.py), and every parser reading bytes through them."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from ingest import sniff
from ingest.parsers.text import decode, decode_lines, head_text, key_value
from ingest.parsers.types import UTC, ParseContext, ParseError

BOM = "\ufeff".encode()


def test_decode_drops_a_leading_byte_order_mark_only() -> None:
    assert decode(BOM + b"a" + BOM, "f") == "a\ufeff"


def test_an_undecodable_byte_is_a_parse_error_at_its_line() -> None:
    with pytest.raises(ParseError) as caught:
        decode(b"one\ntwo\nthr\xffee\n", "f.txt")
    assert str(caught.value) == "f.txt:3: expected UTF-8 text, found undecodable byte 0xff"


def test_a_piece_of_a_file_reports_the_line_in_the_whole_file() -> None:
    with pytest.raises(ParseError) as caught:
        decode(b"ok\n\xc3(", "big.prom", first_line=1001)
    assert caught.value.line == 1002


def test_decode_lines_drops_carriage_returns_and_keeps_the_last_empty_line() -> None:
    assert decode_lines(BOM + b"a\r\nb\n", "f") == ["a", "b", ""]


def test_head_text_never_raises_on_a_cut_character() -> None:
    assert head_text(BOM + "# é".encode()[:-1]) == "# \ufffd"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A=1", ("A", "1")),
        ("A=", ("A", "")),
        ("A=b=c", ("A", "b=c")),
        ("_x9=a b", ("_x9", "a b")),
        ("9A=1", None),
        ("A", None),
        ("A B=1", None),
        (" A=1", None),
        ("--flag=1", None),
    ],
)
def test_key_value_splits_at_the_first_equals_after_a_name(
    text: str, expected: tuple[str, str] | None
) -> None:
    assert key_value(text) == expected


def test_key_value_with_blanks_and_another_name_rule() -> None:
    dotted = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
    assert key_value(" a.b = 1", dotted, spaced=True) == ("a.b", " 1")
    assert key_value(" a.b = 1", dotted) is None


# Every format whose parser reads text: a BOM, as Windows editors write, changes nothing.
BOM_CASES = {
    "prometheus_text": b"# TYPE up gauge\nup 1 1795218000000\n",
    "sglang_log": b"[2026-11-20 15:40:00] Decode batch. #running-req: 3\n",
    "harness_jsonl": b'{"ts": "2026-11-20T08:00Z", "suite": "s", "case": "c", "status": "pass"}\n',
    "git_log": (
        b"commit " + b"a" * 40 + b"\nAuthor: A <a@example.com>\nDate: 2026-11-20T08:00:00Z\n\n"
        b"    subject\n"
    ),
    "nvidia_smi_csv": b"timestamp, index, utilization.gpu [%]\n2026/11/20 15:40:00.000, 0, 5 %\n",
}


@pytest.mark.parametrize("kind", sorted(BOM_CASES))
def test_a_byte_order_mark_changes_nothing(kind: str) -> None:
    data = BOM_CASES[kind]
    fmt = sniff.BY_KIND[kind]
    ctx = ParseContext(f"f.{kind}", tz=UTC, default_time=dt.datetime(2026, 11, 20, tzinfo=UTC))
    assert fmt.looks_like(ctx.name, BOM + data)
    plain, marked = fmt.parse(data, ctx), fmt.parse(BOM + data, ctx)
    assert [(e.at, e.title) for e in marked.events] == [(e.at, e.title) for e in plain.events]
    assert [(b.key, list(b.ts_ms), list(b.values)) for b in marked.samples] == [
        (b.key, list(b.ts_ms), list(b.values)) for b in plain.samples
    ]


def test_only_the_bulk_metrics_path_decodes_bytes_itself() -> None:
    # The bulk path gives up on undecodable bytes; the careful path then names the line
    # through text.decode. Every other parser decodes through text.py.
    parsers = Path(__file__).resolve().parents[2] / "ingest" / "parsers"
    offenders = {
        str(path.relative_to(parsers))
        for path in parsers.rglob("*.py")
        for line in path.read_text().splitlines()
        if '.decode("utf-8")' in line
    }
    assert offenders == {"text.py", "prometheus/bulk.py"}
