"""A server's life in its own log: each start (with the configuration it ran), when it was ready,
when it went down, crash loops, and the symptom kind of a server error.

Pure (no Django, no I/O); :mod:`ingest.parsers.serverlog` feeds it the lines it reads.

A start opens on the ``server_args=ServerArgs(...)`` line (always: every launch prints it
first), or, when the log has none (an excerpt that begins later), on uvicorn's
``Started server process [pid]`` or on ``The server is fired up and ready to roll!`` when no
start is open to take them. A start closes at its first shutdown line (``Received sigquit``,
uvicorn's ``Shutting down`` / ``Finished server process``, ``Gracefully exiting``, a shell's
``Killed``); one never seen to close ends at the last line logged before the next start, or at
the end of the log.

Each start is one ``server_start`` event keyed by its moment and a digest of its configuration,
not by the file: the same start read from two files (the full log and an excerpt of it) is one
event, and re-reading the same bytes adds nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from evidence.vocabulary import EventKind, Lane, ServerStartAttrs, SymptomKind

from .types import EventRecord

READY = "The server is fired up and ready to roll!"
_STARTED = "Started server process ["
_STARTED_RE = re.compile(r"Started server process \[(\d+)\]")
# Shutdown lines, by words cheap to look for first (most lines have none of them).
_SHUTDOWN_WORDS = (
    "sigquit",
    "SIGQUIT",
    "SIGTERM",
    "Gracefully exiting",
    "Shutting down",
    "Finished server process",
)
_SHUTDOWN_RE = re.compile(
    r"Received sigquit|SIGQUIT received|Received SIGTERM|SIGTERM received|Gracefully exiting"
    r"|^(?:INFO:\s+)?Shutting down\s*$|Finished server process \[\d+\]"
)
# A crash loop: at least this many starts, each within LOOP_GAP of the one before.
LOOP_STARTS = 3
LOOP_GAP = dt.timedelta(minutes=10)
_ARGS_SHOWN = 400  # fields listed in an event's body (a ServerArgs line has ~350 today)

_OOM_RE = re.compile(
    r"OutOfMemoryError|(?:CUDA|HIP) out of memory|CUDA error: out of memory|Not enough memory"
)
# SGLang's own watchdog, and NCCL's (torch's ProcessGroupNCCL) on a collective that hung.
_WATCHDOG_RE = re.compile(r"[Ww]atchdog timeout|[Ww]atchdog caught collective operation timeout")
# A process that died: SGLang's words for it, and what the interpreter, the C++ runtime and
# torch's NCCL watchdog print on their way down, outside SGLang's logger.
_CRASH_RE = re.compile(
    r"hit an exception|Received sigquit|SIGQUIT received|Exception in ModelTpServer"
    r"|Traceback \(most recent call last\)|Fatal Python error|Segmentation fault"
    r"|terminate called after throwing|Caught signal \d+|watchdog thread terminated with exception"
)
# Errors of one request, not of the server: a traceback under these is no crash.
_REQUEST_ERROR_RE = re.compile(r"Exception in ASGI application|Error in request|Abort request")


def symptom_of(lines: Sequence[str], context: str = "") -> SymptomKind | None:
    """The symptom an error record shows: an OOM, a watchdog timeout, a crash (a process hit an
    exception, a child's SIGQUIT, a traceback), or None for an error that is none of them (a
    traceback under one request, e.g. uvicorn's ``Exception in ASGI application``; ``context``
    is the line before a traceback that carries no time of its own)."""
    text = "\n".join(lines)
    if _OOM_RE.search(text):
        return SymptomKind.OOM
    if _WATCHDOG_RE.search(text):
        return SymptomKind.WATCHDOG_TIMEOUT
    head = f"{context}\n{lines[0] if lines else ''}"
    if _CRASH_RE.search(text) and not _REQUEST_ERROR_RE.search(head):
        return SymptomKind.CRASH
    return None


@dataclass
class Start:
    line: int
    at: dt.datetime | None  # None: before the first timestamped line (the log's first time)
    server_args: dict[str, str]
    pid: int | None = None
    ready_at: dt.datetime | None = None
    shutdown_at: dt.datetime | None = None
    shutdown_line: int = 0
    shutdown_text: str = ""
    last_seen: dt.datetime | None = None

    @property
    def open(self) -> bool:
        return self.shutdown_line == 0


class Lifecycle:
    """The starts of one log, fed line by line (``at`` None: the line carries no time)."""

    def __init__(self) -> None:
        self.starts: list[Start] = []

    @property
    def current(self) -> Start | None:
        return self.starts[-1] if self.starts else None

    def seen(self, at: dt.datetime) -> None:
        """A timestamped line: the current start was still logging then."""
        start = self.current
        if start is not None:
            if start.at is None:
                start.at = at
            if start.last_seen is None or at > start.last_seen:
                start.last_seen = at

    def server_args(self, at: dt.datetime | None, line: int, fields: dict[str, str]) -> None:
        self.starts.append(Start(line=line, at=at, server_args=fields, last_seen=at))

    def message(self, at: dt.datetime | None, line: int, text: str) -> None:
        """Any other line (its message after the ``[time]``, or a line without one)."""
        stripped = text.strip()
        started = _STARTED_RE.search(stripped) if _STARTED in stripped else None
        if started is not None:
            start = self.current
            if start is None or not start.open or start.pid is not None:
                start = self._open(at, line)
            start.pid = int(started.group(1))
            return
        if READY in stripped:
            start = self.current
            if start is None or not start.open or start.ready_at is not None:
                start = self._open(at, line)
            start.ready_at = at or start.at
            return
        if stripped == "Killed" or (
            any(word in stripped for word in _SHUTDOWN_WORDS) and _SHUTDOWN_RE.search(stripped)
        ):
            start = self.current
            if start is not None and start.open:
                start.shutdown_at = at or start.last_seen
                start.shutdown_line = line
                start.shutdown_text = stripped[:200]

    def _open(self, at: dt.datetime | None, line: int) -> Start:
        start = Start(line=line, at=at, server_args={}, last_seen=at)
        self.starts.append(start)
        return start

    # --- results ---------------------------------------------------------------------------

    def events(self, first: dt.datetime, last: dt.datetime) -> list[EventRecord]:
        """One server_start event per start, then one error event per crash loop."""
        out: list[EventRecord] = []
        keys: dict[str, int] = {}
        for i, start in enumerate(self.starts):
            at = start.at or first
            following = self.starts[i + 1] if i + 1 < len(self.starts) else None
            ends = start.shutdown_at or start.last_seen or at
            if following is None and start.shutdown_at is None:
                ends = last
            key = _start_key(at, start)
            keys[key] = keys.get(key, 0) + 1
            if keys[key] > 1:  # two starts in one second with the same configuration
                key = f"{key}#{keys[key]}"
            out.append(_start_event(start, at, max(ends, at), key))
        out.extend(self._crash_loops(first))
        return out

    def _crash_loops(self, first: dt.datetime) -> list[EventRecord]:
        return crash_loops(
            [
                SeenStart(
                    at=s.at or first,
                    where=f"line {s.line}",
                    down=(f"line {s.shutdown_line}: `{s.shutdown_text}`" if not s.open else ""),
                    line=s.line,
                )
                for s in self.starts
            ]
        )


@dataclass(frozen=True)
class SeenStart:
    """A start as a crash loop needs it: when, where it was logged, how it went down (``""``:
    not seen to)."""

    at: dt.datetime
    where: str  # "line 12" in one log, "server-2.log:12" across files
    down: str = ""
    line: int = 0


def crash_loops(starts: Sequence[SeenStart]) -> list[EventRecord]:
    """One log_error event (symptom crash_loop) per run of at least LOOP_STARTS starts, each
    within LOOP_GAP of the one before, at the start that makes the run a loop. Keyed by the
    run's first start only: the same loop read again (a longer copy, the same starts across
    files) is the same event."""
    ordered = sorted(starts, key=lambda s: s.at)
    loops: list[EventRecord] = []
    run: list[SeenStart] = ordered[:1]
    for i in range(1, len(ordered) + 1):
        if i < len(ordered) and ordered[i].at - ordered[i - 1].at <= LOOP_GAP:
            run.append(ordered[i])
            continue
        if len(run) >= LOOP_STARTS:
            begin, end = run[0].at, run[-1].at
            minutes = max(1, round((end - begin).total_seconds() / 60))
            loops.append(
                EventRecord(
                    kind=EventKind.LOG_ERROR,
                    lane=Lane.SERVER,
                    at=run[LOOP_STARTS - 1].at,
                    ends_at=end,
                    key=f"crash_loop:{begin.isoformat()}",
                    title=f"Crash loop: {len(run)} starts in {minutes} min",
                    body="\n".join(
                        f"- start at {s.where} ({s.at.isoformat()})"
                        + (f", down at {s.down}" if s.down else "")
                        for s in run
                    ),
                    attrs={
                        "symptom": SymptomKind.CRASH_LOOP.value,
                        "starts": len(run),
                        "went_down": sum(1 for s in run if s.down),
                    },
                    line=run[0].line,
                )
            )
        if i < len(ordered):
            run = [ordered[i]]
    return loops


def _start_key(at: dt.datetime, start: Start) -> str:
    text = "\x1f".join(f"{k}={v}" for k, v in start.server_args.items())
    digest = hashlib.sha256(text.encode()).hexdigest()[:16] if start.server_args else "-"
    return f"{at.isoformat()}\x1f{digest}"


def _start_event(start: Start, at: dt.datetime, ends: dt.datetime, key: str) -> EventRecord:
    count = len(start.server_args)
    who = f"Server start (pid {start.pid})" if start.pid is not None else "Server start"
    title = f"{who}: {count} args" if count else f"{who}: no ServerArgs line"
    attrs: ServerStartAttrs = {
        "line": start.line,
        "server_args": dict(start.server_args),
        "ready_at": start.ready_at.isoformat() if start.ready_at else None,
        "shutdown_at": start.shutdown_at.isoformat() if start.shutdown_at else None,
        "pid": start.pid,
    }
    body = [f"Started at line {start.line}."]
    if start.ready_at is not None:
        body.append(f"Ready (`{READY}`) at {start.ready_at.isoformat()}.")
    if not start.open:
        body.append(f"Down at line {start.shutdown_line}: `{start.shutdown_text}`.")
    if count:
        shown = list(start.server_args.items())[:_ARGS_SHOWN]
        listing = "\n".join(f"{k}={v}" for k, v in shown).replace("```", "` ` `")
        body += ["", f"ServerArgs ({count} fields, values as logged):", "", "```", listing, "```"]
    else:
        body += ["", "The log has no ServerArgs line for this start: its configuration is unknown."]
    return EventRecord(
        kind=EventKind.SERVER_START,
        lane=Lane.LIVE_CONFIG,
        at=at,
        ends_at=ends,
        key=key,
        title=title,
        body="\n".join(body),
        attrs=dict(attrs),
        line=start.line,
    )
