"""Prometheus text parsed part by part, so a loader stores one part while the next is parsed.

Pure: the caller hands over the bytes (or a read-only mapping of the file) and does the I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ..types import ParseContext, SampleBlock, SeriesKey
from .bulk import Bail, Columns, by_series, gc_paused, read_chunk, read_comments
from .chunks import has_eof_marker, raw_chunks
from .grammar import Meta, Registry, default_type
from .om_types import is_openmetrics_name

if TYPE_CHECKING:
    import mmap

PART_BYTES = 1 << 26  # ~64 MiB of text per part


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
        self.part_bytes = PART_BYTES if part_bytes is None else part_bytes
        self.registry = Registry()
        self.meta = Meta()
        self._last = np.empty(0, dtype=np.int64)
        self.consumed = 0  # bytes of the file read so far, for progress

    @property
    def keys(self) -> list[SeriesKey]:
        return self.registry.keys

    def __iter__(self) -> Iterator[Columns]:
        if has_eof_marker(self.data) or is_openmetrics_name(self.ctx.name):
            raise StreamFallback  # OpenMetrics: its rules are checked over the whole file
        comments: dict[str, None] = {}
        pending: list[Columns] = []
        size = 0
        for raw in raw_chunks(self.data):
            self.consumed += len(raw) + 1
            try:
                with gc_paused():
                    cols = read_chunk(raw, self.ctx, False, self.registry, comments)
            except Bail:
                raise StreamFallback from None
            if cols is not None:
                pending.append(cols)
                size += len(raw)
            if size >= self.part_bytes:
                yield self._part(pending)
                pending, size = [], 0
        if pending:
            yield self._part(pending)
        try:
            read_comments(comments, self.meta, self.ctx.name)
        except Bail:
            raise StreamFallback from None

    def _part(self, got: list[Columns]) -> Columns:
        try:
            sids, values, stamps = by_series(got, len(self.registry.keys))
        except Bail:
            raise StreamFallback from None
        nseries = len(self.registry.keys)
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
        self.meta.fill(block, default_type(openmetrics=False))
        return block.type, block.unit, block.help
