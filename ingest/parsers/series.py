"""Samples of one series collected in file order, how a series is named in messages, and where
a series came from when its labels do not say.

Pure. Shared by the metric parsers that add samples one at a time (query_range JSON,
nvidia-smi CSV); the exposition parser checks the same order over whole columns with numpy.
"""

from __future__ import annotations

from collections.abc import Iterable

from .timestamps import default_time, ms_iso, to_epoch_ms
from .types import ParseContext, ParseError, ParseResult, SampleBlock, SeriesKey

# Labels that name the scraped target: Prometheus adds them when it scrapes.
TARGET_LABELS = frozenset({"instance", "job"})


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


def names_target(labels: Iterable[tuple[str, str]]) -> bool:
    """Whether a series' labels say which target it came from (``instance`` / ``job``)."""
    return any(name in TARGET_LABELS for name, _ in labels)


def mark_origins(result: ParseResult, ctx: ParseContext) -> int:
    """Give the file's name as origin to each series that took the file's time and whose labels
    name no target; returns how many were marked.

    A bare scrape of a /metrics endpoint has no timestamps (every sample takes the time given
    for the file) and no ``instance``/``job`` labels: the file is the only thing that tells two
    exporters' ``go_goroutines`` apart. Samples that carry their own times (exports, query_range
    answers, logs) are one series' history wherever they were read, so they keep no origin
    and overlapping files merge.
    """
    at = default_time(ctx)
    if at is None:
        return 0
    at_ms = to_epoch_ms(at)
    marked = 0
    for block in result.samples:
        if block.origin or not len(block.ts_ms):
            continue
        if names_target(block.key.labels):
            continue
        if block.ts_ms[0] == at_ms and all(ts == at_ms for ts in block.ts_ms):
            block.origin = ctx.name
            marked += 1
    return marked


# DCGM's "no reading" values (dcgm_structs.h: *_BLANK, *_NOT_FOUND, *_NOT_SUPPORTED,
# *_NOT_PERMISSIONED), which dcgm-exporter passes on as if they were readings: a GPU without a
# memory temperature sensor reports DCGM_FI_DEV_MEMORY_TEMP 9223372036854775794.
_DCGM_INT32_BLANKS = frozenset(float(0x7FFFFFF0 + k) for k in range(4))
_DCGM_INT64_BLANK = float(0x7FFFFFFFFFFFFFF0)  # the four int64 ones are one float64: 2**63
_DCGM_FP64_BLANKS = frozenset(float(2**47 + k) for k in range(4))
DCGM_BLANKS = (_DCGM_INT64_BLANK, *sorted(_DCGM_INT32_BLANKS), *sorted(_DCGM_FP64_BLANKS))
_DCGM_BLANK_SET = frozenset(DCGM_BLANKS)


def is_dcgm(name: str) -> bool:
    """A dcgm-exporter metric, whose samples may hold DCGM's "no reading" values."""
    return name.startswith("DCGM_FI_")


def dcgm_blank(value: float) -> bool:
    """One of DCGM's "no reading" values (the three widths above), not a reading."""
    return value in _DCGM_BLANK_SET


def drop_dcgm_blanks(result: ParseResult, file: str) -> None:
    """Take DCGM's "no reading" values out of ``DCGM_FI_*`` series, and say how many."""
    dropped: dict[str, int] = {}
    kept = []
    for block in result.samples:
        if not is_dcgm(block.key.name):
            kept.append(block)
            continue
        keep = [i for i, v in enumerate(block.values) if not dcgm_blank(v)]
        if len(keep) < len(block.values):
            dropped[block.key.name] = dropped.get(block.key.name, 0) + len(block.values) - len(keep)
            block.ts_ms = type(block.ts_ms)("q", (block.ts_ms[i] for i in keep))
            block.values = type(block.values)("d", (block.values[i] for i in keep))
        if len(block.values):
            kept.append(block)
    if dropped:
        result.samples[:] = kept
        names = ", ".join(f"{name} ({n})" for name, n in sorted(dropped.items())[:5])
        result.warnings.append(
            f"{file}: {sum(dropped.values())} DCGM samples held DCGM's 'blank / not supported' "
            f"value, not a reading, and were left out: {names}"
        )
