"""The figure of issue 15: attacks tried and attacks held, counted over the security tests.

A test marked ``@pytest.mark.attack("what", count=N)`` tries N attacks of one kind (a test that
counts as it goes says ``request.node.user_properties.append(("attacks", n))`` instead); they
held when the test passed. The terminal summary prints the tally per kind, and
``ATTACKS_JSON=path`` writes it as JSON (bench/README.md quotes a run's figures).
"""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest

TRIED: Counter[str] = Counter()
HELD: Counter[str] = Counter()


def _count(item: pytest.Item) -> tuple[str, int] | None:
    mark = item.get_closest_marker("attack")
    if mark is None:
        return None
    return str(mark.args[0]), int(mark.kwargs.get("count", 1))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    attack = _count(item)
    if attack is None or report.when != "call":
        return
    kind, n = attack
    counted = [int(v) for k, v in report.user_properties if k == "attacks"]
    n = sum(counted) if counted else n
    TRIED[kind] += n
    if report.passed:
        HELD[kind] += n


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if not TRIED:
        return
    tried, held = sum(TRIED.values()), sum(HELD.values())
    terminalreporter.section("issue 15: attacks")
    for kind in sorted(TRIED):
        terminalreporter.write_line(f"{kind:<44} tried {TRIED[kind]:>5}  held {HELD[kind]:>5}")
    terminalreporter.write_line(f"{'all attacks':<44} tried {tried:>5}  held {held:>5}")
    path = os.environ.get("ATTACKS_JSON")
    if path:
        with open(path, "w") as out:
            json.dump({"tried": dict(TRIED), "held": dict(HELD)}, out, indent=1, sort_keys=True)
