"""Hooks of the reliability tests: the faults figures (tests/reliability/figures.py) and the
attacks tally (tests/reliability/attacks.py) of issue 15, shown after the run."""

from __future__ import annotations

from typing import Any

from tests.conftest import ARTIFACTS
from tests.reliability import attacks, figures
from tests.reliability.attacks import pytest_runtest_makereport  # noqa: F401  (a hook, by name)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    attacks.pytest_terminal_summary(terminalreporter)
    lines = figures.summary_lines()
    if lines:
        terminalreporter.section("issue 15: faults injected and survived")
        for line in lines:
            terminalreporter.write_line(line)
        figures.write(ARTIFACTS / "reliability-figures.json")
