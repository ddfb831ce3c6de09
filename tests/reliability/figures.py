"""Figures of the fault tests (issue 15): each fault injected, whether the product came
through it, and the rows it ingested and lost. Printed at the end of the session and written to
test-artifacts/reliability-figures.json; bench/README.md quotes a run."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Fault:
    name: str
    survived: bool
    rows_ingested: int = 0
    rows_lost: int = 0
    recovery_s: float | None = None  # from the fault to the work done again


FAULTS: list[Fault] = []


def record(
    name: str,
    *,
    survived: bool,
    rows_ingested: int = 0,
    rows_lost: int = 0,
    recovery_s: float | None = None,
) -> None:
    """Called by a test once its assertions passed (a failed test records nothing)."""
    FAULTS.append(Fault(name, survived, rows_ingested, rows_lost, recovery_s))


def summary_lines() -> list[str]:
    if not FAULTS:
        return []
    lines = [
        f"faults injected: {len(FAULTS)}, survived: {sum(f.survived for f in FAULTS)}, "
        f"rows ingested: {sum(f.rows_ingested for f in FAULTS)}, "
        f"rows lost: {sum(f.rows_lost for f in FAULTS)}"
    ]
    for f in FAULTS:
        after = f" recovered in {f.recovery_s:.1f} s," if f.recovery_s is not None else ""
        lines.append(
            f"  {f.name}: {'survived' if f.survived else 'NOT survived'},{after} "
            f"{f.rows_ingested} rows ingested, {f.rows_lost} lost"
        )
    return lines


def write(path: Path) -> None:
    if FAULTS:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps([asdict(f) for f in FAULTS], indent=2) + "\n")
