"""Hooks of the reliability tests: the attacks tally of issue 15 (tests.reliability.attacks)."""

from tests.reliability.attacks import (  # noqa: F401  (pytest finds hooks by name)
    pytest_runtest_makereport,
    pytest_terminal_summary,
)
