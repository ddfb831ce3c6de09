"""The reliability tests' figures (tests/reliability/figures.py), shown after the run."""

from __future__ import annotations

from typing import Any

from tests.conftest import ARTIFACTS
from tests.reliability import figures


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = figures.summary_lines()
    if lines:
        terminalreporter.section("issue 15: faults injected and survived")
        for line in lines:
            terminalreporter.write_line(line)
        figures.write(ARTIFACTS / "reliability-figures.json")
