"""Issue 18: the official OpenMetrics parser test suite, run against our exposition parser and,
as the reference, prometheus_client's OpenMetrics parser.

    .venv/bin/python bench/openmetrics_conformance.py PATH [--verbose]

PATH is the root of a local clone of the OpenMetrics repository (github.com/prometheus/OpenMetrics,
formerly OpenObservability/OpenMetrics); its cases are ``tests/testdata/parsers/<case>/`` with a
``test.json`` (``{"type": "text", "file": "metrics", "shouldParse": true|false}``). Nothing of
the suite is copied here: it is read where it lies.

Each case is parsed as the suite's content type says, OpenMetrics text: ``parse_exposition(...,
openmetrics=True)``, with a default time for samples that carry no timestamp (an ingest gives
the file's). A case is right when the parse succeeds exactly when ``shouldParse`` says it
should; a refusal must be a ParseError (anything else counts as a crash). Prints right / total,
the invalid cases accepted and the valid ones refused (with our message), and the same for
prometheus_client. Needs no database. Exits 1 when ours is wrong on any case.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

# Run as a script, sys.path[0] is bench/; the project root holds the ingest package.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

SUITE = Path("tests") / "testdata" / "parsers"
DEFAULT_TIME = dt.datetime(2026, 11, 20, 23, 40, tzinfo=dt.UTC)


@dataclass
class Tally:
    """One parser's verdicts on the suite."""

    name: str
    right: int = 0
    total: int = 0
    invalid_accepted: list[str] = field(default_factory=list)
    valid_refused: list[tuple[str, str]] = field(default_factory=list)
    crashed: list[tuple[str, str]] = field(default_factory=list)

    def judge(self, case: str, should_parse: bool, parse: Callable[[], None]) -> None:
        self.total += 1
        try:
            parse()
        except Refused as exc:
            if should_parse:
                self.valid_refused.append((case, str(exc)))
            else:
                self.right += 1
            return
        except Exception as exc:  # a crash is wrong whatever the case expects
            self.crashed.append((case, f"{type(exc).__name__}: {exc}"))
            return
        if should_parse:
            self.right += 1
        else:
            self.invalid_accepted.append(case)

    def report(self, verbose: bool) -> None:
        print(f"\n{self.name}")
        print(
            f"  right {self.right}/{self.total}; invalid accepted {len(self.invalid_accepted)};"
            f" valid refused {len(self.valid_refused)}; crashed {len(self.crashed)}"
        )
        if self.invalid_accepted:
            print("  invalid accepted: " + ", ".join(self.invalid_accepted))
        for title, rows in (("valid refused", self.valid_refused), ("crashed", self.crashed)):
            if rows:
                print(f"  {title}:")
                for case, message in rows:
                    print(f"    {case}: {message if verbose else message[:160]}")


class Refused(Exception):
    """The parser refused the input the way it refuses bad input."""


def cases(root: Path) -> list[tuple[str, bool, bytes]]:
    """(case name, shouldParse, file bytes) of every text case under ``root``."""
    found = []
    for folder in sorted(p for p in root.iterdir() if (p / "test.json").is_file()):
        spec = json.loads((folder / "test.json").read_text())
        if spec.get("type") != "text":
            print(f"  skipped {folder.name}: type {spec.get('type')!r}")
            continue
        found.append((folder.name, bool(spec["shouldParse"]), (folder / spec["file"]).read_bytes()))
    return found


def ours(case: str, data: bytes) -> Callable[[], None]:
    from ingest.parsers.prometheus import parse_exposition
    from ingest.parsers.types import ParseContext, ParseError

    def parse() -> None:
        try:
            parse_exposition(data, ParseContext(case, default_time=DEFAULT_TIME), openmetrics=True)
        except ParseError as exc:
            raise Refused(exc) from None

    return parse


def prometheus_client(data: bytes) -> Callable[[], None]:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    def parse() -> None:
        try:
            for _ in text_string_to_metric_families(data.decode("utf-8")):
                pass
        except Exception as exc:  # it refuses with ValueError, KeyError, ... alike
            raise Refused(f"{type(exc).__name__}: {exc}") from None

    return parse


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="root of a clone of the OpenMetrics repository")
    parser.add_argument("--verbose", action="store_true", help="print whole messages")
    args = parser.parse_args()
    root = args.path / SUITE
    if not root.is_dir():
        parser.error(f"{root} is not a directory: expected PATH to be the repository root")
    print(f"OpenMetrics parser test suite: {root}")
    found = cases(root)
    print(f"  {len(found)} cases, {sum(1 for _, ok, _ in found if ok)} of them valid")
    mine = Tally("parse_exposition (openmetrics=True)")
    theirs = Tally(f"prometheus_client {version('prometheus_client')} openmetrics parser")
    for case, should_parse, data in found:
        mine.judge(case, should_parse, ours(case, data))
        theirs.judge(case, should_parse, prometheus_client(data))
    mine.report(args.verbose)
    theirs.report(args.verbose)
    return 0 if mine.right == mine.total else 1


if __name__ == "__main__":
    sys.exit(main())
