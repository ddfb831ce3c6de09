"""``nvidia-smi --query-gpu=timestamp,index,... --format=csv`` output.

Pure: bytes in, :class:`ParseResult` out: one gauge series per numeric column and GPU. The
timestamps carry no zone: they are wall-clock times in the bundle's zone.
"""

from __future__ import annotations

import re

from .series import Collector
from .text import decode, head_text
from .timestamps import TimeError, to_epoch_ms, wall_clock
from .types import ParseContext, ParseError, ParseResult, SeriesKey

KIND_NVIDIA_SMI = "nvidia_smi_csv"

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
    out = Collector(file)
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
