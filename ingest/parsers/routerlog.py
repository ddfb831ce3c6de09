"""SGLang router logs: sgl-router and its successor, the SGLang Model Gateway (``smg``), both
in Rust, in front of the servers of a data-parallel or prefill/decode deployment.

Pure: bytes in, :class:`ParseResult` out. Two line layouts, both in the router's local time:

* tracing's, since mid-2025: ``2025-10-07 23:31:33 ERROR sglang_router_rs::core::worker:
  src/core/worker.rs:517: Failed to connect gRPC client for worker grpc://localhost:20000:
  transport error`` (targets ``sglang_router_rs::``, ``smg::``, ``smg_*``; a launcher may put
  ``[smg] `` before each line);
* the first router's: ``[Router (Rust)] 2025-03-18 14:17:58 - WARN - Removing failed worker:
  http://localhost:8001``.

A line with neither continues the record before it (a panic's message, a backtrace).

What a log yields:

* one log_span: the router was logging then, with its WARN and ERROR counts;
* each WARN or ERROR line -> log_error (a request that failed all its attempts, a worker
  removed or failing its health check, a worker it cannot reach); a line repeating an earlier
  one (the same level, target and words, numbers aside) less than a minute after it is folded
  into it with its count and last time;
* a panic (``thread 'actix-rt|system:0|arbiter:12' panicked at src/router.rs:463:40:``) ->
  log_error with the crash symptom: the router stopped serving what that thread held.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from evidence.vocabulary import EventKind, Lane, SymptomKind

from . import logclock, logprefix, repeats
from .text import decode_lines, head_text
from .timestamps import TimeError
from .types import EventRecord, ParseContext, ParseError, ParseResult

KIND_ROUTER_LOG = "sglang_router_log"

_TRACING = re.compile(
    r"(?:\[[A-Za-z][\w.-]*\] )?(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s+([A-Za-z_]\w*(?:::\w+)*): (.*)"
)
_FIRST_ROUTER = re.compile(
    r"\[Router \(Rust\)\] (\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})()"
    r" - (TRACE|DEBUG|INFO|WARN|ERROR) - ()(.*)"
)
_ROUTER_TARGETS = ("sglang_router", "smg", "sgl_model_gateway", "model_gateway")
# A router record after other text on its line: its stamp, level and a router target.
_GLUED = re.compile(
    r"(?<=\S)\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?\s+(?:TRACE|DEBUG|INFO|WARN|ERROR)\s+"
    r"(?:sglang_router|smg|sgl_model_gateway|model_gateway)"
)
_SOURCE_PREFIX = re.compile(r"[\w./-]+\.rs:\d+: ")  # tracing's file:line before the message
_PANIC = re.compile(r"thread '[^']*' panicked at ")
_TITLE_MAX = 120
_BODY_MAX_LINES = 60


def _record(line: str) -> re.Match[str] | None:
    match = _TRACING.fullmatch(line)
    if match is not None:
        return match
    return _FIRST_ROUTER.fullmatch(line)


def looks_like_router_log(name: str, head: bytes) -> bool:
    """True when one of the first lines is the router's (a router target, or the first
    router's ``[Router (Rust)]``)."""
    for line in logprefix.unwrap(head_text(head).splitlines()[:100], strict=False):
        match = _record(line.rstrip())
        if match is not None and (
            match.re is _FIRST_ROUTER or match.group(9).startswith(_ROUTER_TARGETS)
        ):
            return True
    return False


@dataclass
class _Error:
    line: int
    at: dt.datetime | None  # (always set here; repeats.Folding allows None)
    title: str
    lines: list[str]
    crash: bool = False
    repeats: int = 0
    last_at: dt.datetime | None = None
    last_line: int = 0
    omitted: int = 0
    keys: list[str] = field(default_factory=list)

    def add(self, raw: str) -> None:
        if len(self.lines) < _BODY_MAX_LINES:
            self.lines.append(raw)
        else:
            self.omitted += 1


def parse_router_log(data: bytes, ctx: ParseContext) -> ParseResult:
    """Parse an SGLang router log into its span and its failures."""
    lines = decode_lines(data, ctx.name)
    if lines and lines[-1] == "":
        lines.pop()
    lines = logprefix.unwrap(lines, ctx.name)
    clock = logclock.LogClock(ctx.tz, ctx.name)
    first: dt.datetime | None = None
    last: dt.datetime | None = None
    current: _Error | None = None  # the record the next unstamped lines continue
    errors: list[_Error] = []
    latest: dict[str, _Error] = {}  # a line's words -> the error it last started
    counts = {"WARN": 0, "ERROR": 0}
    glued_lines = 0
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip()
        match = _record(line)
        if match is None and (glued := _GLUED.search(line)) is not None:
            # A download bar redrawn without a newline before the record (the router fetches
            # its tokenizer at start: `... 7.48 MiB/7.48 MiB 37.82 MiB/s (0s)2025-09-02 ...`).
            match = _record(line[glued.start() :])
            glued_lines += match is not None
        if match is None:
            if last is not None and _PANIC.search(line):
                current = _Error(lineno, last, line.strip()[:_TITLE_MAX], [raw], crash=True)
                errors.append(current)
            elif current is not None and line.strip():
                current.add(raw)
            continue
        groups = match.groups()
        stamp = "{}-{}-{} {}:{}:{}".format(*groups[:6])
        try:
            at = clock.read(stamp, groups[:6], lineno)
        except TimeError as exc:
            raise ParseError(ctx.name, lineno, f"invalid timestamp {stamp}: {exc}") from None
        if groups[6]:
            at += dt.timedelta(microseconds=int(groups[6][:6].ljust(6, "0")))
        first = at if first is None or at < first else first
        last = at if last is None or at > last else last
        level, target, message = groups[7], groups[8], groups[9]
        current = None
        if level not in counts:
            continue
        counts[level] += 1
        words = _SOURCE_PREFIX.sub("", message, count=1).strip()
        key = repeats.key(level, target, words)
        seen = latest.get(key)
        if seen is not None and repeats.fold(seen, at, lineno):
            continue
        title = f"router {level}: {words}"[:_TITLE_MAX]
        current = _Error(lineno, at, title, [raw])
        latest[key] = current
        errors.append(current)
    if first is None or last is None:
        raise ParseError(
            ctx.name,
            1,
            "expected SGLang router log lines (YYYY-MM-DD HH:MM:SS LEVEL sglang_router_rs::...: "
            "or [Router (Rust)] YYYY-MM-DD HH:MM:SS - LEVEL - ...)",
        )
    out = ParseResult(kind=KIND_ROUTER_LOG, warnings=clock.warnings())
    if glued_lines:
        out.warnings.append(
            f"{ctx.name}: {glued_lines} records had other text before their time (a progress "
            "bar's redraw, a paste's prefix); read from their time on"
        )
    for error in errors:
        body = "\n".join(error.lines).replace("```", "` ` `")
        if error.omitted:
            body += f"\n... {error.omitted} more lines left out"
        attrs: dict[str, object] = {}
        if error.crash:
            attrs["symptom"] = SymptomKind.CRASH.value
        if error.repeats:
            body += repeats.note(error)
            attrs["repeats"] = error.repeats
        out.events.append(
            EventRecord(
                kind=EventKind.LOG_ERROR,
                lane=Lane.SERVER,
                at=error.at or first,
                ends_at=error.last_at if error.repeats else None,
                key=f"{ctx.name}:{error.line}",
                title=error.title,
                body=f"```\n{body}\n```",
                attrs=attrs,
                line=error.line,
            )
        )
    out.events.append(
        EventRecord(
            kind=EventKind.LOG_SPAN,
            lane=Lane.SERVER,
            at=first,
            ends_at=last,
            key=f"{ctx.name}:{first.isoformat()}:{last.isoformat()}",
            title=f"router log {ctx.name}",
            # A router's span says nothing of whether a server was logging: the dropped-request
            # check leaves it out (timeline.analysis).
            attrs={
                "router": True,
                "lines": len(lines),
                "warn": counts["WARN"],
                "error": counts["ERROR"],
            },
            line=1,
        )
    )
    return out
