"""A library's failing line repeated many times a second (Mooncake's glog ERROR lines beside an
SGLang server, a router's health checks): one error with its repeats' count, not hundreds.

Pure. Repeats are lines of one level and source with the same words, numbers aside (a peer's
address or port, a buffer's hex address change from line to line), less than :data:`GAP` after
the last one folded. Lines of several threads come out of order by microseconds: the folded
error spans from the earliest to the latest of them.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Protocol

GAP = dt.timedelta(minutes=1)
# Hex literals (a buffer's address, a pointer) first: their letters differ from line to line too.
_NUMBERS = re.compile(r"0[xX][0-9a-fA-F]+|\d+")


class Folding(Protocol):
    """An error record repeats fold into."""

    at: dt.datetime | None
    repeats: int
    last_at: dt.datetime | None
    last_line: int


def key(level: str, source: str, words: str) -> str:
    """What repeats of one line share."""
    return f"{level} {source} {_NUMBERS.sub('#', words.strip())}"


def fold(seen: Folding, at: dt.datetime | None, line: int) -> bool:
    """Count the line at ``at`` as a repeat of ``seen`` (True), unless it comes a :data:`GAP`
    or more after the last one (False: an error of its own)."""
    last = seen.last_at or seen.at
    if at is not None and last is not None and at - last >= GAP:
        return False
    seen.repeats += 1
    seen.last_line = line
    if at is not None:
        seen.last_at = at if last is None else max(last, at)
        if seen.at is not None and at < seen.at:
            seen.at = at
    return True


def note(seen: Folding) -> str:
    """The words the error's body ends with."""
    last = f" at {seen.last_at.isoformat()}" if seen.last_at else ""
    return (
        f"\n\n({seen.repeats} more lines like it, numbers aside; the last{last}, "
        f"line {seen.last_line})"
    )
