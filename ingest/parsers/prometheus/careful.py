"""The line-by-line exposition parser: the reference for what the bulk path accepts.

Pure. It runs whenever the bulk path gives up and raises the precise :class:`ParseError` for
the first bad line. OpenMetrics has its own reference reader, :mod:`.openmetrics`.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

from ..series import check_order, series_repr
from ..text import decode
from ..timestamps import ms_iso
from ..types import ParseContext, ParseError
from .chunks import raw_chunks
from .grammar import (
    Meta,
    Registry,
    Unplaced,
    default_ms,
    no_timestamp,
    parse_timestamp,
    parse_value,
    scan_series,
)
from .openmetrics import parse_openmetrics_careful


def _chunks(data: bytes, file: str) -> Iterator[tuple[int, list[str]]]:
    """Yield (number of the first line, decoded lines) per piece of :func:`raw_chunks`."""
    lineno = 1
    for raw in raw_chunks(data):
        lines = decode(raw, file, first_line=lineno).split("\n")
        yield lineno, lines
        lineno += len(lines)


def parse_careful(
    data: bytes, ctx: ParseContext, openmetrics: bool, registry: Registry, meta: Meta
) -> tuple[list[array[int]], list[array[float]], list[str]]:
    """Per series (by registry id), its timestamps and values, and the warnings; the metadata
    into ``meta``. A sample whose timestamp the timeline cannot place is dropped and counted
    in the warnings (:class:`~.grammar.Unplaced`); its series may be left without samples.

    OpenMetrics is read by :func:`~.openmetrics.parse_openmetrics_careful` (its rules are
    stricter); this reads the text format.
    """
    if openmetrics:
        got = parse_openmetrics_careful(data, ctx, registry)
        for family in got.families:
            meta.type.setdefault(family.name, family.type)
            meta.help.setdefault(family.name, family.help)
            meta.unit.setdefault(family.name, family.unit)
        return got.ts_cols, got.val_cols, got.warnings
    file = ctx.name
    by_text = registry.by_text
    keys = registry.keys
    ts_cols: list[array[int]] = []
    val_cols: list[array[float]] = []
    fallback_ms = default_ms(ctx)
    unplaced = Unplaced()
    repeats = first_repeat = 0
    for first, lines in _chunks(data, file):
        for lineno, raw in enumerate(lines, first):
            line = raw.strip()
            if not line:
                continue
            if line[0] == "#":
                meta.comment(line, file, lineno)
                continue
            text, _, rest = line.partition(" ")
            sid = by_text.get(text)
            if sid is None or rest[:1] == "{":
                key, end = scan_series(line, file, lineno)
                text, rest = line[:end], line[end:]
                sid = by_text.get(text)
                if sid is None:
                    sid = registry.add(text, key)
            key = keys[sid]
            if sid == len(ts_cols):
                ts_cols.append(array("q"))
                val_cols.append(array("d"))
            hash_at = rest.find("#")
            if hash_at != -1:  # an OpenMetrics exemplar follows the sample
                rest = rest[:hash_at]
            tokens = rest.split()
            if not tokens:
                raise ParseError(
                    file, lineno, f"truncated line: expected a value after {series_repr(key)}"
                )
            if len(tokens) > 2:
                raise ParseError(
                    file,
                    lineno,
                    f"expected a value and an optional timestamp after {series_repr(key)}, "
                    f"got {len(tokens)} fields",
                )
            value = parse_value(tokens[0], key, file, lineno)
            if len(tokens) == 2:
                placed = parse_timestamp(tokens[1], key, openmetrics, file, lineno)
                if placed is None:
                    unplaced.add(key, lineno)
                    continue
                ts = placed
            elif fallback_ms is None:
                raise no_timestamp(key, file, lineno)
            else:
                ts = fallback_ms
            col = ts_cols[sid]
            if col and ts <= col[-1]:
                if ts == col[-1] and same_value(value, val_cols[sid][-1]):
                    # The same sample again: pulls of /federate or of an export that overlap
                    # (Prometheus ignores such repeats too). Read once, and counted.
                    repeats += 1
                    first_repeat = first_repeat or lineno
                    continue
                if ts == col[-1] == fallback_ms:
                    raise ParseError(
                        file,
                        lineno,
                        f"a second value for {series_repr(key)} at the file's time "
                        f"{ms_iso(ts)}: samples without a timestamp all take that time, so "
                        "this looks like a second scrape without timestamps; expected one "
                        "scrape per file (or timestamps on the samples)",
                    )
                check_order(file, lineno, key, col[-1], ts)
            col.append(ts)
            val_cols[sid].append(value)
    warnings = unplaced.warnings(file)
    if repeats:
        warnings.append(
            f"{file}: {repeats:,} samples repeated exactly (same series, time and value, "
            f"first at line {first_repeat}) were read once: overlapping pulls or exports"
        )
    return ts_cols, val_cols, warnings


def same_value(a: float, b: float) -> bool:
    """Whether two values are one (NaN and NaN included: a repeated scrape of a NaN gauge)."""
    return a == b or (a != a and b != b)
