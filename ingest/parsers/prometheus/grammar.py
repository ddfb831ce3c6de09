"""The exposition grammar shared by Prometheus text 0.0.4 and OpenMetrics 1.0.

Pure. Series texts (``name{label="value",...}``), sample values and timestamps, and the
``# HELP`` / ``# TYPE`` / ``# UNIT`` metadata lines, each read with the exact
:class:`ParseError` for what is wrong. The two dialects differ here only in the unit of a
timestamp (OpenMetrics: seconds; text: integer milliseconds) and the type of an undeclared
family; both are passed in by the caller.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..series import series_repr
from ..timestamps import EpochUnit, TimeError, default_time, epoch_ms, to_epoch_ms
from ..types import ParseContext, ParseError, SampleBlock, SeriesKey

_METRIC_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

_TYPES = frozenset(
    {"counter", "gauge", "histogram", "summary", "untyped"}
    | {"unknown", "gaugehistogram", "stateset", "info"}  # OpenMetrics only
)
# Sample-name suffixes a family of each type may carry (OpenMetrics names the family without them).
_SUFFIXES: dict[str, tuple[str, ...]] = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "info": ("_info",),
}


def default_ms(ctx: ParseContext) -> int | None:
    """``ctx.default_time`` (naive: in ``ctx.tz``) in milliseconds, for samples without one."""
    given = default_time(ctx)
    return None if given is None else to_epoch_ms(given)


def no_timestamp(key: SeriesKey, file: str, line: int) -> ParseError:
    """The error for a sample without a timestamp when the file was given no default time."""
    return ParseError(
        file,
        line,
        f"sample for {series_repr(key)} has no timestamp: expected one, or a default time "
        "given for the file",
    )


def _skip_blanks(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t":
        pos += 1
    return pos


def _scan_labels(text: str, pos: int, file: str, line: int) -> tuple[list[tuple[str, str]], int]:
    """Parse ``{k="v",...}`` starting at the ``{`` at ``pos``; return the pairs and the end."""
    n = len(text)
    pos += 1
    labels: list[tuple[str, str]] = []
    seen: set[str] = set()
    while True:
        pos = _skip_blanks(text, pos)
        if pos >= n:
            raise ParseError(file, line, "truncated label set: expected '}' to close it")
        if text[pos] == "}":
            return labels, pos + 1
        match = _LABEL_NAME_RE.match(text, pos)
        if match is None:
            raise ParseError(
                file,
                line,
                f"malformed label set: expected a label name or '}}' at column {pos + 1}, "
                f"got {text[pos : pos + 10]!r}",
            )
        name = match.group()
        pos = _skip_blanks(text, match.end())
        if pos >= n or text[pos] != "=":
            raise ParseError(file, line, f"malformed label set: expected '=' after label {name!r}")
        pos = _skip_blanks(text, pos + 1)
        if pos >= n or text[pos] != '"':
            raise ParseError(
                file,
                line,
                f"malformed label set: expected '\"' to open the value of label {name!r}",
            )
        pos += 1
        parts: list[str] = []
        while True:
            quote = text.find('"', pos)
            if quote == -1:
                raise ParseError(
                    file, line, f"truncated value of label {name!r}: expected a closing '\"'"
                )
            slash = text.find("\\", pos, quote)
            if slash == -1:
                parts.append(text[pos:quote])
                pos = quote + 1
                break
            parts.append(text[pos:slash])
            escaped = text[slash + 1 : slash + 2]
            if escaped == "\\":
                parts.append("\\")
            elif escaped == '"':
                parts.append('"')
            elif escaped == "n":
                parts.append("\n")
            else:
                raise ParseError(
                    file,
                    line,
                    f"bad escape '\\{escaped}' in the value of label {name!r}: "
                    'expected \\\\, \\" or \\n',
                )
            pos = slash + 2
        if name in seen:
            raise ParseError(file, line, f"malformed label set: label {name!r} given twice")
        seen.add(name)
        labels.append((name, "".join(parts)))
        pos = _skip_blanks(text, pos)
        if pos >= n:
            raise ParseError(file, line, "truncated label set: expected '}' to close it")
        if text[pos] == ",":
            pos += 1
        elif text[pos] != "}":
            raise ParseError(
                file, line, f"malformed label set: expected ',' or '}}' after label {name!r}"
            )


def scan_series(text: str, file: str, line: int) -> tuple[SeriesKey, int]:
    """Parse the metric name and optional label set at the start of ``text``.

    Returns the key (labels sorted) and the index just past the series text.
    """
    match = _METRIC_NAME_RE.match(text)
    name = match.group() if match else ""
    end = match.end() if match else 0
    brace = _skip_blanks(text, end)
    if brace < len(text) and text[brace] == "{":
        pairs, end = _scan_labels(text, brace, file, line)
        labels = dict(pairs)
        if not name:
            if "__name__" not in labels:
                raise ParseError(
                    file, line, "expected a metric name before '{' or a __name__ label"
                )
            name = labels.pop("__name__")
            if not _METRIC_NAME_RE.fullmatch(name):
                raise ParseError(file, line, f"expected a valid metric name, got {name!r}")
        elif "__name__" in labels:
            raise ParseError(file, line, f"metric name given twice: {name!r} and a __name__ label")
        return SeriesKey(name, tuple(sorted(labels.items()))), end
    if not name:
        raise ParseError(file, line, f"expected a metric name, got {text[:40]!r}")
    if end < len(text) and not text[end].isspace():
        raise ParseError(
            file, line, f"expected '{{' or a space after metric name {name!r}, got {text[end]!r}"
        )
    return SeriesKey(name), end


# --- OpenMetrics 1.0: the stricter spelling of the same things ----------------------------------

# The ABNF's realnumber (leading zeros allowed, "e" in either case as RFC 5234 reads it); a value
# may also be an infinity or NaN, a timestamp may not.
_OM_REAL = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
OM_REAL_RE = re.compile(_OM_REAL)
OM_NUMBER_RE = re.compile(rf"{_OM_REAL}|[+-]?(?i:inf(?:inity)?)|(?i:nan)")
# HELP text: any character, a backslash escaping the next one. The ABNF wants '"' escaped too,
# but the official test suite reads ``\\\\"`` (an escaped backslash, then a quote) as valid.
_OM_HELP_RE = re.compile(r"(?:[^\\]|\\.)*")
# The rest of a label value: escaped characters (an escaped '"' too), then its closing '"'.
_OM_QUOTED_RE = re.compile(r'(?:[^"\\]|\\.)*"', re.DOTALL)
_OM_ESCAPES = {"n": "\n", '"': '"', "\\": "\\"}


def om_unescape(text: str) -> str:
    """An OpenMetrics escaped string: \\n, \\" and \\\\ as the ABNF says; any other escaped
    character keeps its backslash (the spec reads ``\\a`` as ``\\\\a``)."""
    if "\\" not in text:
        return text
    out: list[str] = []
    pos = 0
    while (slash := text.find("\\", pos)) != -1:
        out.append(text[pos:slash])
        char = text[slash + 1 : slash + 2]
        out.append(_OM_ESCAPES.get(char, "\\" + char))
        pos = slash + 2
    out.append(text[pos:])
    return "".join(out)


def om_help(text: str) -> str | None:
    """The unescaped text of an OpenMetrics HELP line, None when it is not an escaped string."""
    return om_unescape(text) if _OM_HELP_RE.fullmatch(text) else None


def scan_labels_om(
    text: str, pos: int, file: str, line: int, what: str = "label set"
) -> tuple[list[tuple[str, str]], int]:
    """Parse an OpenMetrics ``{k="v",...}`` at the ``{`` at ``pos``: no blanks, no trailing
    comma, any escaped character. Returns the pairs (in order) and the index past the ``}``."""
    n = len(text)
    pos += 1
    labels: list[tuple[str, str]] = []
    if pos < n and text[pos] == "}":
        return labels, pos + 1
    seen: set[str] = set()
    while True:
        match = _LABEL_NAME_RE.match(text, pos)
        if match is None:
            got = text[pos : pos + 10]
            raise ParseError(
                file,
                line,
                f"malformed {what}: expected a label name at column {pos + 1}, got {got!r}"
                if got
                else f"truncated {what}: expected a label name and '}}'",
            )
        name = match.group()
        pos = match.end()
        if text[pos : pos + 2] != '="':
            raise ParseError(file, line, f"malformed {what}: expected '=\"' after label {name!r}")
        quoted = _OM_QUOTED_RE.match(text, pos + 2)
        if quoted is None:
            raise ParseError(
                file, line, f"truncated value of label {name!r}: expected a closing '\"'"
            )
        value = om_unescape(text[pos + 2 : quoted.end() - 1])
        pos = quoted.end()
        if name in seen:
            raise ParseError(file, line, f"malformed {what}: label {name!r} given twice")
        if name.startswith("__"):
            raise ParseError(
                file,
                line,
                f"label name {name!r} is reserved (names starting with '__'): expected another",
            )
        seen.add(name)
        labels.append((name, value))
        if text[pos : pos + 1] == "}":
            return labels, pos + 1
        if text[pos : pos + 1] != ",":
            raise ParseError(
                file, line, f"malformed {what}: expected ',' or '}}' after label {name!r}"
            )
        pos += 1


def scan_series_om(text: str, file: str, line: int) -> tuple[SeriesKey, int]:
    """The OpenMetrics ``name{labels}`` at the start of ``text`` (the name is required and the
    label set follows it directly); returns the key (labels sorted) and the index past it."""
    match = _METRIC_NAME_RE.match(text)
    if match is None:
        raise ParseError(file, line, f"expected a metric name, got {text[:40]!r}")
    name, end = match.group(), match.end()
    if text[end : end + 1] == "{":
        pairs, end = scan_labels_om(text, end, file, line)
        return SeriesKey(name, tuple(sorted(pairs))), end
    return SeriesKey(name), end


def om_value(token: str, key: SeriesKey, file: str, line: int) -> float:
    """An OpenMetrics sample value: a real number, [+-]Inf(inity) or NaN, within float64."""
    if OM_NUMBER_RE.fullmatch(token):
        value = float(token)
        if not math.isinf(value) or token[-1] in "fFyY":
            return value
    raise ParseError(
        file,
        line,
        f"bad number for {series_repr(key)}: expected a float64 (or NaN, +Inf, -Inf), "
        f"got {_got(token)}",
    )


def _got(token: str) -> str:
    return repr(token) if token else "nothing (two spaces, or one at the end of the line?)"


def om_seconds(
    token: str, key: SeriesKey, file: str, line: int, *, exemplar: bool = False
) -> float:
    """An OpenMetrics timestamp (of the sample of ``key``, or of its exemplar): a real number of
    seconds. One spelled with more digits than a float64 holds is valid and comes back as an
    infinity (no time: :func:`placed_ms` says so); ``Inf`` and ``NaN`` are no timestamps."""
    if OM_REAL_RE.fullmatch(token):
        return float(token)
    what = "of the exemplar of" if exemplar else "for"
    raise ParseError(
        file,
        line,
        f"bad timestamp {what} {series_repr(key)}: expected seconds since 1970 as a number, "
        f"got {_got(token)}",
    )


# --- both dialects -------------------------------------------------------------------------


def parse_value(token: str, key: SeriesKey, file: str, line: int) -> float:
    try:
        if "_" in token:
            raise ValueError(token)
        return float(token)
    except ValueError:
        raise ParseError(
            file,
            line,
            f"bad number for {series_repr(key)}: expected a float (or NaN, +Inf, -Inf), "
            f"got {token!r}",
        ) from None


def parse_timestamp(
    token: str, key: SeriesKey, openmetrics: bool, file: str, line: int
) -> int | None:
    """A sample's timestamp in milliseconds, or None for a valid one the timeline cannot place
    (outside the years 1 to 9999, see :class:`Unplaced`); a :class:`ParseError` for a token
    that is no timestamp."""
    if openmetrics:
        return placed_ms(om_seconds(token, key, file, line), "s")
    try:
        if "_" in token:
            raise ValueError(token)
        number = int(token)
    except ValueError:
        if _INTEGER_RE.fullmatch(token):
            return None  # more digits than int() reads (4,300): no time either
        raise ParseError(
            file,
            line,
            f"bad timestamp for {series_repr(key)}: expected integer milliseconds, "
            f"got {_shown(token)}",
        ) from None
    return placed_ms(number, "ms")


_INTEGER_RE = re.compile(r"[+-]?[0-9]+")


def placed_ms(number: int | float, unit: EpochUnit) -> int | None:
    """A valid timestamp as milliseconds on the timeline, None when it falls outside the years 1
    to 9999 (or is a float64 infinity: more digits than a float holds)."""
    try:
        return epoch_ms(number, unit)
    except TimeError:
        return None


def _shown(token: str) -> str:
    return repr(token) if len(token) <= 40 else f"{token[:40]!r}... ({len(token)} characters)"


@dataclass
class Unplaced:
    """Samples dropped because their timestamp, valid in the format, is outside the years 1 to
    9999 that the timeline (Python's datetime, Postgres) holds: counted per series, with the
    first line of each, for one warning (nothing is lost silently)."""

    count: int = 0
    lines: dict[SeriesKey, int] = field(default_factory=dict)  # series -> its first such line

    def add(self, key: SeriesKey, line: int) -> None:
        self.count += 1
        self.lines.setdefault(key, line)

    def warnings(self, file: str) -> list[str]:
        if not self.count:
            return []
        shown = [f"{series_repr(key)} (line {line})" for key, line in list(self.lines.items())[:5]]
        more = f" and {len(self.lines) - 5} more series" if len(self.lines) > 5 else ""
        first = min(self.lines.values())
        return [
            f"{file}:{first}: {self.count} sample(s) dropped: their timestamps are valid but "
            f"outside the years 1 to 9999, which the timeline cannot hold: "
            f"{', '.join(shown)}{more}"
        ]


_HELP_ESCAPE_RE = re.compile(r"\\(.)")


def _unescape_help(match: re.Match[str]) -> str:
    char = match.group(1)
    return "\n" if char == "n" else char if char == "\\" else match.group(0)


def default_type(*, openmetrics: bool) -> str:
    """The type of a family no ``# TYPE`` line declares."""
    return "unknown" if openmetrics else "untyped"


class Meta:
    """HELP/TYPE/UNIT metadata by family name; the first statement for a name wins."""

    def __init__(self) -> None:
        self.type: dict[str, str] = {}
        self.help: dict[str, str] = {}
        self.unit: dict[str, str] = {}

    def comment(self, line: str, file: str, lineno: int) -> None:
        parts = line[1:].split(None, 2)
        if not parts or parts[0] not in ("HELP", "TYPE", "UNIT"):
            return  # "# EOF" and free comments carry no metadata
        keyword = parts[0]
        if len(parts) < 2:
            raise ParseError(
                file, lineno, f"truncated line: expected a metric name after # {keyword}"
            )
        name = parts[1]
        if not _METRIC_NAME_RE.fullmatch(name):
            raise ParseError(
                file, lineno, f"expected a metric name after # {keyword}, got {name!r}"
            )
        rest = parts[2].strip() if len(parts) == 3 else ""
        if keyword == "HELP":
            self.help.setdefault(name, _HELP_ESCAPE_RE.sub(_unescape_help, rest))
        elif keyword == "UNIT":
            self.unit.setdefault(name, rest)
        else:
            if rest not in _TYPES:
                raise ParseError(
                    file,
                    lineno,
                    f"expected a metric type after '# TYPE {name}' "
                    f"({', '.join(sorted(_TYPES))}), got {rest!r}",
                )
            self.type.setdefault(name, rest)

    def family(self, name: str) -> str | None:
        if name in self.type or name in self.help or name in self.unit:
            return name
        for typ, suffixes in _SUFFIXES.items():
            for suffix in suffixes:
                if name.endswith(suffix):
                    base = name[: -len(suffix)]
                    if self.type.get(base) == typ:
                        return base
        return None

    def fill(self, block: SampleBlock, default_type: str) -> None:
        family = self.family(block.key.name)
        if family is None:
            block.type = default_type
            return
        block.type = self.type.get(family, default_type)
        block.help = self.help.get(family, "")
        block.unit = self.unit.get(family, "")


class Registry:
    """Series text -> series id; texts naming the same series (label order, spacing) share one."""

    def __init__(self) -> None:
        self.by_text: dict[str, int] = {}
        self.by_masked: dict[str, int] = {}  # texts with spaces masked by NUL (bulk path)
        self.by_key: dict[SeriesKey, int] = {}
        self.keys: list[SeriesKey] = []

    def add(self, text: str, key: SeriesKey) -> int:
        sid = self.by_key.get(key)
        if sid is None:
            sid = self.by_key[key] = len(self.keys)
            self.keys.append(key)
        self.by_text[text] = sid
        return sid
