"""The OpenMetrics metric-family state machine (:class:`Rules`): HELP/TYPE/UNIT metadata,
family order, and the per-type sample rules (counters, histogram points, summaries,
statesets, info), fed one line at a time by :mod:`.openmetrics`.

Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..series import series_repr
from ..types import ParseError, SeriesKey
from .grammar import (
    om_help,
)
from .om_types import (
    ANY,
    EXEMPLAR_SUFFIX,
    HISTOGRAMS,
    META_RE,
    RULE_WORDS,
    SUFFIXES,
    TYPES,
    UNIT_RE,
    VALUE_RULE,
    Family,
    LabelError,
    metric_of,
    value_ok,
)


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
                f"expected {RULE_WORDS[role.rule]}",
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
