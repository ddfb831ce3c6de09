"""The bulk exposition parser: whole chunks of lines tokenised at C speed, grouped with numpy.

Pure. It handles the ordinary shape of a scrape (comments, blank lines, ``series value
[timestamp]`` lines) and raises :class:`Bail` on anything unusual, for the careful path to
read the file line by line and name the bad line. Both paths share the series-text cache
(:class:`~.grammar.Registry`): label sets are parsed once per distinct series text.
"""

from __future__ import annotations

import gc
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import compress, repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from ..timestamps import MAX_MS, MIN_MS
from ..types import ParseContext, ParseError
from .chunks import raw_chunks
from .grammar import Meta, Registry, default_ms, scan_series


class Bail(Exception):
    """The bulk path met something it does not handle; the careful path takes over."""


Columns = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]


def _numbers(
    tokens: tuple[str, ...] | list[str], kind: type[int] | type[float]
) -> npt.NDArray[Any]:
    """Convert tokens with Python's own int()/float() (so both paths agree on what is valid)."""
    if "_" in "".join(tokens):  # int()/float() accept 1_000; the format does not
        raise Bail
    dtype = np.int64 if kind is int else np.float64
    try:
        return np.fromiter(map(kind, tokens), dtype, len(tokens))
    except (ValueError, OverflowError):
        raise Bail from None


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
        with np.errstate(over="ignore", invalid="ignore"):  # NaN, Inf fail the range check
            scaled = np.rint(_numbers(tokens, float) * 1000.0)
    else:
        scaled = _numbers(tokens, int)
    if not ((scaled >= MIN_MS) & (scaled <= MAX_MS)).all():
        raise Bail  # not a time: the careful path names the line
    return scaled.astype(np.int64)


def columns(
    names: tuple[str, ...] | list[str],
    values: tuple[str, ...] | list[str],
    stamps: tuple[str, ...] | list[str] | None,
    ctx: ParseContext,
    openmetrics: bool,
    registry: Registry,
    masked: bool = False,
) -> Columns:
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
                key, end = scan_series(real, ctx.name, 0)
            except ParseError:
                raise Bail from None
            if end != len(real):
                raise Bail
            sid = registry.add(real, key)
            known[text] = sid
        unique[text] = sid
    m = len(names)
    sids = np.fromiter(map(unique.__getitem__, names), np.int64, m)
    vals = _numbers(values, float)
    if stamps is not None:
        return sids, vals, _stamps(stamps, openmetrics)
    fallback_ms = default_ms(ctx)
    if fallback_ms is None:
        raise Bail
    return sids, vals, np.full(m, fallback_ms, np.int64)


class Layout:
    """Where the lines of a chunk are: their bounds, which are comments, which are samples."""

    def __init__(self, raw: bytes) -> None:
        size = len(raw)
        self.raw = raw
        self.arr = arr = np.frombuffer(raw, np.uint8)
        newlines = np.flatnonzero(arr == 10)
        starts = np.empty(len(newlines) + 1, np.int64)
        starts[0] = 0
        starts[1:] = newlines + 1
        ends = np.empty_like(starts)
        ends[:-1] = newlines
        ends[-1] = size
        nonempty = ends > starts
        first_byte = arr[np.minimum(starts, size - 1)]
        self.starts, self.ends = starts, ends
        self.blank = ~nonempty
        self.comment = nonempty & (first_byte == 35)
        self.sample = nonempty & ~self.comment
        self.count = int(self.sample.sum())

    def comment_lines(self, *, distinct: bool = False) -> list[str]:
        """The comment lines in file order, or each distinct one once (Bail on undecodable
        bytes)."""
        bounds = map(slice, self.starts[self.comment].tolist(), self.ends[self.comment].tolist())
        lines = map(self.raw.__getitem__, bounds)
        try:
            return [line.decode("utf-8") for line in (dict.fromkeys(lines) if distinct else lines)]
        except UnicodeDecodeError:
            raise Bail from None

    def tokens(self, fields: int) -> tuple[list[str], bool] | None:
        """Every sample line split at its last ``fields - 1`` spaces into one flat token list
        (``fields`` tokens a line, the series text first), and whether spaces inside series
        texts were masked with NUL to do it; None when a sample line has too few spaces.

        Spaces inside series texts (label values such as modelName="NVIDIA B200") are found
        with numpy over the bytes and masked, so one ``split`` tokenises the whole chunk.
        """
        raw, arr, starts, ends, sample = self.raw, self.arr, self.starts, self.ends, self.sample
        space_at = np.flatnonzero(arr == 32)
        line_of_space = np.searchsorted(starts, space_at, side="right") - 1
        spaces = np.bincount(line_of_space, minlength=len(starts))
        per_sample = spaces[sample]
        separators = fields - 1
        if not (per_sample >= separators).all():
            return None
        body = raw
        masked = bool((per_sample > separators).any())
        if masked:
            if b"\0" in raw:
                return None
            last_space = np.cumsum(spaces)[line_of_space] - 1
            from_end = last_space - np.arange(len(space_at))
            inner = space_at[(from_end >= separators) & sample[line_of_space]]
            buffer = bytearray(raw)
            np.frombuffer(buffer, np.uint8)[inner] = 0
            body = bytes(buffer)
        try:
            if self.count == len(starts):
                text = body.decode("utf-8")
            else:
                edges = np.diff(np.concatenate(([0], sample.view(np.int8), [0])))
                first_lines = np.flatnonzero(edges == 1)
                last_lines = np.flatnonzero(edges == -1) - 1
                bounds = map(slice, starts[first_lines].tolist(), ends[last_lines].tolist())
                text = b"\n".join(map(body.__getitem__, bounds)).decode("utf-8")
        except UnicodeDecodeError:
            raise Bail from None
        flat = text.replace("\n", " ").split(" ")
        if len(flat) != fields * self.count:
            return None
        return flat, masked


def decode_chunk(raw: bytes) -> str:
    """A chunk as text, or Bail (the careful path names the undecodable line)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Bail from None


def flat_chunk(
    raw: bytes, ctx: ParseContext, openmetrics: bool, registry: Registry, comments: dict[str, None]
) -> Columns | None:
    """The common shape: every sample line is ``series value timestamp``, single spaces.

    Returns None when the chunk has another shape (see :meth:`Layout.tokens`).
    """
    layout = Layout(raw)
    if not layout.count:
        return None
    split = layout.tokens(3)
    if split is None:
        return None
    flat, masked = split
    if layout.comment.any():
        for line in layout.comment_lines(distinct=True):
            comments[line.strip()] = None
    try:
        return columns(flat[0::3], flat[1::3], flat[2::3], ctx, openmetrics, registry, masked)
    except Bail:
        return None  # e.g. two spaces between fields: the line-by-line tokeniser copes


def split_chunk(
    raw: bytes,
    ctx: ParseContext,
    openmetrics: bool,
    registry: Registry,
    comments: dict[str, None],
) -> Columns | None:
    """Any mix of lines with and without timestamps, any blanks; tokenised line by line."""
    lines = decode_chunk(raw).split("\n")
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
            raise Bail  # a lone name, a broken line
        comments[line] = None

    parts: list[tuple[npt.NDArray[np.intp], Columns]] = []
    for mask, has_ts in ((with_ts, True), (without_ts, False)):
        if mask.any():
            names, values, *rest = zip(*compress(tokens, mask.tolist()), strict=True)
            stamps = rest[0] if has_ts else None
            cols = columns(names, values, stamps, ctx, openmetrics, registry)
            parts.append((np.flatnonzero(mask), cols))
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0][1]
    order = np.argsort(np.concatenate([pos for pos, _ in parts]), kind="stable")
    sids, vals, stamps_ms = (np.concatenate([c[i] for _, c in parts])[order] for i in range(3))
    return sids, vals, stamps_ms


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while the bulk path runs.

    The bulk path allocates millions of short-lived token lists; the cyclic collector would
    rescan them over and over (5-8x slower) although none of them can form a cycle.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def read_chunk(
    raw: bytes,
    ctx: ParseContext,
    openmetrics: bool,
    registry: Registry,
    comments: dict[str, None],
) -> Columns | None:
    """One piece of the file (see :func:`~.chunks.raw_chunks`) as columns, None when it holds
    no sample; comment lines are collected in ``comments`` for :func:`read_comments`."""
    if not raw:
        return None
    cols = flat_chunk(raw, ctx, openmetrics, registry, comments)
    if cols is None:
        cols = split_chunk(raw, ctx, openmetrics, registry, comments)
    return cols


def read_comments(comments: dict[str, None], meta: Meta, file: str) -> None:
    """Feed the distinct comment lines to ``meta``; a bad one is for the careful path to name."""
    for line in comments:
        try:
            meta.comment(line, file, 0)
        except ParseError:
            raise Bail from None


def by_series(got: list[Columns], nseries: int) -> Columns:
    """The columns of several chunks grouped by series id, file order kept inside a series.

    Raises :class:`Bail` on a duplicate or a step back within a series.
    """
    sids = np.concatenate([c[0] for c in got])
    values = np.concatenate([c[1] for c in got])
    stamps = np.concatenate([c[2] for c in got])
    # A stable sort groups samples by series and keeps file order inside each group; with fewer
    # than 65536 series the ids fit uint16, where numpy's stable sort is a radix sort.
    narrow = sids.astype(np.uint16) if nseries < 65536 else sids
    order = np.argsort(narrow, kind="stable")
    sids, values, stamps = sids[order], values[order], stamps[order]
    if ((sids[1:] == sids[:-1]) & (stamps[1:] <= stamps[:-1])).any():
        raise Bail  # a duplicate or a step back: the careful path names the line
    return sids, values, stamps


def parse_bulk(
    data: bytes, ctx: ParseContext, openmetrics: bool, registry: Registry, meta: Meta
) -> tuple[list[array[int]], list[array[float]]]:
    """Per series (by registry id), its timestamps and values; :class:`Bail` if it cannot."""
    comments: dict[str, None] = {}
    got = [
        cols
        for raw in raw_chunks(data)
        if (cols := read_chunk(raw, ctx, openmetrics, registry, comments)) is not None
    ]
    read_comments(comments, meta, ctx.name)
    nseries = len(registry.keys)
    if not got:
        return [], []
    return per_series(got, nseries)


def per_series(got: list[Columns], nseries: int) -> tuple[list[array[int]], list[array[float]]]:
    """The columns of several chunks as one timestamp and one value array per series id
    (:func:`by_series` checks the order first)."""
    sids, values, stamps = by_series(got, nseries)
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
