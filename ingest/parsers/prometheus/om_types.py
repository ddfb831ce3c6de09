"""OpenMetrics 1.0 vocabulary: family types and their sample suffixes, what a value may be
for each (type, suffix), the ``le``/``quantile`` labels and the metric a sample belongs to.

Pure. Shared by the line-by-line reader (:mod:`.openmetrics`, :mod:`.om_rules`) and the fast
path (:mod:`.om_bulk`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..series import series_repr
from ..types import SeriesKey
from .grammar import (
    OM_REAL_RE,
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
RULE_WORDS = {
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
    family's name on a stateset's states (a ':' in it as '_': a label name holds none, and
    prometheus-client writes ``sglang:server_state`` states as ``sglang_server_state="..."``)."""
    if kind in HISTOGRAMS and suffix == "_bucket":
        return "le"
    if kind == "summary" and suffix == "":
        return "quantile"
    if kind == "stateset":
        return family.replace(":", "_")
    return None


class LabelError(ValueError):
    """A series lacks a label its type needs, or has one it forbids (the message says which)."""


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
