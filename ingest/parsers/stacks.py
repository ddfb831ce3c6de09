"""Stack dumps: ``py-spy dump`` text and ``--json``, Go goroutine dumps (SIGQUIT, pprof
``debug=2``) and pprof ``debug=1`` goroutine profiles.

Pure: bytes in, one ``stack_dump`` event out. No format records when it was taken, so the
capture time comes from a timestamp in the file name, else from ``ctx.default_time``.

This module holds what both readers share (capture time, dump key, code fence); the readers
are ``pyspy.py`` and ``goroutines.py``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re

from .timestamps import LocalTimeError, TimeError, default_time, parse_offset, wall_clock
from .types import ParseContext, ParseError

# File-name timestamps, most specific first: 2026-11-20T15:45:00Z, 2026-11-20T15-45-00,
# 20261120T154500 (each optionally followed by Z or an offset).
_ZONE = r"(?P<zone>Z|[+-]\d{2}:?\d{2})?"
_NAME_TIME_RES = (
    re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?" + _ZONE),
    re.compile(r"(\d{4})-(\d{2})-(\d{2})[T_](\d{2})-(\d{2})-(\d{2})" + _ZONE),
    re.compile(r"(?<!\d)(\d{4})(\d{2})(\d{2})[T_]?(\d{2})(\d{2})(\d{2})(?!\d)" + _ZONE),
)


def capture_time(ctx: ParseContext) -> dt.datetime:
    """The dump's capture time: a timestamp in ``ctx.name``, else ``ctx.default_time``."""
    base = ctx.name.replace("\\", "/").rsplit("/", 1)[-1]
    for candidate in (base, ctx.name):
        for pattern in _NAME_TIME_RES:
            for m in pattern.finditer(candidate):
                when = _name_match_time(m, ctx)
                if when is not None:
                    return when
    given = default_time(ctx)
    if given is not None:
        return given
    raise ParseError(
        ctx.name,
        0,
        "a stack dump needs a capture time: put it in the file name (e.g. "
        "scheduler_2026-11-20T15-45-00.txt or 20261120T154500) or pass --at",
    )


def _name_match_time(m: re.Match[str], ctx: ParseContext) -> dt.datetime | None:
    zone = m.group("zone")
    try:
        return wall_clock(
            *(int(g) for g in m.groups()[:6]), tz=parse_offset(zone) if zone else ctx.tz
        )
    except LocalTimeError as exc:
        raise ParseError(ctx.name, 0, f"the time in the file name: {exc}") from None
    except TimeError:
        return None  # digits that are not a date (a build number, say): keep looking


def dump_key(fmt: str, data: bytes, ctx: ParseContext) -> str:
    return f"{fmt}:{ctx.name}:{hashlib.sha256(data).hexdigest()[:16]}"


def code_block(lines: list[str]) -> str:
    fence = "````" if any("```" in ln for ln in lines) else "```"
    return f"{fence}\n" + "\n".join(lines) + f"\n{fence}"
