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

What the timeline adds: a timestamp becomes whole milliseconds and must fall in the years 1 to
9999 (else a :class:`ParseError`, as for every format); a sample without one takes
``ctx.default_time``. Two samples of one series in the same millisecond are valid OpenMetrics
(a repeated timestamp); the first is kept, as Prometheus keeps it, and a warning says how many
were dropped. Exemplars are checked, then dropped.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..series import series_repr
from ..text import BOM, decode
from ..timestamps import TimeError, epoch_ms
from ..types import ParseContext, ParseError, SeriesKey
from .chunks import raw_chunks
from .grammar import (
    OM_REAL_RE,
    Registry,
    default_ms,
    no_timestamp,
    om_help,
    om_seconds,
    om_value,
    scan_labels_om,
    scan_series_om,
)

TYPES = (
    "counter",
    "gauge",
    "histogram",
    "gaugehistogram",
    "stateset",
    "info",
    "summary",
    "unknown",
)
SUFFIXES: dict[str, tuple[str, ...]] = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "gaugehistogram": ("_bucket", "_gcount", "_gsum"),
    "stateset": ("",),
    "info": ("_info",),
    "summary": ("", "_count", "_sum", "_created"),
    "unknown": ("",),
}
HISTOGRAMS = frozenset({"histogram", "gaugehistogram"})

# What a sample's value may be, by (family type, name suffix).
ANY, COUNTER, COUNT, GSUM, QUANTILE, BOOL, ONE = range(7)
VALUE_RULE: dict[tuple[str, str], int] = {
    ("counter", "_total"): COUNTER,
    ("histogram", "_bucket"): COUNT,
    ("histogram", "_count"): COUNT,
    ("histogram", "_sum"): COUNTER,
    ("gaugehistogram", "_bucket"): COUNT,
    ("gaugehistogram", "_gcount"): COUNT,
    ("gaugehistogram", "_gsum"): GSUM,
    ("summary", ""): QUANTILE,
    ("summary", "_count"): COUNT,
    ("summary", "_sum"): COUNTER,
    ("stateset", ""): BOOL,
    ("info", "_info"): ONE,
}
_RULE_WORDS = {
    COUNTER: "a number that is neither NaN nor negative",
    COUNT: "a whole number that is not negative",
    GSUM: "a number that is not NaN",
    QUANTILE: "a quantile value that is not negative (or NaN)",
    BOOL: "0 or 1 (a state is false or true)",
    ONE: "1 (an info sample's value)",
}
_SPECIAL_WORDS = {"le": "bucket", "quantile": "quantile"}
EXEMPLAR_SUFFIX = {"counter": "_total", "histogram": "_bucket", "gaugehistogram": "_bucket"}
EXEMPLAR_MAX_CHARS = 128

META_RE = re.compile(r"# (HELP|TYPE|UNIT) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)")
UNIT_RE = re.compile(r"[a-zA-Z0-9_:]*")
EOF_LINE = "# EOF"


def value_ok(rule: int, value: float) -> bool:
    """Whether ``value`` keeps ``rule`` (one of the constants above)."""
    if rule == ANY:
        return True
    if rule == COUNTER:
        return value >= 0  # False for NaN
    if rule == COUNT:
        return value >= 0 and value.is_integer()
    if rule == GSUM:
        return not math.isnan(value)
    if rule == QUANTILE:
        return not value < 0
    if rule == BOOL:
        return value in (0.0, 1.0)
    return value == 1.0


def le_value(text: str) -> float | None:
    """A bucket's ``le``: a real number or ``+Inf`` (the spelling exposers must use)."""
    if text == "+Inf":
        return math.inf
    if OM_REAL_RE.fullmatch(text):
        value = float(text)
        return value if math.isfinite(value) else None
    return None


def quantile_value(text: str) -> float | None:
    """A summary's ``quantile``: a real number in [0, 1]."""
    if OM_REAL_RE.fullmatch(text):
        value = float(text)
        if 0.0 <= value <= 1.0:
            return value
    return None


def is_openmetrics_name(name: str) -> bool:
    """Whether a file name declares OpenMetrics (``*.om``)."""
    return name.lower().endswith(".om")


def special_label(kind: str, suffix: str, family: str) -> str | None:
    """The label that belongs to a point rather than to the metric, for samples of ``kind``
    named with ``suffix``: ``le`` on buckets, ``quantile`` on a summary's quantiles, the
    family's name on a stateset's states."""
    if kind in HISTOGRAMS and suffix == "_bucket":
        return "le"
    if kind == "summary" and suffix == "":
        return "quantile"
    if kind == "stateset":
        return family
    return None


class LabelError(ValueError):
    """A series lacks a label its type needs, or has one it forbids (the message says which)."""


def metric_of(
    family: Family, suffix: str, key: SeriesKey
) -> tuple[float, tuple[tuple[str, str], ...]]:
    """A series' ``le`` (NaN but on buckets) and its metric (its labels less the point's own:
    ``le``, ``quantile``, a stateset's state); :class:`LabelError` when its labels break what
    its family's type says."""
    kind = family.type
    labels = dict(key.labels)
    special = special_label(kind, suffix, family.name)
    if kind in HISTOGRAMS and "le" in labels and suffix != "_bucket":
        raise LabelError(f"{series_repr(key)}: only buckets carry an 'le' label")
    if kind == "summary" and "quantile" in labels and suffix != "":
        raise LabelError(f"{series_repr(key)}: only a summary's quantiles carry a 'quantile' label")
    if special is None:
        return math.nan, key.labels
    text = labels.get(special)
    if text is None:
        raise LabelError(
            f"{series_repr(key)} has no {special!r} label: expected one on every "
            f"{_SPECIAL_WORDS.get(special, 'state')} of {kind} {family.name!r}"
        )
    le = math.nan
    if special == "le":
        parsed = le_value(text)
        if parsed is None:
            raise LabelError(f"bad le={text!r} on {series_repr(key)}: expected a number or '+Inf'")
        le = parsed
    elif special == "quantile" and quantile_value(text) is None:
        raise LabelError(
            f"bad quantile={text!r} on {series_repr(key)}: expected a number from 0 to 1"
        )
    return le, tuple(p for p in key.labels if p[0] != special)


@dataclass(eq=False)
class Family:
    """One metric family as the file declares it."""

    name: str
    line: int
    type: str = "unknown"
    help: str = ""
    unit: str = ""
    meta: dict[str, int] = field(default_factory=dict)  # HELP/TYPE/UNIT -> its line
    names: dict[str, str] = field(default_factory=dict)  # sample name -> suffix
    sampled: bool = False
    last: int = 0  # the family's last line so far

    def __post_init__(self) -> None:
        self.names = {self.name: ""}

    def allowed(self) -> str:
        return ", ".join(sorted(self.names))


@dataclass
class _Point:
    """The samples of one histogram point (one metric, one timestamp) read so far."""

    le: float = -math.inf
    buckets: int = 0
    bucket_value: float = 0.0
    negative: bool = False
    inf_value: float | None = None
    count: tuple[float, int] | None = None
    sum: tuple[float, int] | None = None
    created: bool = False
    last: int = 0


@dataclass(frozen=True)
class _Role:
    """What one series is within its family, worked out at its first sample."""

    family: Family
    kind: str
    rule: int  # what its values may be
    exemplars: bool  # whether it may carry exemplars
    le: float  # a bucket's le, else NaN
    group: tuple[tuple[str, str], ...]  # its metric: the labels less le/quantile/state


class Rules:
    """The OpenMetrics family state machine, fed one line at a time in file order."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.families: dict[str, Family] = {}
        self.claims: dict[str, Family] = {}  # every sample name a family may use
        self.cur: Family | None = None
        self.group: tuple[tuple[str, str], ...] | None = None
        self.group_ts: float | None = None
        self.groups: dict[tuple[tuple[str, str], ...], int] = {}  # metric -> its last line
        self.point: _Point | None = None
        self.roles: dict[int, _Role] = {}  # series id -> its role, while its family holds

    def fail(self, line: int, message: str) -> ParseError:
        return ParseError(self.file, line, message)

    # --- families ---------------------------------------------------------------------------

    def _open(self, name: str, line: int) -> Family:
        self._close()
        seen = self.families.get(name)
        if seen is not None:
            raise self.fail(
                line,
                f"family {name!r} already ended (it started on line {seen.line}): expected a "
                "family's metadata and samples together, not interleaved with another's",
            )
        owner = self.claims.get(name)
        if owner is not None:
            raise self.fail(
                line,
                f"family name {name!r} clashes with {owner.type} family {owner.name!r} (line "
                f"{owner.line}), whose samples may be named {name!r}: expected another name",
            )
        family = self.cur = self.families[name] = Family(name, line)
        self.claims[name] = family
        return family

    def _close(self) -> None:
        self._close_point()
        self.group, self.group_ts, self.groups = None, None, {}

    def metadata(self, line: str, lineno: int) -> None:
        match = META_RE.fullmatch(line)
        if match is None:
            keyword = line[2:6]
            if line[:7] in ("# HELP ", "# TYPE ", "# UNIT ") or line in (
                "# HELP",
                "# TYPE",
                "# UNIT",
            ):
                shape = {
                    "HELP": "# HELP <metric name> <text>",
                    "TYPE": "# TYPE <metric name> <type>",
                    "UNIT": "# UNIT <metric name> <unit>",
                }[keyword]
                raise self.fail(lineno, f"malformed # {keyword} line: expected '{shape}'")
            raise self.fail(
                lineno,
                "expected '# HELP', '# TYPE', '# UNIT' or '# EOF': OpenMetrics allows no other "
                f"line starting with '#', got {line[:40]!r}",
            )
        keyword, name, value = match.groups()
        family = self.cur
        if family is None or family.name != name:
            family = self._open(name, lineno)
        elif family.sampled:
            raise self.fail(
                lineno,
                f"# {keyword} for {name!r} after its samples: expected metadata before them",
            )
        elif keyword in family.meta:
            raise self.fail(
                lineno,
                f"second # {keyword} for {name!r} (the first is on line {family.meta[keyword]}):"
                " expected one",
            )
        family.meta[keyword] = family.last = lineno
        if keyword == "TYPE":
            self._type(family, value, lineno)
        elif keyword == "UNIT":
            if not UNIT_RE.fullmatch(value):
                raise self.fail(lineno, f"bad unit {value!r} for {name!r}: expected [a-zA-Z0-9_:]*")
            if value and not name.endswith("_" + value):
                raise self.fail(
                    lineno,
                    f"unit {value!r} is not the end of the family name {name!r}: expected a "
                    f"name ending in '_{value}'",
                )
            family.unit = value
        else:
            text = om_help(value)
            if text is None:
                raise self.fail(
                    lineno,
                    f"bad # HELP text for {name!r}: expected a character after the last '\\'",
                )
            family.help = text
        if family.unit and family.type in ("info", "stateset"):
            raise self.fail(
                lineno, f"{family.type} family {name!r} has a unit: expected none for its type"
            )

    def _type(self, family: Family, kind: str, lineno: int) -> None:
        if kind not in TYPES:
            hint = " ('untyped' is the Prometheus text format's; OpenMetrics says 'unknown')"
            raise self.fail(
                lineno,
                f"expected a metric type after '# TYPE {family.name}' ({', '.join(TYPES)}), "
                f"got {kind!r}" + (hint if kind == "untyped" else ""),
            )
        del self.claims[family.name]
        names = {family.name + suffix: suffix for suffix in SUFFIXES[kind]}
        for name in names:
            owner = self.claims.get(name)
            if owner is not None:
                raise self.fail(
                    lineno,
                    f"{kind} family {family.name!r} would name samples {name!r}, which clashes "
                    f"with family {owner.name!r} (line {owner.line}): expected distinct names",
                )
        family.type, family.names = kind, names
        for name in names:
            self.claims[name] = family

    def family_of(self, name: str, lineno: int) -> tuple[Family, str]:
        """The family a sample named ``name`` belongs to, and its suffix (opens one if new)."""
        family = self.cur
        if family is not None:
            suffix = family.names.get(name)
            if suffix is not None:
                return family, suffix
            if name == family.name:  # e.g. a counter's bare name
                raise self.fail(
                    lineno,
                    f"sample {name!r} in {family.type} family {family.name!r}: expected one "
                    f"of {family.allowed()}",
                )
        owner = self.claims.get(name)
        if owner is not None:
            raise self.fail(
                lineno,
                f"sample {name!r} of family {owner.name!r}, which already ended (line "
                f"{owner.last}): expected a family's samples together, not interleaved",
            )
        return self._open(name, lineno), ""

    # --- samples ----------------------------------------------------------------------------

    def sample(
        self,
        sid: int,
        key: SeriesKey,
        value: float,
        ts: float | None,
        exemplar: float | None,
        lineno: int,
    ) -> Family:
        """Check one sample of series ``sid``; returns its family."""
        family, suffix = self.family_of(key.name, lineno)
        family.sampled, family.last = True, lineno
        role = self.roles.get(sid)
        if role is None or role.family is not family:
            role = self.roles[sid] = self._role(family, suffix, key, lineno)
        if role.rule != ANY and not value_ok(role.rule, value):
            raise self.fail(
                lineno,
                f"value {value!r} of {series_repr(key)} ({role.kind} {family.name!r}): "
                f"expected {_RULE_WORDS[role.rule]}",
            )
        if exemplar is not None:
            if not role.exemplars:
                raise self.fail(
                    lineno,
                    f"exemplar on {series_repr(key)}: expected exemplars only on counter totals "
                    "and histogram buckets",
                )
            if role.kind in HISTOGRAMS and not exemplar <= role.le:
                raise self.fail(
                    lineno,
                    f"exemplar value {exemplar!r} above the bucket le={dict(key.labels)['le']!r}"
                    " it is in",
                )
        self._order(key, role.group, ts, lineno)
        if role.kind in HISTOGRAMS:
            self._histogram(family, key, suffix, role.le, value, lineno)
        return family

    def _role(self, family: Family, suffix: str, key: SeriesKey, lineno: int) -> _Role:
        """What a series is in its family; raises for the labels its type needs or forbids."""
        try:
            le, group = metric_of(family, suffix, key)
        except LabelError as exc:
            raise self.fail(lineno, str(exc)) from None
        return _Role(
            family=family,
            kind=family.type,
            rule=VALUE_RULE.get((family.type, suffix), ANY),
            exemplars=EXEMPLAR_SUFFIX.get(family.type) == suffix,
            le=le,
            group=group,
        )

    def _order(
        self, key: SeriesKey, group: tuple[tuple[str, str], ...], ts: float | None, lineno: int
    ) -> None:
        if group != self.group:
            if group in self.groups:
                raise self.fail(
                    lineno,
                    f"{series_repr(key)}: its metric's samples ended on line {self.groups[group]}:"
                    " expected the samples of one metric together, not interleaved",
                )
            self._close_point()
            self.group, self.group_ts = group, ts
        elif (ts is None) != (self.group_ts is None):
            raise self.fail(
                lineno,
                f"{series_repr(key)} "
                + ("has no timestamp" if ts is None else "has a timestamp")
                + " where the samples before it of its metric "
                + ("have one" if ts is None else "have none")
                + ": expected all or none with timestamps",
            )
        elif ts is not None and self.group_ts is not None and ts != self.group_ts:
            if ts < self.group_ts:
                raise self.fail(
                    lineno,
                    f"timestamp going backwards for {series_repr(key)}: {ts!r} s after "
                    f"{self.group_ts!r} s; expected increasing timestamps within a metric",
                )
            self._close_point()
            self.group_ts = ts
        self.groups[group] = lineno

    def _histogram(
        self, family: Family, key: SeriesKey, suffix: str, le: float, value: float, lineno: int
    ) -> None:
        point = self.point
        if point is None:
            point = self.point = _Point()
        point.last = lineno
        if suffix == "_bucket":
            if point.buckets and not le > point.le:
                raise self.fail(
                    lineno,
                    f"bucket {series_repr(key)} after le={point.le!r}: expected buckets in "
                    "increasing order of le",
                )
            if point.buckets and value < point.bucket_value:
                raise self.fail(
                    lineno,
                    f"bucket {series_repr(key)} holds {value!r}, less than the bucket before it "
                    f"({point.bucket_value!r}): expected cumulative buckets",
                )
            point.buckets += 1
            point.le, point.bucket_value = le, value
            point.negative = point.negative or le < 0
            if le == math.inf:
                point.inf_value = value
            return
        attr = {"_count": "count", "_gcount": "count", "_sum": "sum", "_gsum": "sum"}.get(suffix)
        if attr is None:  # _created
            if point.created:
                raise self.fail(lineno, f"second {series_repr(key)} in one point: expected one")
            point.created = True
            return
        if getattr(point, attr) is not None:
            raise self.fail(lineno, f"second {series_repr(key)} in one point: expected one")
        setattr(point, attr, (value, lineno))
        if attr == "sum" and family.type == "histogram" and point.negative:
            raise self.fail(
                lineno,
                f"{series_repr(key)}: a histogram with negative buckets has no sum: expected none",
            )

    def _close_point(self) -> None:
        point, family = self.point, self.cur
        self.point = None
        if point is None or family is None:
            return
        name = family.name
        if not point.buckets:
            raise self.fail(
                point.last,
                f"{family.type} {name!r} point without buckets: expected {name}_bucket lines "
                'ending with le="+Inf"',
            )
        if point.inf_value is None:
            raise self.fail(
                point.last, f'{family.type} {name!r} point without a le="+Inf" bucket: expected one'
            )
        count, total = point.count, point.sum
        count_name, sum_name = (
            ("_count", "_sum") if family.type == "histogram" else ("_gcount", "_gsum")
        )
        if total is not None and count is None:
            raise self.fail(
                total[1], f"{name}{sum_name} without {name}{count_name}: expected both or neither"
            )
        if count is not None and total is None:
            raise self.fail(
                count[1], f"{name}{count_name} without {name}{sum_name}: expected both or neither"
            )
        if count is not None and count[0] != point.inf_value:
            raise self.fail(
                count[1],
                f"{name}{count_name} is {count[0]!r} but the +Inf bucket holds "
                f"{point.inf_value!r}: expected them equal",
            )
        if total is not None and total[0] < 0 and not point.negative:
            raise self.fail(
                total[1],
                f"{name}{sum_name} is negative without negative buckets: expected a sum >= 0",
            )

    def finish(self) -> None:
        self._close()


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


def _stamp(token: str, key: SeriesKey, file: str, line: int) -> tuple[float, int]:
    """A sample's timestamp in seconds and in the timeline's milliseconds."""
    seconds = om_seconds(token, key, file, line)
    try:
        return seconds, epoch_ms(seconds, "s")
    except TimeError as exc:
        raise ParseError(file, line, f"bad timestamp for {series_repr(key)}: {exc}") from None


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
    stamps: dict[str, tuple[float, int]] = {}  # a timestamp token repeats for every series
    dropped, first_dropped = 0, 0
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
        stamp: tuple[float, int] | None = None
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
        if sid == len(ts_cols):
            ts_cols.append(array("q"))
            val_cols.append(array("d"))
            families.append(family)
        if stamp is not None:
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
    warnings = []
    if dropped:
        warnings.append(
            f"{file}:{first_dropped}: {dropped} sample(s) repeat the millisecond of the sample "
            "before them in their series; the first of each was kept"
        )
    return OmColumns(ts_cols, val_cols, families, warnings)
