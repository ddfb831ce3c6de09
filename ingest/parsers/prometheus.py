"""Metrics parsers: Prometheus text / OpenMetrics exposition, query_range JSON, nvidia-smi CSV.

Pure: bytes in, :class:`ParseResult` out. Every timestamp becomes milliseconds since the epoch
(UTC). Within one series timestamps must strictly increase in file order; a repeat is a
duplicate sample and a step back is an error, both reported with the offending line.

The exposition parser has two implementations of the same grammar:

* a bulk path that tokenises whole chunks of lines with C-level ``map``/``zip`` calls and does
  ordering checks and grouping with numpy. It handles the ordinary shape of a scrape (comments,
  blank lines, ``series value [timestamp]`` lines) and gives up on anything unusual;
* a careful line-by-line path that is the reference: it runs whenever the bulk path gives up and
  raises the precise :class:`ParseError` for the first bad line.

Both share the series-text cache: label sets are parsed once per distinct series text.
"""

from __future__ import annotations

import gc
import json
import math
import re
from array import array
from collections.abc import Iterator
from itertools import compress, repeat
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .text import decode, head_text
from .timestamps import (
    MAX_MS,
    MIN_MS,
    TimeError,
    epoch_ms,
    in_zone,
    ms_iso,
    to_epoch_ms,
    wall_clock,
)
from .types import ParseContext, ParseError, ParseResult, SampleBlock, SeriesKey

if TYPE_CHECKING:
    import mmap  # the type of a mapped file a caller may hand over instead of bytes

KIND_EXPOSITION = "prometheus_text"
KIND_QUERY_RANGE = "prometheus_query_range"
KIND_NVIDIA_SMI = "nvidia_smi_csv"

_METRIC_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_SAMPLE_LINE_RE = re.compile(
    r"[a-zA-Z_:][a-zA-Z0-9_:]*\s*(\{.*\})?\s+[-+]?(?:[0-9.]|Inf|NaN)\S*(\s+[-+]?[0-9.]+)?"
    r"(\s+#.*)?"
)

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

_CHUNK_BYTES = 1 << 22  # lines are tokenised in ~4 MiB chunks to bound memory


# --- shared helpers -------------------------------------------------------------------------------


def _default_ms(ctx: ParseContext) -> int | None:
    """``ctx.default_time`` (naive: in ``ctx.tz``) in milliseconds, for samples without one."""
    if ctx.default_time is None:
        return None
    try:
        return to_epoch_ms(in_zone(ctx.default_time, ctx.tz))
    except TimeError as exc:
        raise ParseError(ctx.name, 0, f"the default time: {exc}") from None


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _series_repr(key: SeriesKey) -> str:
    if not key.labels:
        return key.name
    inner = ",".join(f'{k}="{_escape_label(v)}"' for k, v in key.labels)
    return f"{key.name}{{{inner}}}"


class _Collector:
    """Samples per series in arrival order, enforcing strictly increasing timestamps."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.blocks: dict[SeriesKey, SampleBlock] = {}

    def block(self, key: SeriesKey) -> SampleBlock:
        block = self.blocks.get(key)
        if block is None:
            block = self.blocks[key] = SampleBlock(key=key)
        return block

    def add(self, key: SeriesKey, ts_ms: int, value: float, line: int, where: str = "") -> None:
        block = self.block(key)
        if block.ts_ms:
            _check_order(self.file, line, key, block.ts_ms[-1], ts_ms, where)
        block.ts_ms.append(ts_ms)
        block.values.append(value)


def _check_order(file: str, line: int, key: SeriesKey, prev: int, ts: int, where: str = "") -> None:
    if ts > prev:
        return
    prefix = f"{where}: " if where else ""
    if ts == prev:
        raise ParseError(
            file, line, f"{prefix}duplicate sample for {_series_repr(key)} at {ms_iso(ts)}"
        )
    raise ParseError(
        file,
        line,
        f"{prefix}timestamp going backwards for {_series_repr(key)}: {ms_iso(ts)} after "
        f"{ms_iso(prev)}; expected increasing timestamps within a series",
    )


# --- exposition: grammar pieces -------------------------------------------------------------------


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


def _scan_series(text: str, file: str, line: int) -> tuple[SeriesKey, int]:
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


def _parse_value(token: str, key: SeriesKey, file: str, line: int) -> float:
    try:
        if "_" in token:
            raise ValueError(token)
        return float(token)
    except ValueError:
        raise ParseError(
            file,
            line,
            f"bad number for {_series_repr(key)}: expected a float (or NaN, +Inf, -Inf), "
            f"got {token!r}",
        ) from None


def _parse_timestamp(token: str, key: SeriesKey, openmetrics: bool, file: str, line: int) -> int:
    number: int | float
    try:
        if "_" in token:
            raise ValueError(token)
        number = float(token) if openmetrics else int(token)
        if isinstance(number, float) and not math.isfinite(number):
            raise ValueError(token)
    except ValueError:
        unit = "seconds (OpenMetrics)" if openmetrics else "integer milliseconds"
        raise ParseError(
            file,
            line,
            f"bad timestamp for {_series_repr(key)}: expected {unit}, got {token!r}",
        ) from None
    try:
        return epoch_ms(number, "s" if openmetrics else "ms")
    except TimeError as exc:
        raise ParseError(file, line, f"bad timestamp for {_series_repr(key)}: {exc}") from None


_HELP_ESCAPE_RE = re.compile(r"\\(.)")


def _unescape_help(match: re.Match[str]) -> str:
    char = match.group(1)
    return "\n" if char == "n" else char if char == "\\" else match.group(0)


class _Meta:
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


class _Registry:
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


class _Bail(Exception):
    """The bulk path met something it does not handle; the careful path takes over."""


def _find_eof_marker(data: bytes | mmap.mmap) -> bool:
    pos = data.find(b"# EOF")
    while pos != -1:
        at_start = pos == 0 or data[pos - 1] == 0x0A
        tail = data[pos + 5 : pos + 7]
        if at_start and (tail[:1] in (b"", b"\n") or tail in (b"\r", b"\r\n")):
            return True
        pos = data.find(b"# EOF", pos + 5)
    return False


def _raw_chunks(data: bytes | mmap.mmap) -> Iterator[bytes]:
    """Yield ~4 MiB pieces of ``data`` cut at newlines (the newline itself dropped); ``data``
    may be a read-only mapping of the file (no I/O here: the caller made it)."""
    start, size = (3 if data[:3] == b"\xef\xbb\xbf" else 0), len(data)  # past a BOM
    while start < size:
        end = data.find(b"\n", min(start + _CHUNK_BYTES, size))
        if end == -1:
            end = size
        yield data[start:end]
        start = end + 1


def _chunks(data: bytes, file: str) -> Iterator[tuple[int, list[str]]]:
    """Yield (number of the first line, decoded lines) per piece of :func:`_raw_chunks`."""
    lineno = 1
    for raw in _raw_chunks(data):
        lines = decode(raw, file, first_line=lineno).split("\n")
        yield lineno, lines
        lineno += len(lines)


# --- exposition: careful path ---------------------------------------------------------------------


def _parse_careful(
    data: bytes, ctx: ParseContext, openmetrics: bool, registry: _Registry, meta: _Meta
) -> tuple[list[array[int]], list[array[float]]]:
    file = ctx.name
    by_text = registry.by_text
    keys = registry.keys
    ts_cols: list[array[int]] = []
    val_cols: list[array[float]] = []
    default_ms = _default_ms(ctx)
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
                key, end = _scan_series(line, file, lineno)
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
                    file, lineno, f"truncated line: expected a value after {_series_repr(key)}"
                )
            if len(tokens) > 2:
                raise ParseError(
                    file,
                    lineno,
                    f"expected a value and an optional timestamp after {_series_repr(key)}, "
                    f"got {len(tokens)} fields",
                )
            value = _parse_value(tokens[0], key, file, lineno)
            if len(tokens) == 2:
                ts = _parse_timestamp(tokens[1], key, openmetrics, file, lineno)
            elif default_ms is None:
                raise ParseError(
                    file,
                    lineno,
                    f"sample for {_series_repr(key)} has no timestamp: expected one, or a "
                    "default time given for the file",
                )
            else:
                ts = default_ms
            col = ts_cols[sid]
            if col:
                _check_order(file, lineno, key, col[-1], ts)
            col.append(ts)
            val_cols[sid].append(value)
    return ts_cols, val_cols


# --- exposition: bulk path ------------------------------------------------------------------------


_Columns = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]


def _numbers(
    tokens: tuple[str, ...] | list[str], kind: type[int] | type[float]
) -> npt.NDArray[Any]:
    """Convert tokens with Python's own int()/float() (so both paths agree on what is valid)."""
    if "_" in "".join(tokens):  # int()/float() accept 1_000; the format does not
        raise _Bail
    dtype = np.int64 if kind is int else np.float64
    try:
        return np.fromiter(map(kind, tokens), dtype, len(tokens))
    except (ValueError, OverflowError):
        raise _Bail from None


def _stamps(tokens: tuple[str, ...] | list[str], openmetrics: bool) -> npt.NDArray[np.int64]:
    # One scrape shares one timestamp: convert each distinct token once.
    distinct = dict.fromkeys(tokens)
    if len(distinct) * 8 > len(tokens):
        return _stamps_direct(tokens, openmetrics)
    keys = list(distinct)
    table = dict(zip(keys, _stamps_direct(keys, openmetrics).tolist(), strict=True))
    return np.fromiter(map(table.__getitem__, tokens), np.int64, len(tokens))


def _stamps_direct(tokens: tuple[str, ...] | list[str], openmetrics: bool) -> npt.NDArray[np.int64]:
    if openmetrics:
        scaled = np.rint(_numbers(tokens, float) * 1000.0)  # NaN and Inf fail the range check
    else:
        scaled = _numbers(tokens, int)
    if not ((scaled >= MIN_MS) & (scaled <= MAX_MS)).all():
        raise _Bail  # not a time: the careful path names the line
    return scaled.astype(np.int64)


def _columns(
    names: tuple[str, ...] | list[str],
    values: tuple[str, ...] | list[str],
    stamps: tuple[str, ...] | list[str] | None,
    ctx: ParseContext,
    openmetrics: bool,
    registry: _Registry,
    masked: bool = False,
) -> _Columns:
    """Series ids, values and millisecond timestamps for tokenised sample lines.

    ``masked``: spaces inside the series texts were replaced by NUL to tokenise on spaces.
    """
    unique: dict[str, int] = dict.fromkeys(names, -1)
    known = registry.by_masked if masked else registry.by_text
    for text in unique:
        sid = known.get(text)
        if sid is None:
            real = text.replace("\0", " ") if masked else text
            try:
                key, end = _scan_series(real, ctx.name, 0)
            except ParseError:
                raise _Bail from None
            if end != len(real):
                raise _Bail
            sid = registry.add(real, key)
            known[text] = sid
        unique[text] = sid
    m = len(names)
    sids = np.fromiter(map(unique.__getitem__, names), np.int64, m)
    vals = _numbers(values, float)
    if stamps is not None:
        return sids, vals, _stamps(stamps, openmetrics)
    default_ms = _default_ms(ctx)
    if default_ms is None:
        raise _Bail
    return sids, vals, np.full(m, default_ms, np.int64)


def _flat_chunk(
    raw: bytes, ctx: ParseContext, openmetrics: bool, registry: _Registry, comments: dict[str, None]
) -> _Columns | None:
    """The common shape: every sample line is ``series value timestamp``, single spaces.

    Line structure is found with numpy over the bytes; spaces inside series texts (label
    values such as modelName="NVIDIA B200") are masked with NUL, then the sample lines are
    split into one flat token list. Returns None when the chunk has another shape.
    """
    size = len(raw)
    arr = np.frombuffer(raw, np.uint8)
    newlines = np.flatnonzero(arr == 10)
    starts = np.empty(len(newlines) + 1, np.int64)
    starts[0] = 0
    starts[1:] = newlines + 1
    ends = np.empty_like(starts)
    ends[:-1] = newlines
    ends[-1] = size
    nonempty = ends > starts
    first_byte = arr[np.minimum(starts, size - 1)]
    comment = nonempty & (first_byte == 35)
    sample = nonempty & ~comment
    count = int(sample.sum())
    if not count:
        return None
    space_at = np.flatnonzero(arr == 32)
    line_of_space = np.searchsorted(starts, space_at, side="right") - 1
    spaces = np.bincount(line_of_space, minlength=len(starts))
    per_sample = spaces[sample]
    if not (per_sample >= 2).all():
        return None
    body = raw
    masked = bool((per_sample > 2).any())
    if masked:
        if b"\0" in raw:
            return None
        last_space = np.cumsum(spaces)[line_of_space] - 1
        from_end = last_space - np.arange(len(space_at))
        inner = space_at[(from_end >= 2) & sample[line_of_space]]
        buffer = bytearray(raw)
        np.frombuffer(buffer, np.uint8)[inner] = 0
        body = bytes(buffer)
    try:
        if comment.any():
            bounds = map(slice, starts[comment].tolist(), ends[comment].tolist())
            for line in dict.fromkeys(map(raw.__getitem__, bounds)):
                comments[line.decode("utf-8").strip()] = None
        if count == len(starts):
            text = body.decode("utf-8")
        else:
            edges = np.diff(np.concatenate(([0], sample.view(np.int8), [0])))
            first_lines = np.flatnonzero(edges == 1)
            last_lines = np.flatnonzero(edges == -1) - 1
            bounds = map(slice, starts[first_lines].tolist(), ends[last_lines].tolist())
            text = b"\n".join(map(body.__getitem__, bounds)).decode("utf-8")
    except UnicodeDecodeError:
        raise _Bail from None
    flat = text.replace("\n", " ").split(" ")
    if len(flat) != 3 * count:
        return None
    try:
        return _columns(flat[0::3], flat[1::3], flat[2::3], ctx, openmetrics, registry, masked)
    except _Bail:
        return None  # e.g. two spaces between fields: the line-by-line tokeniser copes


def _split_chunk(
    raw: bytes,
    ctx: ParseContext,
    openmetrics: bool,
    registry: _Registry,
    comments: dict[str, None],
) -> _Columns | None:
    """Any mix of lines with and without timestamps, any blanks; tokenised line by line."""
    try:
        lines = raw.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raise _Bail from None
    n = len(lines)
    # rsplit from the right keeps spaces inside label values in the series text.
    tokens = list(map(str.rsplit, lines, repeat(None), repeat(2)))
    counts = np.fromiter(map(len, tokens), np.int64, n)
    hashed = np.fromiter(map(str.startswith, lines, repeat("#")), np.bool_, n)
    with_ts = (counts == 3) & ~hashed
    without_ts = (counts == 2) & ~hashed
    for i in np.flatnonzero(~(with_ts | without_ts) & (counts > 0)).tolist():
        line = lines[i].strip()
        if line[0] != "#":
            raise _Bail  # a lone name, a broken line
        comments[line] = None

    parts: list[tuple[npt.NDArray[np.intp], _Columns]] = []
    for mask, has_ts in ((with_ts, True), (without_ts, False)):
        if mask.any():
            names, values, *rest = zip(*compress(tokens, mask.tolist()), strict=True)
            stamps = rest[0] if has_ts else None
            cols = _columns(names, values, stamps, ctx, openmetrics, registry)
            parts.append((np.flatnonzero(mask), cols))
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0][1]
    order = np.argsort(np.concatenate([pos for pos, _ in parts]), kind="stable")
    sids, vals, stamps_ms = (np.concatenate([c[i] for _, c in parts])[order] for i in range(3))
    return sids, vals, stamps_ms


def _parse_bulk(
    data: bytes, ctx: ParseContext, openmetrics: bool, registry: _Registry, meta: _Meta
) -> tuple[list[array[int]], list[array[float]]]:
    comments: dict[str, None] = {}
    got: list[_Columns] = []
    for raw in _raw_chunks(data):
        cols = _flat_chunk(raw, ctx, openmetrics, registry, comments) if raw else None
        if cols is None:
            cols = _split_chunk(raw, ctx, openmetrics, registry, comments)
        if cols is not None:
            got.append(cols)
    for line in comments:
        try:
            meta.comment(line, ctx.name, 0)
        except ParseError:
            raise _Bail from None
    nseries = len(registry.keys)
    if not got:
        return [], []
    sids = np.concatenate([c[0] for c in got])
    values = np.concatenate([c[1] for c in got])
    stamps = np.concatenate([c[2] for c in got])
    # A stable sort groups samples by series and keeps file order inside each group; with fewer
    # than 65536 series the ids fit uint16, where numpy's stable sort is a radix sort.
    narrow = sids.astype(np.uint16) if nseries < 65536 else sids
    order = np.argsort(narrow, kind="stable")
    sids, values, stamps = sids[order], values[order], stamps[order]
    if ((sids[1:] == sids[:-1]) & (stamps[1:] <= stamps[:-1])).any():
        raise _Bail  # a duplicate or a step back: the careful path names the line
    bounds = np.concatenate(([0], np.cumsum(np.bincount(sids, minlength=nseries)))).tolist()
    ts_cols: list[array[int]] = []
    val_cols: list[array[float]] = []
    for sid in range(nseries):
        lo, hi = bounds[sid], bounds[sid + 1]
        ts_col: array[int] = array("q")
        ts_col.frombytes(stamps[lo:hi].tobytes())
        val_col: array[float] = array("d")
        val_col.frombytes(values[lo:hi].tobytes())
        ts_cols.append(ts_col)
        val_cols.append(val_col)
    return ts_cols, val_cols


def parse_exposition(data: bytes, ctx: ParseContext) -> ParseResult:
    """Parse Prometheus text format 0.0.4 or OpenMetrics 1.0 (one or several scrapes).

    OpenMetrics is recognised by a ``# EOF`` line; its timestamps are seconds, the text
    format's are milliseconds. A sample without a timestamp takes ``ctx.default_time``.
    Returns one SampleBlock per series, with type/unit/help from the metadata lines.
    """
    openmetrics = _find_eof_marker(data)
    registry, meta = _Registry(), _Meta()
    # The bulk path allocates millions of short-lived token lists; the cyclic collector would
    # rescan them over and over (5-8x slower) although none of them can form a cycle.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        ts_cols, val_cols = _parse_bulk(data, ctx, openmetrics, registry, meta)
    except _Bail:
        registry, meta = _Registry(), _Meta()
        ts_cols, val_cols = _parse_careful(data, ctx, openmetrics, registry, meta)
    finally:
        if gc_was_enabled:
            gc.enable()
    result = ParseResult(kind=KIND_EXPOSITION)
    default_type = "unknown" if openmetrics else "untyped"
    for key, ts_col, val_col in zip(registry.keys, ts_cols, val_cols, strict=True):
        block = SampleBlock(key=key, ts_ms=ts_col, values=val_col)
        meta.fill(block, default_type)
        result.samples.append(block)
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
    meta = samples = 0
    for line in complete:
        if line.startswith(("# HELP ", "# TYPE ", "# UNIT ")) or line == "# EOF":
            meta += 1
        elif line.startswith("#"):
            continue
        elif _SAMPLE_LINE_RE.fullmatch(line):
            samples += 1
        else:
            return False
    if meta:
        return True
    return samples >= 1 and name.lower().endswith((".prom", ".om", ".metrics", ".txt"))


# --- query_range JSON -----------------------------------------------------------------------------


def _json_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def parse_query_range(data: bytes, ctx: ParseContext) -> ParseResult:
    """Parse a Prometheus HTTP API ``query_range`` (matrix) or ``query`` (vector) response."""
    file = ctx.name
    text = decode(data, file)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(file, exc.lineno, f"expected JSON: {exc.msg}") from None
    if not isinstance(doc, dict) or "status" not in doc:
        raise ParseError(file, 1, 'expected a JSON object with "status" and "data"')
    if doc["status"] == "error":
        raise ParseError(
            file,
            1,
            f"Prometheus returned an error ({doc.get('errorType', 'unknown')}): "
            f"{doc.get('error', '')}; expected status success",
        )
    if doc["status"] != "success":
        raise ParseError(file, 1, f'expected "status": "success", got {doc["status"]!r}')
    body = doc.get("data")
    if not isinstance(body, dict):
        raise ParseError(file, 1, 'expected "data" to be an object with resultType and result')
    result_type = body.get("resultType")
    if result_type not in ("matrix", "vector"):
        raise ParseError(file, 1, f'expected "resultType" matrix or vector, got {result_type!r}')
    items = body.get("result")
    if not isinstance(items, list):
        raise ParseError(file, 1, 'expected "data.result" to be a list')

    out = _Collector(file)
    warnings: list[str] = [f"{file}: Prometheus warning: {w}" for w in doc.get("warnings") or []]
    for i, item in enumerate(items):
        where = f"result[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
            raise ParseError(file, 0, f'{where}: expected an object with a "metric" object')
        labels = dict(item["metric"])
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            raise ParseError(file, 0, f"{where}.metric: expected string label names and values")
        name = labels.pop("__name__", "query_range")
        key = SeriesKey(name, tuple(sorted(labels.items())))
        out.block(key)
        if result_type == "matrix":
            points = item.get("values")
            if not isinstance(points, list):
                if "histograms" in item:
                    warnings.append(f"{file}: {where}: native histograms are not imported")
                    continue
                raise ParseError(file, 0, f'{where}: expected a "values" list of [time, "value"]')
            field_name = "values"
        else:
            points = [item.get("value")]
            field_name = "value"
        for j, point in enumerate(points):
            at = f"{where}.{field_name}[{j}]" if result_type == "matrix" else f"{where}.value"
            if not isinstance(point, list) or len(point) != 2:
                raise ParseError(file, 0, f'{at}: expected [unix seconds, "value"]')
            seconds, value = _json_number(point[0]), _json_number(point[1])
            if seconds is None or not math.isfinite(seconds) or isinstance(point[0], str):
                raise ParseError(
                    file, 0, f"{at}: expected a unix time in seconds, got {point[0]!r}"
                )
            if value is None:
                raise ParseError(file, 0, f"{at}: bad number: expected a float, got {point[1]!r}")
            try:
                ts = epoch_ms(seconds, "s")
            except TimeError as exc:
                raise ParseError(file, 0, f"{at}: {exc}") from None
            out.add(key, ts, value, 0, at)
    result = ParseResult(kind=KIND_QUERY_RANGE, warnings=warnings)
    result.samples.extend(out.blocks.values())
    return result


def looks_like_query_range(name: str, head: bytes) -> bool:
    """True when the head reads as a Prometheus HTTP API query response."""
    text = head_text(head).lstrip()
    if not text.startswith("{"):
        return False
    return '"resultType"' in text or ('"status"' in text and '"data"' in text)


# --- nvidia-smi CSV ------------------------------------------------------------------------------

_SMI_TIME_RE = re.compile(r"(\d{4})/(\d{2})/(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?")
_SMI_HEADER_RE = re.compile(r"([A-Za-z0-9_.]+)(?:\s*\[([^\]]*)\])?")
_SMI_MISSING = frozenset({"[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]"})
_SMI_GPU_COLUMNS = ("index", "uuid", "pci.bus_id")


def _smi_series_name(column: str, unit: str) -> tuple[str, str]:
    name = "nvidia_smi_" + column.replace(".", "_")
    if unit == "%":
        return name, "percent"
    if unit:
        return f"{name}_{re.sub(r'[^a-z0-9]+', '_', unit.lower()).strip('_')}", unit
    return name, ""


def _smi_number(raw: str, unit: str) -> float | None:
    text = raw.strip()
    if text in _SMI_MISSING:
        return None
    if unit and text.endswith(unit):
        text = text[: -len(unit)].strip()
    if text.lower().startswith("0x"):
        return float(int(text, 16))
    if len(text) >= 2 and text[0] == "P" and text[1:].isdigit():  # pstate: P0 .. P12
        return float(text[1:])
    return float(text)


def parse_nvidia_smi(data: bytes, ctx: ParseContext) -> ParseResult:
    """Parse ``nvidia-smi --query-gpu=timestamp,index,... --format=csv`` output (with header)."""
    file = ctx.name
    lines = decode(data, file).splitlines()
    header_at = next((i for i, line in enumerate(lines) if line.strip()), None)
    if header_at is None:
        raise ParseError(file, 1, "expected the nvidia-smi CSV header line starting 'timestamp'")
    columns: list[tuple[str, str]] = []
    for cell in lines[header_at].split(","):
        match = _SMI_HEADER_RE.fullmatch(cell.strip())
        if match is None:
            raise ParseError(
                file,
                header_at + 1,
                f"expected a column name like 'memory.used [MiB]', got {cell.strip()!r}",
            )
        columns.append((match.group(1), match.group(2) or ""))
    names = [c for c, _ in columns]
    if "timestamp" not in names:
        raise ParseError(
            file,
            header_at + 1,
            "expected a 'timestamp' column (nvidia-smi --query-gpu=timestamp,... --format=csv)",
        )
    t_col = names.index("timestamp")
    gpu_col = next((names.index(c) for c in _SMI_GPU_COLUMNS if c in names), None)

    rows: list[tuple[int, list[str]]] = []
    for i in range(header_at + 1, len(lines)):
        if not lines[i].strip():
            continue
        cells = [c.strip() for c in lines[i].split(",")]
        if len(cells) != len(columns):
            raise ParseError(
                file, i + 1, f"expected {len(columns)} comma-separated fields, got {len(cells)}"
            )
        rows.append((i + 1, cells))

    # A column is a metric when at least one of its cells is a number; names and UUIDs are not.
    metric_cols: list[int] = []
    skipped: list[str] = []
    for c, (column, unit) in enumerate(columns):
        if c in (t_col, gpu_col) or column in ("name", "uuid", "serial", "pci.bus_id"):
            continue
        numeric = False
        for _, cells in rows:
            try:
                numeric = _smi_number(cells[c], unit) is not None
            except ValueError:
                continue
            if numeric:
                break
        if numeric:
            metric_cols.append(c)
        elif rows:
            skipped.append(column)

    local_seconds: dict[str, int] = {}
    out = _Collector(file)
    keys: dict[tuple[int, str], SeriesKey] = {}
    for lineno, cells in rows:
        stamp = cells[t_col]
        base = local_seconds.get(stamp[:19])
        match = _SMI_TIME_RE.fullmatch(stamp)
        if match is None:
            raise ParseError(
                file, lineno, f"expected a timestamp like 2026/11/20 15:40:00.123, got {stamp!r}"
            )
        if base is None:
            try:
                local = wall_clock(*(int(g) for g in match.groups()[:6]), tz=ctx.tz)
            except TimeError as exc:
                raise ParseError(file, lineno, f"invalid timestamp {stamp!r}: {exc}") from None
            base = local_seconds[stamp[:19]] = to_epoch_ms(local)
        fraction = match.group(7) or ""
        ts = base + (int(fraction.ljust(3, "0")[:3]) if fraction else 0)
        gpu = cells[gpu_col] if gpu_col is not None else ""
        for c in metric_cols:
            column, unit = columns[c]
            try:
                value = _smi_number(cells[c], unit)
            except ValueError:
                raise ParseError(
                    file,
                    lineno,
                    f"bad number in column {column!r}: expected a number, got {cells[c]!r}",
                ) from None
            if value is None:
                continue
            key = keys.get((c, gpu))
            if key is None:
                series, _ = _smi_series_name(column, unit)
                key = keys[(c, gpu)] = SeriesKey(
                    series, (("gpu", gpu),) if gpu_col is not None else ()
                )
                block = out.block(key)
                block.type, block.unit = "gauge", _smi_series_name(column, unit)[1]
                block.help = f"nvidia-smi --query-gpu={column}"
            out.add(key, ts, value, lineno)
    result = ParseResult(kind=KIND_NVIDIA_SMI)
    result.samples.extend(out.blocks.values())
    result.warnings.extend(f"{file}: column {c!r} is not numeric; not imported" for c in skipped)
    return result


def looks_like_nvidia_smi(name: str, head: bytes) -> bool:
    """True when the head is an nvidia-smi ``--query-gpu`` CSV with a timestamp column."""
    first = next((line for line in head_text(head).splitlines() if line.strip()), "")
    cells = [c.strip() for c in first.split(",")]
    if len(cells) < 2 or cells[0] != "timestamp":
        return False
    known = {"index", "uuid", "name", "pci.bus_id"}
    return any(c.split(" [")[0] in known or "." in c for c in cells[1:])


# --- exposition: streaming parts ------------------------------------------------------------------

_PART_BYTES = 1 << 26  # ~64 MiB of text per part


class StreamFallback(Exception):
    """The streaming path does not take this file (OpenMetrics, a shape only the careful path
    reads, a duplicate or a step back): parse it whole with :func:`parse_exposition`, which
    loads it or names the bad line."""


class ExpositionStream:
    """Prometheus text parsed part by part, so a loader can store one part while the next is
    parsed. Iterating yields ``(sids, values, stamps)`` per part, grouped by series id (file
    order within a series); ``keys[sid]`` names the series. Every check of the whole-file path
    holds across parts; where one fails, iteration raises StreamFallback. After iteration,
    :meth:`block_meta` gives each series' type, unit and help.
    """

    def __init__(
        self, data: bytes | mmap.mmap, ctx: ParseContext, *, part_bytes: int | None = None
    ) -> None:
        self.data, self.ctx = data, ctx
        self.part_bytes = _PART_BYTES if part_bytes is None else part_bytes
        self.registry = _Registry()
        self.meta = _Meta()
        self._last = np.empty(0, dtype=np.int64)
        self.consumed = 0  # bytes of the file read so far, for progress

    @property
    def keys(self) -> list[SeriesKey]:
        return self.registry.keys

    def __iter__(self) -> Iterator[_Columns]:
        if _find_eof_marker(self.data):
            raise StreamFallback  # OpenMetrics: its seconds and # EOF rule need the whole file
        comments: dict[str, None] = {}
        pending: list[_Columns] = []
        size = 0
        for raw in _raw_chunks(self.data):
            self.consumed += len(raw) + 1
            gc_was_enabled = gc.isenabled()
            gc.disable()  # see parse_exposition
            try:
                cols = self._chunk(raw, comments)
            finally:
                if gc_was_enabled:
                    gc.enable()
            if cols is not None:
                pending.append(cols)
                size += len(raw)
            if size >= self.part_bytes:
                yield self._part(pending)
                pending, size = [], 0
        if pending:
            yield self._part(pending)
        for line in comments:
            try:
                self.meta.comment(line, self.ctx.name, 0)
            except ParseError:
                raise StreamFallback from None

    def _chunk(self, raw: bytes, comments: dict[str, None]) -> _Columns | None:
        if not raw:
            return None
        try:
            cols = _flat_chunk(raw, self.ctx, False, self.registry, comments)
            if cols is None:
                cols = _split_chunk(raw, self.ctx, False, self.registry, comments)
        except _Bail:
            raise StreamFallback from None
        return cols

    def _part(self, got: list[_Columns]) -> _Columns:
        sids = np.concatenate([c[0] for c in got])
        values = np.concatenate([c[1] for c in got])
        stamps = np.concatenate([c[2] for c in got])
        nseries = len(self.registry.keys)
        narrow = sids.astype(np.uint16) if nseries < 65536 else sids
        order = np.argsort(narrow, kind="stable")
        sids, values, stamps = sids[order], values[order], stamps[order]
        if ((sids[1:] == sids[:-1]) & (stamps[1:] <= stamps[:-1])).any():
            raise StreamFallback
        if len(self._last) < nseries:
            grown = np.full(nseries, np.iinfo(np.int64).min, dtype=np.int64)
            grown[: len(self._last)] = self._last
            self._last = grown
        if len(sids):
            firsts = np.flatnonzero(np.r_[True, sids[1:] != sids[:-1]])
            lasts = np.r_[firsts[1:] - 1, len(sids) - 1]
            if (stamps[firsts] <= self._last[sids[firsts]]).any():
                raise StreamFallback  # a duplicate or a step back across parts
            self._last[sids[lasts]] = stamps[lasts]
        return sids, values, stamps

    def block_meta(self, sid: int) -> tuple[str, str, str]:
        """(type, unit, help) of a series, once iteration has finished."""
        block = SampleBlock(key=self.registry.keys[sid])
        self.meta.fill(block, "untyped")
        return block.type, block.unit, block.help
