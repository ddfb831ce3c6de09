"""What log shippers put before each line of a server log, taken off so the line reads as the
server wrote it.

Pure (no Django, no I/O). People rarely have the server's own log file: they have what a
shipper kept of it, one entry per line, each with the shipper's prefix:

* Google Cloud Logging, as copied or exported:
  ``ERROR 2026-06-15T14:10:59.392125190Z [2026-06-15 14:10:59 TP7] ...``
  (a severity word, the entry's time in UTC);
* tab-separated exports (Grafana / Loki "download as text"):
  ``1765000000000<TAB>2026-06-15T14:10:59.392Z<TAB>[2026-06-15 14:10:59] ...``;
* Ray actors' output, relayed by the Ray driver: ``(WorkerDict pid=29239) [...] ...`` (also
  ``(Name pid=N, ip=10.0.0.1)``, and coloured with terminal escapes);
* a bracketed UTC time: ``[2025-11-06T02:10:00.703Z] [2025-11-06 02:10:00] ...``;
* a bracketed local time before the server's own (a wrapper such as moreutils' ``ts`` or a
  process manager stamping each line): ``[2025-03-11 16:16:58] [2025-03-11 01:16:58 TP0] ...``;
  in a log where lines carry both, a line with the wrapper's alone (a traceback's) loses it too;
* a program relaying the output through Python's logging:
  ``2025-03-08 02:04:48,693 - __main__ - INFO - [2025-03-08 02:04:48 TP0] ...``;
* a Markdown quote, as a log pasted in an issue: ``> [2025-02-18 06:32:23 DP7 TP7] ...``;
* ``docker compose logs`` / ``up``: ``sglang-1  | [...] ...`` (the service and replica,
  padded);
* ``kubectl logs --timestamps`` and ``docker logs -t``:
  ``2026-06-15T14:10:59.392125190Z [...] ...`` (RFC 3339 with nanoseconds), and
  ``kubectl logs --prefix``: ``[pod/name/container] ...``.

Only the prefix is taken off; the server's own ``[time]`` stays the time of the record (the
shipper's time is when the shipper saw the line). But a shipper's time carries a zone and
SGLang's does not: where the two differ by one UTC offset on (nearly) every line, that offset is
the server clock's (:func:`clock_offset`), whatever zone the incident is in. A continuation
line (a traceback, a multi-line payload) carries the prefix too, and loses it the same way,
keeping its indentation.

An export that lists the newest entry first cannot be read as a log (a request's Finish would
come before its Receive): it is refused with what to do, never guessed.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

from .timestamps import TimeError, parse_iso, reading_offset
from .types import ParseError

_RFC3339 = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})"
_SEVERITY = r"(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|ALERT|EMERGENCY)"

# (shipper, pattern): the pattern's ``time`` group, when present, is the shipper's time.
_SHIPPERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Cloud Logging", re.compile(rf"{_SEVERITY} (?P<time>{_RFC3339}) ")),
    ("tab-separated export", re.compile(rf"\d{{10,19}}\t(?P<time>{_RFC3339})\t")),
    ("kubectl/docker timestamps", re.compile(rf"(?P<time>{_RFC3339}) ")),
    ("bracketed UTC time", re.compile(rf"\[(?P<time>{_RFC3339})\] ")),
    (
        "Ray actor",
        re.compile(
            r"\((?:[A-Za-z_][\w.:-]*) pid=\d+(?:, ip=[0-9a-fA-F.:]+)?\)(?:\x1b\[[0-9;]*m)* ?"
        ),
    ),
    ("kubectl --prefix", re.compile(r"\[pod/[^\]\s]+\] ")),
    # docker compose's service and replica, padded to the longest name: "sglang-1  | ".
    ("docker compose", re.compile(r"[A-Za-z0-9][\w.-]*[-_]\d+ *\|(?: |$)")),
    # A program that relays the server's output through Python's logging, default format
    # "%(asctime)s - %(name)s - %(levelname)s - %(message)s" (its local time, no zone).
    (
        "Python logging relay",
        re.compile(
            r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} - [\w.<>-]+ - "
            r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
        ),
    ),
    # A log pasted into a Markdown quote (an issue or a chat): "> " before every line.
    ("Markdown quote", re.compile(r">(?: |$)")),
)
# A bracketed time with no zone and no rank tags, as a wrapper stamps it; before the server's
# own bracketed time it is the wrapper's (SGLang writes one bracket per line).
_LOCAL_STAMP = r"\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d{1,9})?\] "
_WRAPPER_STAMP = re.compile(_LOCAL_STAMP)
_DOUBLE_STAMP = re.compile(_LOCAL_STAMP + r"(?=\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
_FRACTION = re.compile(r"\.(\d+)")
_ANSI = re.compile(r"(?:\x1b\[[0-9;]*m)+")  # terminal colours before a prefix


def _time(text: str) -> dt.datetime | None:
    """An RFC 3339 time (nanoseconds cut to microseconds) as aware UTC, or None."""
    text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text, count=1)
    try:
        return parse_iso(text.replace("Z", "+00:00"), dt.UTC)
    except TimeError:
        return None


def strip_line(line: str) -> tuple[str, str, dt.datetime | None]:
    """``(line without its shipper prefixes, the outermost shipper's name or "", its time)``.

    Prefixes nest (kubectl's time before a Ray actor's tag): each is taken off in turn."""
    shipper = ""
    when: dt.datetime | None = None
    for _ in range(3):
        colour = _ANSI.match(line)
        if colour is not None:
            line = line[colour.end() :]
        for name, pattern in _SHIPPERS:
            match = pattern.match(line)
            if match is None:
                continue
            if not shipper:
                shipper = name
            stamp = match.groupdict().get("time")
            if stamp and when is None:
                when = _time(stamp)
            line = line[match.end() :]
            break
        else:
            break
    return line, shipper, when


def unwrap(lines: Sequence[str], file: str = "", *, strict: bool = True) -> list[str]:
    """The lines without their shipper prefixes.

    With ``strict``, an export whose shipper times run newest first raises ParseError (see the
    module docstring); format checks pass ``strict=False`` and never raise."""
    return unwrap_timed(lines, file, strict=strict)[0]


def unwrap_timed(
    lines: Sequence[str], file: str = "", *, strict: bool = True
) -> tuple[list[str], list[tuple[dt.datetime, int]], str]:
    """:func:`unwrap`, with the shipper's times (aware UTC, with their 1-based line numbers)
    and the shipper's name: a zoned shipper time beside SGLang's own naive ``[time]`` says
    which zone the server's clock was in (see :func:`clock_offset`)."""
    out: list[str] = []
    times: list[tuple[dt.datetime, int]] = []
    shipper = ""
    stripped = [strip_line(line) for line in lines]
    wrapped = any(_DOUBLE_STAMP.match(bare) for bare, _, _ in stripped[:200])
    for lineno, (bare, name, when) in enumerate(stripped, 1):
        if wrapped and (stamp := _WRAPPER_STAMP.match(bare)) is not None:
            bare = bare[stamp.end() :]
            name = name or "bracketed local time"
        out.append(bare)
        shipper = shipper or name
        if when is not None:
            times.append((when, lineno))
    if strict and len(times) >= 2:
        _check_order(times, shipper, file)
    return out, times, shipper


# A shipper sees a line a moment after the server stamped it (and SGLang's [time] drops the
# fraction): the two differ by the server clock's UTC offset plus at most this much.
_SHIPPER_DELAY = dt.timedelta(seconds=90)
_OFFSET_STEP = dt.timedelta(minutes=15)  # every UTC offset in use is a multiple of 15 minutes
MOST = 0.9  # the share of the lines that must agree


def clock_offset(pairs: Sequence[tuple[Sequence[int], dt.datetime]]) -> dt.timedelta | None:
    """The UTC offset of a server's clock, from ``(its naive reading's fields, the shipper's
    aware time)`` of the same lines: the offset most lines show (each difference rounded to a
    quarter hour, within :data:`_SHIPPER_DELAY` of it), or None when fewer than :data:`MOST`
    of the lines agree (a shipper that batches lines for minutes, a clock that changed offset
    in the middle)."""
    counts: dict[dt.timedelta, int] = {}
    for fields, shipped in pairs:
        offset = reading_offset(fields, shipped, slack=_SHIPPER_DELAY, step=_OFFSET_STEP)
        if offset is not None:
            counts[offset] = counts.get(offset, 0) + 1
    if not counts:
        return None
    offset, agree = max(counts.items(), key=lambda kv: kv[1])
    return offset if agree >= MOST * len(pairs) else None


def _check_order(times: list[tuple[dt.datetime, int]], shipper: str, file: str) -> None:
    backwards = sum(b < a for (a, _), (b, _) in zip(times, times[1:], strict=False))
    forwards = sum(b > a for (a, _), (b, _) in zip(times, times[1:], strict=False))
    if backwards > forwards:
        first_line = times[0][1]
        raise ParseError(
            file,
            first_line,
            f"this {shipper} log lists the newest entry first ({times[0][0].isoformat()} "
            f"before {times[-1][0].isoformat()}); a server log must be read oldest first: "
            "export it in ascending time order (or reverse it, e.g. with `tac`) and upload it "
            "again",
        )
