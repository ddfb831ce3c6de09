"""Prometheus text format 0.0.4 and OpenMetrics 1.0 exposition: the entry point.

Pure: bytes in, :class:`ParseResult` out. Every timestamp becomes milliseconds since the epoch
(UTC); a sample without one takes ``ctx.default_time``. Neither format bounds a timestamp, so in
both a sample whose timestamp falls outside the years 1 to 9999 (what Python's datetime and
Postgres hold) is valid but cannot be placed on the timeline: it is dropped, the file still
parses, and one warning counts such samples and names their series and first lines
(:class:`~.grammar.Unplaced`). A series left without samples by that is not returned.

Which format a file is: the caller may say (``parse_exposition(..., openmetrics=True)``, e.g.
from a content type ``application/openmetrics-text``); otherwise a file is OpenMetrics when its
name declares it (``*.om``) or it has a ``# EOF`` line, and the text format when not.

**OpenMetrics** is judged as its specification says (the rules: :mod:`.openmetrics`): one
exposition ending with ``# EOF``, families and metrics not interleaved, metadata first and once,
type-specific rules on names, labels and values, strict spelling. Anything that breaks a rule
refuses the whole file with the line and what was expected. Timestamps are seconds; a family
without TYPE is ``unknown``; samples after ``# EOF`` are an error.

**The text format** keeps its own, more lenient rules, as Prometheus reads scrapes and as files
of concatenated scrapes need:

* UTF-8 (a leading byte order mark dropped), lines ending in ``\n`` or ``\r\n``; blank lines
  and blanks around a line are ignored;
* ``# HELP`` / ``# TYPE`` (and ``# UNIT``) anywhere, repeated as each scrape repeats them (the
  first statement for a name wins); any other ``#`` line is a comment; no ``# EOF`` needed;
* a series is ``name{labels}`` or ``{__name__="name",...}``, with blanks allowed around ``{``,
  ``=`` and ``,`` and a trailing comma; label values escape ``\\``, ``\"`` and ``\n`` only
  (another escape is an error, as in Prometheus);
* the value and the optional timestamp follow after runs of blanks; a value is a float (``NaN``,
  ``+Inf``, ``-Inf``; no ``_``), a timestamp integer milliseconds of any size (Prometheus
  itself skips and counts a sample out of its time bounds rather than refusing the scrape;
  here it is dropped with the warning above); anything after a ``#`` on a sample line is
  ignored;
* families, series and scrapes may interleave freely; no type-specific rule is checked (a
  negative counter loads); an undeclared family is ``untyped``;
* within one series timestamps strictly increase in file order: a repeat is a duplicate sample
  and a step back an error, both reported with the offending line.

Each format has two readers: a bulk path (text: :mod:`.bulk`; OpenMetrics: :mod:`.om_bulk`),
fast on the ordinary shape of a file, and a careful line-by-line reader (:mod:`.careful`,
:mod:`.openmetrics`), the reference, which runs whenever the bulk path gives up and names the
first bad line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..series import drop_dcgm_blanks, series_repr
from ..text import head_text
from ..timestamps import ms_iso
from ..types import ParseContext, ParseError, ParseResult, SampleBlock, SeriesKey
from .bulk import Bail, gc_paused, parse_bulk
from .careful import parse_careful, same_value
from .chunks import has_eof_marker
from .grammar import Meta, Registry, default_ms, default_type
from .om_bulk import parse_openmetrics_bulk
from .om_types import is_openmetrics_name
from .openmetrics import parse_openmetrics_careful

if TYPE_CHECKING:
    import mmap

KIND_EXPOSITION = "prometheus_text"

# A sample: a name with optional labels, or the labels alone with the name among them
# (``{__name__="up", job="x"} 1 1700000000000``, as ``promtool tsdb dump`` writes them).
_SAMPLE_LINE_RE = re.compile(
    r"(?:[a-zA-Z_:][a-zA-Z0-9_:]*\s*(\{.*\})?|\{\s*__name__\s*=.*\})"
    r"\s+[-+]?(?:[0-9.]|Inf|NaN)\S*(\s+[-+]?[0-9.]+)?(\s+#.*)?"
)


def is_openmetrics(data: bytes | mmap.mmap, name: str) -> bool:
    """Whether a file is judged as OpenMetrics: its name declares it (``*.om``) or it has a
    ``# EOF`` line. Anything else is Prometheus text format 0.0.4."""
    return is_openmetrics_name(name) or has_eof_marker(data)


def parse_exposition(
    data: bytes, ctx: ParseContext, *, openmetrics: bool | None = None
) -> ParseResult:
    """Parse Prometheus text format 0.0.4 or OpenMetrics 1.0 (see the module docstring), less
    DCGM's "no reading" values (:func:`~..series.drop_dcgm_blanks`)."""
    result = _parse_exposition(data, ctx, openmetrics=openmetrics)
    drop_dcgm_blanks(result, ctx.name)
    return result


def _parse_exposition(
    data: bytes, ctx: ParseContext, *, openmetrics: bool | None = None
) -> ParseResult:
    """Parse Prometheus text format 0.0.4 or OpenMetrics 1.0 (see the module docstring).

    ``openmetrics``: True or False when the caller knows the format (a content type, a
    conformance run); None decides by :func:`is_openmetrics`. A sample without a timestamp
    takes ``ctx.default_time``. Returns one SampleBlock per series, with type/unit/help.
    """
    if openmetrics is None:
        openmetrics = is_openmetrics(data, ctx.name)
    if openmetrics:
        return _parse_openmetrics(data, ctx)
    registry, meta = Registry(), Meta()
    with gc_paused():
        try:
            ts_cols, val_cols = parse_bulk(data, ctx, False, registry, meta)
            warnings: list[str] = []
        except Bail:
            registry, meta = Registry(), Meta()
            ts_cols, val_cols, warnings = parse_careful(data, ctx, False, registry, meta)
    result = ParseResult(kind=KIND_EXPOSITION, warnings=warnings)
    for key, ts_col, val_col in zip(registry.keys, ts_cols, val_cols, strict=True):
        if not ts_col:
            continue  # every sample of the series was dropped (see the module docstring)
        block = SampleBlock(key=key, ts_ms=ts_col, values=val_col)
        meta.fill(block, default_type(openmetrics=False))
        result.samples.append(block)
    if not result.samples:
        result.warnings.append(f"{ctx.name}: no samples found")
    return result


# A family whose name holds a ':' (``sglang:num_running_reqs``), as metadata lines declare it.
_COLON_FAMILY_RE = re.compile(
    rb"^# (?:TYPE|HELP|UNIT) ([a-zA-Z_:][a-zA-Z0-9_:]*:[a-zA-Z0-9_:]*) ", re.M
)
_DECLARED_RE = re.compile(rb"^# (?:TYPE|HELP|UNIT) (\S+) ", re.M)
_OM_SUFFIX = rb"(?:_total|_created|_bucket|_count|_sum|_gcount|_gsum|_info)?"


def _colon_families(data: bytes) -> tuple[bytes, int]:
    """``data`` with the samples of a family declared with a ':' named as declared, when
    they were written with '_' in its place (and how many sample lines were renamed).

    prometheus-client 0.26 writes OpenMetrics that way: ``# TYPE sglang:prompt_tokens
    counter`` above ``sglang_prompt_tokens_total{...}`` (it escapes ':' in sample names only),
    which is what SGLang or vLLM answer when asked for OpenMetrics. Read strictly, each
    sample would open a family of its own; the series are the declared family's."""
    declared = set(_COLON_FAMILY_RE.findall(data))
    if not declared:
        return data, 0
    named = set(_DECLARED_RE.findall(data))
    spelled: dict[bytes, list[bytes]] = {}
    for name in declared:
        spelled.setdefault(name.replace(b":", b"_"), []).append(name)
    # Only an unambiguous spelling (two families never give the same one) that no family of
    # the file declares itself.
    escaped = {e: ns[0] for e, ns in spelled.items() if len(ns) == 1 and e not in named}
    if not escaped:
        return data, 0
    names = b"|".join(re.escape(e) for e in sorted(escaped, key=len, reverse=True))
    pattern = re.compile(rb"^(" + names + rb")(" + _OM_SUFFIX + rb")(?=[{ ])", re.M)

    def renamed(m: re.Match[bytes]) -> bytes:
        if m.group(0) in named:  # a sample of a family declared under that very name
            return m.group(0)
        return escaped[m.group(1)] + m.group(2)

    return pattern.subn(renamed, data)


_EOF_LINE_RE = re.compile(rb"^# EOF\r?\n", re.M)


def _expositions(data: bytes) -> list[tuple[int, bytes]]:
    """(first line, bytes) of each OpenMetrics exposition in ``data``: scrapes saved one after
    another (``curl >> file``, registries joined) each end with their own ``# EOF``."""
    ends = [m.end() for m in _EOF_LINE_RE.finditer(data)]
    if ends and not data[ends[-1] :].strip():
        ends.pop()  # the file's own last line
    parts, start, line = [], 0, 1
    for end in ends:
        parts.append((line, data[start:end]))
        line += data.count(b"\n", start, end)
        start = end
    parts.append((line, data[start:]))
    # Only whole expositions, each with something before its own '# EOF': anything else after
    # an '# EOF' is what the format forbids, and the reader says so at its line.
    if len(parts) > 1 and not all(
        _EOF_LINE_RE.search(part + b"\n") and part.strip() != b"# EOF" for _, part in parts
    ):
        return [(1, data)]
    return parts


def _parse_openmetrics(data: bytes, ctx: ParseContext) -> ParseResult:
    parts = _expositions(data)
    if len(parts) == 1:
        return _parse_one_openmetrics(data, ctx)
    results = []
    for k, (first_line, part) in enumerate(parts, 1):
        try:
            results.append((first_line, _parse_one_openmetrics(part, ctx)))
        except ParseError as exc:
            raise ParseError(
                exc.file,
                exc.line + first_line - 1 if exc.line else first_line,
                f"{exc.message} (in exposition {k} of {len(parts)}, from line {first_line})",
            ) from None
    return _consecutive(results, ctx)


def _consecutive(results: list[tuple[int, ParseResult]], ctx: ParseContext) -> ParseResult:
    """Several expositions of one file as consecutive scrapes: each series' samples joined in
    file order. A sample repeated exactly is read once (counted); another value at a time
    already read is refused, as within one exposition."""
    fallback = default_ms(ctx)
    merged: dict[SeriesKey, SampleBlock] = {}
    # Each exposition's warnings, at the file's line numbers; the same warning of several
    # expositions once, with how many said it.
    said: dict[str, tuple[str, int]] = {}
    at_line = re.compile(re.escape(ctx.name) + r":(\d+):")
    repeats = 0
    for first_line, result in results:
        for w in result.warnings:
            if w.endswith("no samples found"):
                continue
            if m := at_line.match(w):
                w = f"{ctx.name}:{int(m.group(1)) + first_line - 1}:" + w[m.end() :]
            kind = at_line.sub("", w, 1)
            text, n = said.get(kind, (w, 0))
            said[kind] = (text, n + 1)
        for block in result.samples:
            have = merged.get(block.key)
            if have is None:
                merged[block.key] = block
                continue
            for ts, value in zip(block.ts_ms, block.values, strict=True):
                last = have.ts_ms[-1]
                if ts > last:
                    have.ts_ms.append(ts)
                    have.values.append(value)
                elif ts == last and same_value(value, have.values[-1]):
                    repeats += 1
                else:
                    why = (
                        "samples without a timestamp all take the file's time, so the "
                        "expositions look like scrapes without timestamps; expected one scrape "
                        "per file (or timestamps on the samples)"
                        if ts == last == fallback
                        else "expected each scrape's times after the one before"
                    )
                    raise ParseError(
                        ctx.name,
                        first_line,
                        f"the exposition from this line has {series_repr(block.key)} at "
                        f"{ms_iso(ts)}, not after {ms_iso(last)} of the one before: {why}",
                    )
    out = ParseResult(kind=KIND_EXPOSITION)
    out.samples.extend(merged.values())
    out.warnings.append(
        f"{ctx.name}: {len(results)} OpenMetrics expositions one after another (each ended "
        "by '# EOF'), read as consecutive scrapes"
        + (f"; {repeats} samples repeated exactly were read once" if repeats else "")
    )
    out.warnings.extend(
        text + (f" (and in {n - 1} more of the expositions)" if n > 1 else "")
        for text, n in said.values()
    )
    if not out.samples:
        out.warnings.append(f"{ctx.name}: no samples found")
    return out


def _parse_one_openmetrics(data: bytes, ctx: ParseContext) -> ParseResult:
    data, renamed = _colon_families(data)
    registry = Registry()
    with gc_paused():
        try:
            cols = parse_openmetrics_bulk(data, ctx, registry)
        except Bail:
            registry = Registry()
            cols = parse_openmetrics_careful(data, ctx, registry)
    result = ParseResult(kind=KIND_EXPOSITION, warnings=cols.warnings)
    if renamed:
        result.warnings.append(
            f"{ctx.name}: {renamed} sample line(s) named their family with '_' for the ':' "
            "its metadata declares (prometheus-client's escaping): read under the declared "
            "names"
        )
    for key, ts_col, val_col, family in zip(
        registry.keys, cols.ts_cols, cols.val_cols, cols.families, strict=True
    ):
        if not ts_col:
            continue  # every sample of the series was dropped (see the module docstring)
        result.samples.append(
            SampleBlock(
                key=key,
                ts_ms=ts_col,
                values=val_col,
                type=family.type,
                unit=family.unit,
                help=family.help,
            )
        )
    if not result.samples:
        result.warnings.append(f"{ctx.name}: no samples found")
    return result


def looks_like_exposition(name: str, head: bytes) -> bool:
    """True when the head reads as Prometheus text / OpenMetrics exposition."""
    lines = [line.strip() for line in head_text(head).splitlines()[:40]]
    lines = [line for line in lines if line]
    if not lines:
        return False
    complete = lines[:-1] if len(lines) > 1 else lines  # the head may cut the last line
    meta = samples = other = 0
    for line in complete:
        if line.startswith(("# HELP ", "# TYPE ", "# UNIT ")) or line == "# EOF":
            meta += 1
        elif line.startswith("#"):
            continue
        elif _SAMPLE_LINE_RE.fullmatch(line):
            samples += 1
        elif line in ("...", "…"):
            other += 1  # a paste that cut lines out
        else:
            return False
    if not other:
        return bool(meta) or (
            samples >= 1 and name.lower().endswith((".prom", ".om", ".metrics", ".txt"))
        )
    # A pasted scrape cut with "..." lines is plainly one: its parser names the line.
    return meta >= 2 and samples >= 2
