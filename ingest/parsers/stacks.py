"""Stack dumps: ``py-spy dump`` text and ``--json``, Go goroutine dumps (SIGQUIT, pprof
``debug=2``) and pprof ``debug=1`` goroutine profiles.

Pure: bytes in, one ``stack_dump`` event out. No format records when it was taken, so the
capture time comes from a timestamp in the file name, else from ``ctx.default_time``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from evidence.vocabulary import EventKind, Lane

from .text import decode, decode_lines, head_text
from .timestamps import LocalTimeError, TimeError, default_time, parse_offset, wall_clock
from .types import (
    EventRecord,
    ParseContext,
    ParseError,
    ParseResult,
)

KIND_PYSPY = "pyspy_dump"
KIND_GOROUTINES = "goroutine_dump"

_MAX_GROUP_IDS = 20
_LOCAL_MAX = 200

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


def _dump_key(fmt: str, data: bytes, ctx: ParseContext) -> str:
    return f"{fmt}:{ctx.name}:{hashlib.sha256(data).hexdigest()[:16]}"


def _code_block(lines: list[str]) -> str:
    fence = "````" if any("```" in ln for ln in lines) else "```"
    return f"{fence}\n" + "\n".join(lines) + f"\n{fence}"


# --- py-spy -------------------------------------------------------------------------------------

_PROCESS_RE = re.compile(r"^Process (\d+): ?(.*)$")
_PYTHON_RE = re.compile(r"^Python v(\S+)(?: \((.*)\))?$")
_THREAD_RE = re.compile(r'^Thread (0x[0-9A-Fa-f]+|\d+) \(([^)]*)\)(?:: "(.*)")?\s*$')
_FRAME_RE = re.compile(r"^(\s+)(.+?) \(([^()]*?)(?::(\d+))?\)\s*$")


def looks_like_pyspy(name: str, head: bytes) -> bool:
    """True when ``head`` starts with py-spy's ``Process <pid>: ...`` header, or is the JSON
    array ``py-spy dump --json`` writes (threads with ``thread_id`` and ``frames``)."""
    text = head_text(head).lstrip(" \t\r\n")
    if text.startswith("["):
        return '"thread_id"' in text and '"frames"' in text
    first, _, rest = text.partition("\n")
    if not _PROCESS_RE.match(first.rstrip("\r")):
        return False
    return "Python v" in rest or "\nThread " in "\n" + rest


@dataclass
class _Thread:
    id: str
    state: str
    name: str
    pid: int
    line: int
    frames: list[dict[str, Any]] = field(default_factory=list)

    def as_attrs(self, with_pid: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "state": self.state,
            "name": self.name,
            "frames": self.frames,
        }
        if with_pid:
            out["pid"] = self.pid
        return out


def parse_pyspy(data: bytes, ctx: ParseContext) -> ParseResult:
    """``py-spy dump --pid N`` text (``--locals`` too) or ``--json`` as one ``stack_dump``
    event."""
    if data.lstrip()[:1] == b"[":
        return _parse_pyspy_json(data, ctx)
    lines = decode_lines(data, ctx.name)
    processes: list[tuple[int, str, str]] = []  # pid, cmdline, python
    threads: list[_Thread] = []
    frame_indent: int | None = None
    block: str | None = None  # "Arguments" / "Locals" while reading a --locals block
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if m := _PROCESS_RE.match(line):
            processes.append((int(m.group(1)), m.group(2).strip(), ""))
            continue
        if not processes:
            raise ParseError(
                ctx.name,
                number,
                f"expected py-spy's 'Process <pid>: <command line>' header, found {line[:80]!r}",
            )
        if m := _PYTHON_RE.match(line):
            pid, cmdline, _ = processes[-1]
            processes[-1] = (pid, cmdline, m.group(1))
            continue
        if m := _THREAD_RE.match(line):
            threads.append(
                _Thread(
                    id=m.group(1),
                    state=m.group(2),
                    name=m.group(3) or "",
                    pid=processes[-1][0],
                    line=number,
                )
            )
            frame_indent, block = None, None
            continue
        indent = len(line) - len(line.lstrip())
        if not threads or indent == 0:
            raise ParseError(
                ctx.name,
                number,
                "expected 'Thread 0x7F... (state): \"name\"' or an indented frame "
                f"'function (file.py:123)', found {line[:80]!r}",
            )
        thread = threads[-1]
        stripped = line.strip()
        if frame_indent is not None and indent > frame_indent and thread.frames:
            if stripped in ("Arguments:", "Locals:"):
                block = stripped[:-1].lower()
                continue
            if block is not None:
                var, sep, value = stripped.partition(": ")
                if not sep and stripped.endswith(":"):
                    var, sep, value = stripped[:-1], ":", ""
                if sep:
                    values = thread.frames[-1].setdefault(block, {})
                    values[var] = value if len(value) <= _LOCAL_MAX else value[:_LOCAL_MAX] + "…"
                    continue
            raise ParseError(
                ctx.name,
                number,
                f"expected 'Arguments:', 'Locals:' or 'name: value' under a frame, "
                f"found {stripped[:80]!r}",
            )
        fm = _FRAME_RE.match(line)
        if not fm:
            raise ParseError(
                ctx.name,
                number,
                f"expected a frame 'function (file.py:123)', found {stripped[:80]!r}",
            )
        frame_indent, block = len(fm.group(1)), None
        thread.frames.append(
            {
                "func": fm.group(2).strip(),
                "file": fm.group(3),
                "line": int(fm.group(4)) if fm.group(4) else None,
            }
        )
    if not processes:
        raise ParseError(ctx.name, 0, "expected py-spy's 'Process <pid>: <command line>' header")
    return _pyspy_result(data, ctx, processes, threads)


def _pyspy_result(
    data: bytes, ctx: ParseContext, processes: list[tuple[int, str, str]], threads: list[_Thread]
) -> ParseResult:
    at = capture_time(ctx)
    pid, cmdline, python = processes[0]
    label = _process_label(cmdline) if cmdline else "process"
    active = sum(1 for t in threads if "active" in t.state)
    result = ParseResult(kind=KIND_PYSPY)
    if len(processes) > 1:
        result.warnings.append(
            f"{ctx.name}: the dump holds {len(processes)} processes; the event is titled after "
            f"pid {pid} and each thread records its pid"
        )
    plural = "s" if len(threads) != 1 else ""
    result.events.append(
        EventRecord(
            kind=EventKind.STACK_DUMP,
            lane=Lane.DUMPS,
            at=at,
            key=_dump_key("py-spy", data, ctx),
            title=f"py-spy dump of {label} (pid {pid}): {len(threads)} thread{plural}, "
            f"{active} active",
            body=_pyspy_body(cmdline, python, threads),
            attrs={
                "format": "py-spy",
                "pid": pid,
                "cmdline": cmdline,
                "python": python,
                "threads": [t.as_attrs(len(processes) > 1) for t in threads],
            },
            line=1,
        )
    )
    return result


def _parse_pyspy_json(data: bytes, ctx: ParseContext) -> ParseResult:
    """``py-spy dump --pid N --json``: a list of threads, each with ``pid``, ``thread_id``
    (``os_thread_id``), ``thread_name``, ``active``, ``owns_gil`` and ``frames`` (``name``,
    ``filename``, ``short_filename``, ``line``, ``locals``). It names no command line or Python
    version."""
    try:
        doc = json.loads(decode(data, ctx.name))
    except json.JSONDecodeError as exc:
        raise ParseError(ctx.name, exc.lineno, f"py-spy --json: invalid JSON: {exc.msg}") from None
    if not isinstance(doc, list):
        raise ParseError(ctx.name, 1, "expected py-spy --json's list of threads")
    processes: list[tuple[int, str, str]] = []
    threads: list[_Thread] = []
    for i, item in enumerate(doc):
        where = f"py-spy --json thread [{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("frames"), list):
            raise ParseError(ctx.name, 0, f"{where}: expected an object with a 'frames' list")
        pid = item.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool):
            raise ParseError(ctx.name, 0, f"{where}: expected an integer 'pid', got {pid!r}")
        if not any(p[0] == pid for p in processes):
            processes.append((pid, "", ""))
        active = bool(item.get("active"))
        state = ("active+gil" if item.get("owns_gil") else "active") if active else "idle"
        tid = item.get("os_thread_id") or item.get("thread_id")
        thread = _Thread(
            id=str(tid),
            state=state,
            name=str(item.get("thread_name") or ""),
            pid=pid,
            line=0,
        )
        for j, frame in enumerate(item["frames"]):
            if not isinstance(frame, dict) or not isinstance(frame.get("name"), str):
                raise ParseError(ctx.name, 0, f"{where}.frames[{j}]: expected a 'name'")
            line = frame.get("line")
            entry: dict[str, Any] = {
                "func": frame["name"],
                "file": str(frame.get("short_filename") or frame.get("filename") or ""),
                "line": line if isinstance(line, int) and not isinstance(line, bool) else None,
            }
            local_values = frame.get("locals")
            if isinstance(local_values, list):
                entry["locals"] = {
                    str(v.get("name")): str(v.get("repr"))[:_LOCAL_MAX]
                    for v in local_values
                    if isinstance(v, dict)
                }
            thread.frames.append(entry)
        threads.append(thread)
    if not processes:
        raise ParseError(ctx.name, 1, "py-spy --json: the list holds no thread")
    # Text dumps list the main thread first; --json lists it last: keep one order.
    threads.sort(key=lambda t: t.name != "MainThread")
    return _pyspy_result(data, ctx, processes, threads)


def _process_label(cmdline: str) -> str:
    """A short name for a process: ``sglang::scheduler`` -> scheduler, ``-m pkg.mod`` -> mod."""
    parts = cmdline.split()
    if not parts:
        return "process"
    first = parts[0]
    if "::" in first:
        return first.rsplit("::", 1)[-1] or first
    base = first.rsplit("/", 1)[-1]
    if base.startswith("python") and len(parts) > 1:
        if parts[1] == "-m" and len(parts) > 2:
            return parts[2].rsplit(".", 1)[-1]
        if not parts[1].startswith("-"):
            return parts[1].rsplit("/", 1)[-1]
    return base


def _pyspy_body(cmdline: str, python: str, threads: list[_Thread]) -> str:
    parts = [f"`{cmdline}`" + (f" on Python {python}" if python else "")]
    for t in threads:
        title = f"**Thread {t.id}** ({t.state})" + (f" “{t.name}”" if t.name else "")
        frames = [
            f"{f['func']} ({f['file']}:{f['line']})" if f["line"] is not None else f["func"]
            for f in t.frames
        ]
        parts.append(title + ("\n\n" + _code_block(frames) if frames else ""))
    return "\n\n".join(parts)


# --- goroutines ---------------------------------------------------------------------------------

_GOROUTINE_RE = re.compile(r"^goroutine (\d+)(?: [a-z]+=\S+)* \[([^\]]*)\]:\s*$")
_GO_CALL_RE = re.compile(r"^(.+?)\(([^()]*)\)$")
_GO_FILE_RE = re.compile(r"^\t(.+):(\d+)(?: \+0x[0-9a-f]+)?(?: .*)?$")
_CREATED_RE = re.compile(r"^created by (.+?)(?: in goroutine \d+)?$")
_MINUTES_RE = re.compile(r"^(\d+) minutes?$")


_PROFILE_RE = re.compile(r"^goroutine profile: total (\d+)\s*$")
_PROFILE_GROUP_RE = re.compile(r"^(\d+) @(?: 0x[0-9a-f]+)+\s*$")
_PROFILE_FRAME_RE = re.compile(r"^#\s+0x[0-9a-f]+\s+(\S+?)(?:\+0x[0-9a-f]+)?\s+(.+):(\d+)\s*$")


def looks_like_goroutines(name: str, head: bytes) -> bool:
    """True when ``head`` holds a ``goroutine N [state]:`` header, or starts a pprof
    ``debug=1`` profile (``goroutine profile: total N``)."""
    text = head_text(head)
    if _PROFILE_RE.match(text.lstrip().split("\n", 1)[0].rstrip("\r")):
        return True
    return any(_GOROUTINE_RE.match(ln.rstrip("\r")) for ln in text.split("\n"))


@dataclass
class _Goroutine:
    id: int
    state: str
    minutes: int | None
    line: int
    frames: list[dict[str, Any]] = field(default_factory=list)
    created_by: str = ""


def parse_goroutines(data: bytes, ctx: ParseContext) -> ParseResult:
    """A Go goroutine dump (SIGQUIT or ``debug=2``), grouped by identical stacks; or a pprof
    ``debug=1`` profile, whose groups pprof made (no states or wait times in it)."""
    lines = decode_lines(data, ctx.name)
    result = ParseResult(kind=KIND_GOROUTINES)
    first = next((ln for ln in lines if ln.strip()), "")
    if profile := _PROFILE_RE.match(first):
        groups = _read_profile(lines, ctx)
        total = int(profile.group(1))
        counted = sum(g["count"] for g in groups)
        if counted != total:
            result.warnings.append(
                f"{ctx.name}: the profile says total {total} but its groups count {counted}"
            )
        what, first_line = "goroutine profile", 1
    else:
        goroutines = _read_goroutines(lines, ctx)
        if not goroutines:
            raise ParseError(
                ctx.name, 0, "expected at least one 'goroutine <id> [<state>]:' header in the dump"
            )
        groups = _group(goroutines)
        total = len(goroutines)
        what, first_line = "goroutine dump", goroutines[0].line
    at = capture_time(ctx)
    top = groups[0]
    state = f" [{top['state']}]" if top["state"] else ""
    title = (
        f"{what}: {total} goroutine{'s' if total != 1 else ''}, "
        f"{top['count']} in {top['site']}{state}"
    )
    result.events.append(
        EventRecord(
            kind=EventKind.STACK_DUMP,
            lane=Lane.DUMPS,
            at=at,
            key=_dump_key("goroutines", data, ctx),
            title=title,
            body=_goroutine_body(groups),
            attrs={"format": "goroutines", "total": total, "groups": groups},
            line=first_line,
        )
    )
    return result


def _read_profile(lines: list[str], ctx: ParseContext) -> list[dict[str, Any]]:
    """The groups of a ``debug=1`` profile: ``N @ 0x...`` then ``#\t0x...\tfunc+0x..\tfile:line``
    frames, biggest group first as pprof writes them."""
    groups: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or _PROFILE_RE.match(line):
            continue
        if m := _PROFILE_GROUP_RE.match(line):
            groups.append(
                {
                    "count": int(m.group(1)),
                    "state": "",
                    "wait_minutes_max": None,
                    "site": "",
                    "frames": [],
                    "created_by": "",
                    "ids": [],
                }
            )
            continue
        if line.startswith("#") and groups:
            fm = _PROFILE_FRAME_RE.match(line)
            if fm is None:
                if line.startswith("# labels:"):
                    continue
                raise ParseError(
                    ctx.name, number, f"expected '#\t0x...\tfunc+0x..\tfile.go:123', got {line!r}"
                )
            groups[-1]["frames"].append(
                {"func": fm.group(1), "file": fm.group(2), "line": int(fm.group(3))}
            )
            continue
        raise ParseError(
            ctx.name, number, f"expected a goroutine group 'N @ 0x...' or its frames, got {line!r}"
        )
    if not groups:
        raise ParseError(ctx.name, 0, "expected at least one 'N @ 0x...' group in the profile")
    for group in groups:
        group["site"] = _site(group["frames"])
    return sorted(groups, key=lambda grp: -grp["count"])


def _read_goroutines(lines: list[str], ctx: ParseContext) -> list[_Goroutine]:
    goroutines: list[_Goroutine] = []
    current: _Goroutine | None = None
    pending: tuple[str, int] | None = None  # a call line waiting for its "\tfile:line"
    for number, line in enumerate(lines, start=1):
        if m := _GOROUTINE_RE.match(line):
            if pending is not None:
                raise _missing_file(ctx, pending)
            state, minutes = _goroutine_state(m.group(2))
            current = _Goroutine(int(m.group(1)), state, minutes, number)
            goroutines.append(current)
            continue
        if current is None:
            continue  # SIGQUIT preamble ("SIGQUIT: quit", "PC=...") is not a stack
        if not line.strip():
            if pending is not None:
                raise _missing_file(ctx, pending)
            current = None  # a blank line ends the goroutine; register dumps may follow
            continue
        if pending is not None:
            fm = _GO_FILE_RE.match(line)
            if not fm:
                raise _missing_file(ctx, pending)
            call, _ = pending
            frame = {"func": call, "file": fm.group(1), "line": int(fm.group(2))}
            if call.startswith("created by "):
                current.created_by = call.removeprefix("created by ")
            else:
                current.frames.append(frame)
            pending = None
            continue
        stripped = line.strip()
        if stripped.startswith("...") or stripped.endswith("stack unavailable"):
            continue  # "...additional frames elided...", "goroutine running on other thread"
        if cm := _CREATED_RE.match(stripped):
            pending = (f"created by {cm.group(1)}", number)
            continue
        if line.startswith("\t"):
            raise ParseError(
                ctx.name, number, f"expected a call line 'pkg.func(...)', found {stripped[:80]!r}"
            )
        call_match = _GO_CALL_RE.match(stripped)
        pending = (call_match.group(1) if call_match else stripped, number)
    if pending is not None:
        raise _missing_file(ctx, pending)
    return goroutines


def _missing_file(ctx: ParseContext, pending: tuple[str, int]) -> ParseError:
    call, number = pending
    return ParseError(
        ctx.name,
        number + 1,
        f"expected a '\\t/path/file.go:123 +0x1d' line after {call[:80]!r}",
    )


def _goroutine_state(bracket: str) -> tuple[str, int | None]:
    parts = [p.strip() for p in bracket.split(",")]
    minutes: int | None = None
    kept: list[str] = []
    for part in parts:
        m = _MINUTES_RE.match(part)
        if m:
            minutes = int(m.group(1))
        elif part and part != "locked to thread":
            kept.append(part)
    return (kept[0] if kept else "unknown"), minutes


def _site(frames: list[dict[str, Any]]) -> str:
    # The runtime frames on top (gopark, selectgo) say nothing about where the program waits.
    for frame in frames:
        func = str(frame["func"])
        if not func.startswith(("runtime.", "internal/")):
            return func
    return str(frames[0]["func"]) if frames else "(no frames)"


def _group(goroutines: list[_Goroutine]) -> list[dict[str, Any]]:
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for g in goroutines:
        signature = (
            g.state,
            tuple((f["func"], f["file"], f["line"]) for f in g.frames),
            g.created_by,
        )
        group = groups.get(signature)
        if group is None:
            group = {
                "count": 0,
                "state": g.state,
                "wait_minutes_max": None,
                "site": _site(g.frames),
                "frames": g.frames,
                "created_by": g.created_by,
                "ids": [],
            }
            groups[signature] = group
        group["count"] += 1
        if g.minutes is not None and (
            group["wait_minutes_max"] is None or g.minutes > group["wait_minutes_max"]
        ):
            group["wait_minutes_max"] = g.minutes
        if len(group["ids"]) < _MAX_GROUP_IDS:
            group["ids"].append(g.id)
    return sorted(groups.values(), key=lambda grp: (-grp["count"], grp["ids"][0]))


def _goroutine_body(groups: list[dict[str, Any]]) -> str:
    parts = []
    for group in groups:
        wait = f", up to {group['wait_minutes_max']} min" if group["wait_minutes_max"] else ""
        frames = [f"{f['func']}  {f['file']}:{f['line']}" for f in group["frames"]]
        state = f" [{group['state']}{wait}]" if group["state"] else ""
        parts.append(f"**{group['count']} × {group['site']}**{state}\n\n" + _code_block(frames))
    return "\n\n".join(parts)
