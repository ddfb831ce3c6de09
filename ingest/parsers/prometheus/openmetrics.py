"""OpenMetrics 1.0 as its specification reads it: the rules, and the line-by-line reader.

Pure. :func:`parse_openmetrics_careful` is the reference: it reads the file line by line, keeps
the metric-family state machine and raises the :class:`ParseError` of the first line that breaks
a rule. The fast path (:mod:`.om_bulk`) checks the same rules over whole columns and hands the
file to this one whenever it cannot show that they hold.

The rules (OpenMetrics 1.0, with the official parser test suite's reading of it):

* Lines end with ``\\n`` alone; no blank line, no byte order mark; the last line is ``# EOF``
  (a final newline after it is optional) and nothing follows it.
* ``#`` lines are ``# HELP``, ``# TYPE``, ``# UNIT`` (exactly one space between the fields) or
  ``# EOF``; no other comment. A family's metadata comes before its samples, each kind at most
  once; TYPE is one of counter, gauge, histogram, gaugehistogram, stateset, info, summary,
  unknown (``untyped`` is the text format's word). A UNIT must end the family name (``_<unit>``);
  info and stateset families have none. HELP text may escape any character.
* A sample is ``name{labels} value [timestamp] [# {labels} value [timestamp]]`` with single
  spaces; labels without blanks or a trailing comma, any character may be escaped (``\\z``
  keeps its backslash); a value is a float64 (``NaN``, ``+Inf``, ``-Inf``); a timestamp is a
  finite number of seconds.
* Families are not interleaved and their names cannot clash with another family's sample names
  (a counter ``a`` owns ``a_total`` and ``a_created``). A sample whose name no family declared
  opens a family of type unknown. Sample names by type: counter ``_total``/``_created``;
  histogram ``_bucket``/``_count``/``_sum``/``_created``; gaugehistogram
  ``_bucket``/``_gcount``/``_gsum``; summary the name itself (with ``quantile``),
  ``_count``/``_sum``/``_created``; info ``_info``; gauge, stateset, unknown the name itself.
* A metric (a family's label set, less ``le``, ``quantile`` or the stateset's state label) is not
  interleaved with another; its samples all carry a timestamp or none do, and timestamps do not
  go back (a repeat is allowed). Samples of one metric with one timestamp form a point.
* Values: counter totals, histogram and summary sums and counts, buckets are not NaN and not
  negative; counts and buckets are whole numbers; quantiles are in [0, 1] and their values not
  negative; gauge-histogram gsums are not NaN; stateset values are 0 or 1, info values 1.
* A histogram or gauge-histogram point has buckets with increasing ``le`` (a real number or
  ``+Inf``), cumulative values, a ``+Inf`` bucket, and a count equal to it exactly when it has a
  sum; a histogram with a negative bucket has no sum, a gauge histogram's gsum is negative only
  with one.
* Exemplars (``# {labels} value [timestamp]``) only on counter totals and buckets; at most 128
  characters of label names and values; a bucket's exemplar value is at most its ``le``.

What the timeline adds: a timestamp becomes whole milliseconds. The specification puts no bound
on it, so a file with a timestamp outside the years 1 to 9999 (what Python's datetime and
Postgres hold; ``1e300``, or more digits than a float64 holds) is valid and parses, but that
sample cannot be placed on the timeline: it is dropped, after the rules above have checked it,
and counted in a warning naming its series and line (:class:`~.grammar.Unplaced`). A sample
without a timestamp takes ``ctx.default_time``. Two samples of one series in the same
millisecond are valid OpenMetrics (a repeated timestamp); the first is kept, as Prometheus keeps
it, and a warning says how many were dropped. Exemplars are checked, then dropped.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from ..series import series_repr
from ..text import BOM, decode
from ..types import ParseContext, ParseError, SeriesKey
from .chunks import raw_chunks
from .grammar import (
    Registry,
    Unplaced,
    default_ms,
    no_timestamp,
    om_seconds,
    om_value,
    placed_ms,
    scan_labels_om,
    scan_series_om,
)
from .om_rules import Rules
from .om_types import EOF_LINE, EXEMPLAR_MAX_CHARS, Family

# --- reading lines --------------------------------------------------------------------------------


def _lines(data: bytes, file: str) -> Iterator[tuple[int, str, bool]]:
    """(line number, line, whether it is the very last piece of the file) for every line."""
    lineno = 1
    pending: tuple[int, str] | None = None
    for raw in raw_chunks(data):
        for line in decode(raw, file, first_line=lineno).split("\n"):
            if pending is not None:
                yield pending[0], pending[1], False
            pending = (lineno, line)
            lineno += 1
    if pending is not None:
        yield pending[0], pending[1], True


def _exemplar(rest: str, key: SeriesKey, file: str, lineno: int) -> float:
    """Check ``# {labels} value [timestamp]`` (``rest`` starts at the '#'); returns the value."""
    if not rest.startswith("# {"):
        raise ParseError(
            file,
            lineno,
            f"malformed exemplar after {series_repr(key)}: expected '# {{labels}} value "
            f"[timestamp]', got {rest[:30]!r}",
        )
    pairs, end = scan_labels_om(rest, 2, file, lineno, "exemplar label set")
    size = sum(len(k) + len(v) for k, v in pairs)
    if size > EXEMPLAR_MAX_CHARS:
        raise ParseError(
            file,
            lineno,
            f"exemplar labels of {series_repr(key)} hold {size} characters: expected at most "
            f"{EXEMPLAR_MAX_CHARS}",
        )
    if rest[end : end + 1] != " ":
        raise ParseError(
            file,
            lineno,
            f"malformed exemplar after {series_repr(key)}: expected ' value' after '}}'",
        )
    tokens = rest[end + 1 :].split(" ")
    if len(tokens) > 2:
        raise ParseError(
            file,
            lineno,
            f"malformed exemplar after {series_repr(key)}: expected a value and an optional "
            "timestamp, single spaces, nothing after",
        )
    value = om_value(tokens[0], key, file, lineno)
    if len(tokens) == 2:
        om_seconds(tokens[1], key, file, lineno, exemplar=True)
    return value


_STAMP_CACHE = 1 << 16


def _stamp(token: str, key: SeriesKey, file: str, line: int) -> tuple[float, int | None]:
    """A sample's timestamp in seconds and in the timeline's milliseconds (None: a valid
    timestamp the timeline cannot place)."""
    seconds = om_seconds(token, key, file, line)
    return seconds, placed_ms(seconds, "s")


@dataclass
class OmColumns:
    """What an OpenMetrics reader returns: per series id, its columns and family."""

    ts_cols: list[array[int]]
    val_cols: list[array[float]]
    families: list[Family]
    warnings: list[str]


def parse_openmetrics_careful(data: bytes, ctx: ParseContext, registry: Registry) -> OmColumns:
    """Read OpenMetrics line by line: the reference, naming the first line that breaks a rule."""
    file = ctx.name
    if data[:3] == BOM.encode():
        raise ParseError(file, 1, "byte order mark: expected none (OpenMetrics forbids it)")
    rules = Rules(file)
    by_text = registry.by_text
    keys = registry.keys
    ts_cols: list[array[int]] = []
    val_cols: list[array[float]] = []
    families: list[Family] = []
    fallback_ms = default_ms(ctx)
    stamps: dict[str, tuple[float, int | None]] = {}  # a timestamp token repeats for every series
    dropped, first_dropped = 0, 0
    exemplars, first_exemplar = 0, 0
    unplaced = Unplaced()
    eof = lineno = 0
    line = ""
    for lineno, line, last in _lines(data, file):
        if eof:
            if last and line == "":
                break
            raise ParseError(
                file,
                lineno,
                f"expected nothing after '# EOF' (line {eof}): an OpenMetrics exposition ends "
                "there (concatenated scrapes go one to a file)",
            )
        if line.endswith("\r"):
            raise ParseError(file, lineno, "line ends with '\\r\\n': expected '\\n' alone")
        if not line:
            if last:
                break
            raise ParseError(
                file, lineno, "blank line: expected none in OpenMetrics (a sample or '#' line)"
            )
        if line[0] == "#":
            if line == EOF_LINE:
                rules.finish()
                eof = lineno
            else:
                rules.metadata(line, lineno)
            continue
        text, _, rest = line.partition(" ")
        sid = by_text.get(text)
        if sid is None:
            key, end = scan_series_om(line, file, lineno)
            if line[end : end + 1] != " ":
                raise ParseError(
                    file,
                    lineno,
                    f"expected a space and a value after {series_repr(key)}, got "
                    f"{line[end : end + 10]!r}",
                )
            text, rest = line[:end], line[end + 1 :]
            sid = by_text.get(text)
            if sid is None:
                sid = registry.add(text, key)
        key = keys[sid]
        tokens = rest.split(" ", 2)
        value = om_value(tokens[0], key, file, lineno)
        ts: float | None = None
        exemplar: float | None = None
        stamp: tuple[float, int | None] | None = None
        if len(tokens) > 1:
            if tokens[1] == "#":
                exemplar = _exemplar(rest[len(tokens[0]) + 1 :], key, file, lineno)
            else:
                stamp = stamps.get(tokens[1])
                if stamp is None:
                    stamp = _stamp(tokens[1], key, file, lineno)
                    if len(stamps) < _STAMP_CACHE:
                        stamps[tokens[1]] = stamp
                ts = stamp[0]
                if len(tokens) > 2:
                    exemplar = _exemplar(tokens[2], key, file, lineno)
        family = rules.sample(sid, key, value, ts, exemplar, lineno)
        if exemplar is not None:
            exemplars += 1
            first_exemplar = first_exemplar or lineno
        if sid == len(ts_cols):
            ts_cols.append(array("q"))
            val_cols.append(array("d"))
            families.append(family)
        if stamp is not None:
            if stamp[1] is None:  # checked by the rules above, but no time on the timeline
                unplaced.add(key, lineno)
                continue
            ms = stamp[1]
        elif fallback_ms is None:
            raise no_timestamp(key, file, lineno)
        else:
            ms = fallback_ms
        col = ts_cols[sid]
        if col and ms <= col[-1]:  # the metric's order holds, so only a repeat is left
            dropped += 1
            first_dropped = first_dropped or lineno
            continue
        col.append(ms)
        val_cols[sid].append(value)
    if not eof:
        rules.finish()  # a broken last point is the earlier error
        where = 1 if not data else lineno if line == "" else lineno + 1
        raise ParseError(
            file, where, "expected '# EOF' as the last line: an OpenMetrics exposition ends with it"
        )
    warnings = unplaced.warnings(file)
    if dropped:
        warnings.append(
            f"{file}:{first_dropped}: {dropped} sample(s) repeat the millisecond of the sample "
            "before them in their series; the first of each was kept"
        )
    if exemplars:
        # The timeline keeps series, not traces: an exemplar (a trace id and its value) is
        # checked, then left out, and said so.
        warnings.append(
            f"{file}:{first_exemplar}: {exemplars} exemplar(s) read and not kept (the samples "
            "they annotate are)"
        )
    return OmColumns(ts_cols, val_cols, families, warnings)
