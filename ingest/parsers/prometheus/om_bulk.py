"""The OpenMetrics fast path: the bulk tokeniser for the samples, the rules checked on columns.

Pure. The samples are read as the text format's bulk path reads them (whole chunks split at
C speed, a series text parsed once), with OpenMetrics' stricter spelling; then every rule of
:mod:`.openmetrics` is checked over the columns in file order with numpy: per distinct series
what its family, metric, role and ``le`` are, per row what its value and timestamp allow. What
it cannot show to hold (an exemplar, a repeated timestamp, a mix of lines with and without
timestamps in one chunk, any broken rule) raises :class:`~.bulk.Bail`, and the careful reader
(:func:`~.openmetrics.parse_openmetrics_careful`) reads the file again and names the line.
"""

from __future__ import annotations

import math
import re

import numpy as np
import numpy.typing as npt

from ..text import BOM
from ..timestamps import MAX_MS, MIN_MS
from ..types import ParseContext, ParseError, SeriesKey
from .bulk import Bail, Layout, per_series
from .chunks import raw_chunks
from .grammar import Registry, default_ms, om_help, scan_series_om
from .om_types import (
    ANY,
    BOOL,
    COUNT,
    COUNTER,
    GSUM,
    HISTOGRAMS,
    META_RE,
    ONE,
    QUANTILE,
    SUFFIXES,
    TYPES,
    UNIT_RE,
    VALUE_RULE,
    Family,
    LabelError,
    metric_of,
)
from .openmetrics import OmColumns

# Within these characters float() reads exactly the ABNF's numbers, but for a signed NaN.
_VALUE_CHARS = b"0123456789.eE+-\ninfatyINFATY"
_STAMP_CHARS = b"0123456789.eE+-\n"
_SIGNED_NAN = re.compile(rb"[+-][nN]")
_EOF = b"# EOF"
# Parts of a histogram point, by sample name suffix.
_BUCKET, _COUNT, _SUM, _CREATED = range(4)
_PART = {"_bucket": _BUCKET, "_count": _COUNT, "_gcount": _COUNT, "_sum": _SUM, "_gsum": _SUM}

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def _end_of_body(data: bytes) -> int:
    """Where the samples end: the start of the final ``# EOF`` line. Bail when the file does
    not end with it, or holds what the careful reader must judge (CR, BOM)."""
    size = len(data)
    end = size - 1 if data[size - 1 : size] == b"\n" else size
    start = end - len(_EOF)
    if start < 0 or data[start:end] != _EOF or (start and data[start - 1 : start] != b"\n"):
        raise Bail
    if data[:3] == BOM.encode() or data.find(b"\r") != -1:
        raise Bail
    return start


def _numbers(tokens: list[str], allowed: bytes) -> Floats:
    """float() of every token, each spelled as the ABNF allows (else Bail)."""
    joined = "\n".join(tokens)
    try:
        raw = joined.encode("ascii")
    except UnicodeEncodeError:
        raise Bail from None
    if raw.translate(None, allowed):
        raise Bail
    if (b"n" in raw or b"N" in raw) and _SIGNED_NAN.search(raw):
        raise Bail
    try:
        numbers = np.fromiter(map(float, tokens), np.float64, len(tokens))
    except ValueError:
        raise Bail from None
    infinite = np.flatnonzero(np.isinf(numbers))
    if len(infinite) and not all(tokens[i][-1] in "fFyY" for i in infinite.tolist()):
        raise Bail  # beyond float64: not an infinity the file spelled
    return numbers


def _stamps(tokens: list[str]) -> tuple[Ints, Floats]:
    """Milliseconds and seconds of timestamp tokens (each distinct token converted once)."""
    distinct = dict.fromkeys(tokens)
    if len(distinct) * 8 > len(tokens):
        seconds = _numbers(tokens, _STAMP_CHARS)
    else:
        keys = list(distinct)
        table = dict(zip(keys, _numbers(keys, _STAMP_CHARS).tolist(), strict=True))
        seconds = np.fromiter(map(table.__getitem__, tokens), np.float64, len(tokens))
    with np.errstate(over="ignore", invalid="ignore"):  # 1e308 s: inf, out of range below
        scaled = np.rint(seconds * 1000.0)
    if not ((scaled >= MIN_MS) & (scaled <= MAX_MS)).all():
        raise Bail  # not a time the timeline holds (or inf): the careful path names the line
    return scaled.astype(np.int64), seconds


class _Rows:
    """The samples read so far, in file order, and the comment lines between them."""

    def __init__(self) -> None:
        self.sids: list[Ints] = []
        self.values: list[Floats] = []
        self.ms: list[Ints] = []
        self.seconds: list[Floats] = []  # NaN for a sample without a timestamp
        self.timed: list[npt.NDArray[np.bool_]] = []
        self.comments: list[tuple[int, str]] = []  # (samples before it, line)
        self.count = 0


def _read_chunk(raw: bytes, ctx: ParseContext, registry: Registry, rows: _Rows) -> bool:
    """Read one chunk into ``rows``; returns whether its last line is blank (allowed only as
    the end of the file's last chunk: the newline before ``# EOF``)."""
    layout = Layout(raw)
    blank = layout.blank
    if blank[:-1].any():
        raise Bail  # a blank line
    if layout.comment.any():
        before = np.cumsum(layout.sample)[layout.comment] + rows.count
        rows.comments.extend(zip(before.tolist(), layout.comment_lines(), strict=True))
    if not layout.count:
        return bool(blank[-1])
    for fields in (3, 2):
        split = layout.tokens(fields)
        if split is None:
            continue
        flat, masked = split
        names = flat[0::fields]
        resolved = _resolve(dict.fromkeys(names), masked, registry)
        if resolved is not None:
            break
    else:
        raise Bail  # lines with and without timestamps, or too few fields, or a bad series
    known = registry.by_masked if masked else registry.by_text
    unique: dict[str, int] = {}
    for text, found in resolved.items():
        if isinstance(found, int):
            unique[text] = found
        else:
            unique[text] = known[text] = registry.add(*found)
    n = len(names)
    rows.sids.append(np.fromiter(map(unique.__getitem__, names), np.int64, n))
    rows.values.append(_numbers(flat[1::fields], _VALUE_CHARS))
    if fields == 3:
        ms, seconds = _stamps(flat[2::3])
        rows.timed.append(np.ones(n, np.bool_))
    else:
        fallback = default_ms(ctx)
        if fallback is None:
            raise Bail
        ms, seconds = np.full(n, fallback, np.int64), np.full(n, np.nan)
        rows.timed.append(np.zeros(n, np.bool_))
    rows.ms.append(ms)
    rows.seconds.append(seconds)
    rows.count += n
    return bool(blank[-1])


def _resolve(
    texts: dict[str, None], masked: bool, registry: Registry
) -> dict[str, int | tuple[str, SeriesKey]] | None:
    """Each series text as a known series id or a new (text, key); None when one of them is not
    a whole OpenMetrics series text (then the chunk was split wrongly, or is for the careful
    path)."""
    known = registry.by_masked if masked else registry.by_text
    out: dict[str, int | tuple[str, SeriesKey]] = {}
    for text in texts:
        sid = known.get(text)
        if sid is not None:
            out[text] = sid
            continue
        real = text.replace("\0", " ") if masked else text
        try:
            key, end = scan_series_om(real, "", 0)
        except ParseError:
            return None
        if end != len(real):
            return None
        out[text] = (real, key)
    return out


def _declared(comments: list[tuple[int, str]]) -> tuple[dict[str, Family], list[tuple[int, str]]]:
    """The families the metadata lines declare, and (position, family) per metadata line."""
    families: dict[str, Family] = {}
    placed: list[tuple[int, str]] = []
    for pos, line in comments:
        match = META_RE.fullmatch(line)
        if match is None:
            raise Bail
        keyword, name, value = match.groups()
        family = families.get(name)
        if family is None:
            family = families[name] = Family(name, 0)
        if keyword in family.meta:
            raise Bail
        family.meta[keyword] = pos
        if keyword == "TYPE":
            if value not in TYPES:
                raise Bail
            family.type = value
        elif keyword == "UNIT":
            if not UNIT_RE.fullmatch(value) or (value and not name.endswith("_" + value)):
                raise Bail
            family.unit = value
        else:
            text = om_help(value)
            if text is None:
                raise Bail
            family.help = text
        placed.append((pos, name))
    for family in families.values():
        if family.unit and family.type in ("info", "stateset"):
            raise Bail
    return families, placed


def _claims(families: dict[str, Family], names: list[str]) -> dict[str, tuple[Family, str]]:
    """Sample name -> (its family, suffix); a name no family declares opens its own family."""
    claims: dict[str, tuple[Family, str]] = {}
    for family in families.values():
        for suffix in SUFFIXES[family.type]:
            name = family.name + suffix
            if name in claims:
                raise Bail  # two families may write this sample name
            claims[name] = (family, suffix)
    for family in families.values():
        owner = claims.get(family.name)
        if owner is not None and owner[0] is not family:
            raise Bail
    for name in names:
        if name not in claims:
            if name in families:
                raise Bail  # e.g. a counter's bare name
            family = families[name] = Family(name, 0)
            claims[name] = (family, "")
    return claims


class _Series:
    """What each distinct series is, as arrays indexed by series id."""

    def __init__(
        self,
        keys: list[SeriesKey],
        families: dict[str, Family],
        claims: dict[str, tuple[Family, str]],
    ) -> None:
        n = len(keys)
        self.families = list(families.values())
        self.index = {name: fid for fid, name in enumerate(families)}
        groups: dict[tuple[int, tuple[tuple[str, str], ...]], int] = {}
        self.family = np.empty(n, np.int64)
        self.group = np.empty(n, np.int64)
        self.rule = np.empty(n, np.int8)
        self.histogram = np.zeros(n, np.bool_)
        self.gauge_histogram = np.zeros(n, np.bool_)
        self.part = np.full(n, _CREATED, np.int8)
        self.le = np.full(n, np.nan)
        for sid, key in enumerate(keys):
            family, suffix = claims[key.name]
            kind = family.type
            try:
                self.le[sid], metric = metric_of(family, suffix, key)
            except LabelError:
                raise Bail from None
            fid = self.index[family.name]
            self.family[sid] = fid
            self.group[sid] = groups.setdefault((fid, metric), len(groups))
            self.rule[sid] = VALUE_RULE.get((kind, suffix), ANY)
            if kind in HISTOGRAMS:
                self.histogram[sid] = True
                self.gauge_histogram[sid] = kind == "gaugehistogram"
                self.part[sid] = _PART.get(suffix, _CREATED)


def _runs(column: Ints) -> Ints:
    """Where each run of equal values starts."""
    return np.flatnonzero(np.r_[True, column[1:] != column[:-1]])


def _check_order(series: _Series, placed: list[tuple[int, str]], family_row: Ints) -> None:
    """Families and their metadata in one piece each, metadata first."""
    starts = _runs(family_row) if len(family_row) else family_row
    cuts = [pos for pos, _ in placed if 0 < pos < len(family_row)]  # metadata inside a run
    if cuts:
        starts = np.union1d(starts, cuts)
    run_families = family_row[starts]
    if len(np.unique(run_families)) != len(run_families):
        raise Bail  # a family's samples interleaved with another's, or with metadata
    events = sorted(
        [(pos, 0, seq, series.index[name]) for seq, (pos, name) in enumerate(placed)]
        + [
            (pos, 1, 0, fid)
            for pos, fid in zip(starts.tolist(), run_families.tolist(), strict=True)
        ]
    )
    seen: set[int] = set()
    current, sampled = -1, False
    for _, is_sample, _, fid in events:
        if fid != current:
            if fid in seen:
                raise Bail
            seen.add(fid)
            current, sampled = fid, False
        if is_sample:
            sampled = True
        elif sampled:
            raise Bail  # metadata after the family's samples


def _check_metrics(group_row: Ints, timed: npt.NDArray[np.bool_], seconds: Floats) -> None:
    """Metrics in one piece each; within one, timestamps all present or all absent, never
    going back."""
    starts = _runs(group_row)
    if len(np.unique(group_row[starts])) != len(starts):
        raise Bail
    same = group_row[1:] == group_row[:-1]
    if (same & (timed[1:] != timed[:-1])).any():
        raise Bail
    if (same & (seconds[1:] < seconds[:-1])).any():
        raise Bail


def _check_values(rule_row: npt.NDArray[np.int8], values: Floats, rules: set[int]) -> None:
    for rule in rules - {ANY}:
        v = values[rule_row == rule]
        if rule == COUNTER:
            ok = v >= 0
        elif rule == COUNT:
            ok = (v >= 0) & np.isfinite(v) & (v == np.floor(v))
        elif rule == GSUM:
            ok = ~np.isnan(v)
        elif rule == QUANTILE:
            ok = ~(v < 0)
        elif rule == BOOL:
            ok = (v == 0) | (v == 1)
        else:
            assert rule == ONE
            ok = v == 1
        if not ok.all():
            raise Bail


def _check_histograms(
    series: _Series, sids: Ints, group_row: Ints, values: Floats, seconds: Floats
) -> None:
    """Every histogram point: buckets in increasing le with cumulative values ending at +Inf,
    count and sum together, the count equal to the +Inf bucket, the sum's sign rules."""
    rows = np.flatnonzero(series.histogram[sids])
    if not len(rows):
        return
    hs = sids[rows]
    groups = group_row[rows]
    stamps = np.nan_to_num(seconds[rows], nan=0.0)  # a metric's samples all have one or none
    point = np.cumsum(np.r_[True, (groups[1:] != groups[:-1]) | (stamps[1:] != stamps[:-1])]) - 1
    points = int(point[-1]) + 1
    part = series.part[hs]
    vals = values[rows]
    is_bucket = part == _BUCKET
    bucket_point = point[is_bucket]
    le = series.le[hs[is_bucket]]
    held = vals[is_bucket]
    within = bucket_point[1:] == bucket_point[:-1]
    if (within & ~(le[1:] > le[:-1])).any() or (within & (held[1:] < held[:-1])).any():
        raise Bail
    if (np.bincount(bucket_point, minlength=points) == 0).any():
        raise Bail  # a point without buckets
    last = np.r_[~within, True]
    if not (le[last] == math.inf).all():
        raise Bail
    inf_held = held[last]
    negative = np.bincount(bucket_point[le < 0], minlength=points) > 0
    present = []
    for which in (_COUNT, _SUM, _CREATED):
        rows_of = part == which
        times = np.bincount(point[rows_of], minlength=points)
        if (times > 1).any():
            raise Bail
        present.append(times == 1)
    if (present[0] != present[1]).any():
        raise Bail
    counts = part == _COUNT
    if (vals[counts] != inf_held[point[counts]]).any():
        raise Bail
    sums = part == _SUM
    gauge = series.gauge_histogram[hs[sums]]
    sum_negative = negative[point[sums]]
    if (~gauge & sum_negative).any() or (gauge & (vals[sums] < 0) & ~sum_negative).any():
        raise Bail


def parse_openmetrics_bulk(data: bytes, ctx: ParseContext, registry: Registry) -> OmColumns:
    """Per series (by registry id), its columns and family; :class:`Bail` if it cannot."""
    rows = _Rows()
    blank_end = False
    for raw in raw_chunks(data, end=_end_of_body(data)):
        if blank_end:
            raise Bail  # the chunk before ended with a blank line that was not the file's end
        blank_end = _read_chunk(raw, ctx, registry, rows)
    declared, placed = _declared(rows.comments)
    keys = registry.keys
    claims = _claims(declared, list(dict.fromkeys(key.name for key in keys)))
    series = _Series(keys, declared, claims)
    if not keys:
        _check_order(series, placed, np.empty(0, np.int64))
        return OmColumns([], [], [], [])
    sids = np.concatenate(rows.sids)
    values = np.concatenate(rows.values)
    seconds = np.concatenate(rows.seconds)
    _check_order(series, placed, series.family[sids])
    group_row = series.group[sids]
    _check_metrics(group_row, np.concatenate(rows.timed), seconds)
    _check_values(series.rule[sids], values, set(series.rule.tolist()))
    _check_histograms(series, sids, group_row, values, seconds)
    del sids, values, seconds, group_row
    got = list(zip(rows.sids, rows.values, rows.ms, strict=True))
    ts_cols, val_cols = per_series(got, len(keys))  # Bail on a repeat within a series
    families = [series.families[fid] for fid in series.family.tolist()]
    return OmColumns(ts_cols, val_cols, families, [])
