"""``nvidia-smi --query-gpu=timestamp,index,... --format=csv`` output.

Pure: bytes in, :class:`ParseResult` out: one gauge series per numeric column and GPU. The
timestamps carry no zone: they are wall-clock times in the bundle's zone.

The CSVs people paste often have no ``timestamp`` column (one reading of every GPU): then the
time given for the file (``--at``) applies to every row, and a GPU without an ``index`` (or
uuid, bus id) column is named by its row, the order nvidia-smi lists GPUs in. Two readings of
one GPU without timestamps cannot be placed in time: refused, with what to do.
"""

from __future__ import annotations

import re

from .series import Collector
from .text import decode, head_text
from .timestamps import TimeError, default_time, to_epoch_ms, wall_clock
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
    file_ms: int | None = None  # the time of every row when the CSV has no timestamp column
    if "timestamp" not in names:
        at = default_time(ctx)
        if at is None:
            raise ParseError(
                file,
                header_at + 1,
                "expected a 'timestamp' column (nvidia-smi --query-gpu=timestamp,... "
                "--format=csv), or the time of this reading given for the file (--at)",
            )
        file_ms = to_epoch_ms(at)
    t_col = names.index("timestamp") if file_ms is None else -1
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
    seen_gpus: dict[str, int] = {}
    for position, (lineno, cells) in enumerate(rows):
        gpu = cells[gpu_col] if gpu_col is not None else ""
        if file_ms is not None:
            gpu = gpu or str(position)
            if gpu in seen_gpus:
                raise ParseError(
                    file,
                    lineno,
                    f"GPU {gpu} is read twice (first at line {seen_gpus[gpu]}) but the CSV has "
                    "no timestamp column to tell the readings apart: add timestamp to "
                    "--query-gpu, or give each reading its own file and time (--at)",
                )
            seen_gpus[gpu] = lineno
            ts = file_ms
        else:
            ts = _row_time(cells[t_col], ctx, file, lineno, local_seconds)
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
                key = keys[(c, gpu)] = SeriesKey(series, (("gpu", gpu),) if gpu else ())
                block = out.block(key)
                block.type, block.unit = "gauge", _smi_series_name(column, unit)[1]
                block.help = f"nvidia-smi --query-gpu={column}"
            out.add(key, ts, value, lineno)
    result = ParseResult(kind=KIND_NVIDIA_SMI)
    result.samples.extend(out.blocks.values())
    result.warnings.extend(f"{file}: column {c!r} is not numeric; not imported" for c in skipped)
    return result


def _row_time(
    stamp: str, ctx: ParseContext, file: str, lineno: int, local_seconds: dict[str, int]
) -> int:
    """A row's ``timestamp`` cell as epoch ms (each distinct second converted once)."""
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
    return base + (int(fraction.ljust(3, "0")[:3]) if fraction else 0)


_SMI_KNOWN = frozenset(
    {
        "index",
        "uuid",
        "name",
        "pci.bus_id",
        "utilization.gpu",
        "utilization.memory",
        "memory.used",
        "memory.total",
        "memory.free",
        "power.draw",
        "temperature.gpu",
        "fan.speed",
    }
)


def looks_like_nvidia_smi(name: str, head: bytes) -> bool:
    """True when the head is an nvidia-smi ``--query-gpu`` CSV: a timestamp column, or (as
    pasted CSVs often are, without one) nvidia-smi's own column names with their units."""
    first = next((line for line in head_text(head).splitlines() if line.strip()), "")
    cells = [c.strip() for c in first.split(",")]
    if len(cells) < 2:
        return False
    if cells[0] == "timestamp":
        known = {"index", "uuid", "name", "pci.bus_id"}
        return any(c.split(" [")[0] in known or "." in c for c in cells[1:])
    if not all(_SMI_HEADER_RE.fullmatch(c) for c in cells):
        return False
    found = [c.split(" [")[0] for c in cells if c.split(" [")[0] in _SMI_KNOWN]
    return len(found) >= 2 and any(" [" in c for c in cells)
