"""Samples of one series collected in file order, and how a series is named in messages.

Pure. Shared by the metric parsers that add samples one at a time (query_range JSON,
nvidia-smi CSV); the exposition parser checks the same order over whole columns with numpy.
"""

from __future__ import annotations

from .timestamps import ms_iso
from .types import ParseError, SampleBlock, SeriesKey


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def series_repr(key: SeriesKey) -> str:
    if not key.labels:
        return key.name
    inner = ",".join(f'{k}="{_escape_label(v)}"' for k, v in key.labels)
    return f"{key.name}{{{inner}}}"


class Collector:
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
            check_order(self.file, line, key, block.ts_ms[-1], ts_ms, where)
        block.ts_ms.append(ts_ms)
        block.values.append(value)


def check_order(file: str, line: int, key: SeriesKey, prev: int, ts: int, where: str = "") -> None:
    if ts > prev:
        return
    prefix = f"{where}: " if where else ""
    if ts == prev:
        raise ParseError(
            file, line, f"{prefix}duplicate sample for {series_repr(key)} at {ms_iso(ts)}"
        )
    raise ParseError(
        file,
        line,
        f"{prefix}timestamp going backwards for {series_repr(key)}: {ms_iso(ts)} after "
        f"{ms_iso(prev)}; expected increasing timestamps within a series",
    )
