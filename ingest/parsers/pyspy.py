"""py-spy stack dumps: ``py-spy dump`` text and ``--json`` (see ``stacks.py`` for the capture time).

Pure: bytes in, one ``stack_dump`` event out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from evidence.vocabulary import EventKind, Lane

from . import jsontext
from .stacks import capture_time, code_block, dump_key
from .text import decode, decode_lines, head_text
from .types import EventRecord, ParseContext, ParseError, ParseResult

KIND_PYSPY = "pyspy_dump"

_LOCAL_MAX = 200
_PARENS_LINE_MAX = 2_000  # the fallback frame pattern backtracks on long lines of " ("

# --- py-spy -------------------------------------------------------------------------------------

_PROCESS_RE = re.compile(r"^Process (\d+): ?(.*)$")
_PYTHON_RE = re.compile(r"^Python v(\S+)(?: \((.*)\))?$")
_THREAD_RE = re.compile(r'^Thread (0x[0-9A-Fa-f]+|\d+) \(([^)]*)\)(?:: "(.*)")?\s*$')
_FRAME_RE = re.compile(r"^(\s+)(.+?) \(([^()]*?)(?::(\d+))?\)\s*$")
# A file whose name holds parentheses ("report (1).py"): tried when the above fails (it keeps
# a C++ frame's own parentheses, "std::function<void (int)>::operator()", in the function).
_FRAME_PARENS_RE = re.compile(r"^(\s+)(\S[^(]*?) \((.*?)(?::(\d+))?\)\s*$")
# --subprocesses: a rule between processes, each child's parent, py-spy's failure on one.
_SEPARATOR_RE = re.compile(r"^-{20,}\s*$")
_PARENT_RE = re.compile(r"^Parent Process (\d+): ?(.*)$")
_FAILED_RE = re.compile(r"^Error: (.+)$")


_LOCALS_RE = re.compile(r"^\s+(?:(?:Arguments|Locals):\s*$|\S+: )")  # --locals' lines


def starts_dump(line: str) -> bool:
    """Whether ``line`` is py-spy's ``Process <pid>: ...`` header (a dump printed into a log
    starts there: ingest.parsers.serverlog)."""
    return _PROCESS_RE.match(line) is not None


def in_dump(line: str) -> bool:
    """Whether ``line`` can be part of a dump: a blank line, a header, a thread, a frame, a
    --locals line, or --subprocesses' rules, parents and failures."""
    if not line.strip():
        return True
    if line[0].isspace():
        return bool(
            _FRAME_RE.match(line)
            or (len(line) <= _PARENS_LINE_MAX and _FRAME_PARENS_RE.match(line))
            or _LOCALS_RE.match(line)
        )
    return any(
        pattern.match(line)
        for pattern in (
            _PROCESS_RE,
            _PYTHON_RE,
            _THREAD_RE,
            _PARENT_RE,
            _SEPARATOR_RE,
            _FAILED_RE,
        )
    )


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
    # A command line may go on over lines (python -c "...") until "Python v": held until then.
    command_open = False
    command_more: list[tuple[int, str]] = []
    failed: str | None = None  # py-spy's error on one process: skipped to the next rule
    failures: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if _SEPARATOR_RE.match(line):
            command_open, failed = False, None
            continue
        if m := _PROCESS_RE.match(line):
            pid = int(m.group(1))
            if any(p == pid for p, _, _ in processes):
                raise ParseError(
                    ctx.name,
                    number,
                    f"a second dump of process {pid} starts here: expected one dump per file "
                    "(split the file where each 'Process' header starts)",
                )
            processes.append((pid, m.group(2).strip(), ""))
            command_open, failed = True, None
            continue
        if failed is not None:
            continue  # py-spy's backtrace of its own failure
        if processes and (m := _FAILED_RE.match(line)):
            failed = m.group(1).strip()
            failures.append(f"line {number}: {failed[:120]}")
            continue
        if processes and _PARENT_RE.match(line):
            continue  # each thread records its own pid; the first process is the parent
        if command_open and processes and not _PYTHON_RE.match(line):
            if not line.startswith("Thread "):
                command_more.append((number, line.strip()))
                continue
            command_open = False
        if command_more and not _PYTHON_RE.match(line):
            # What followed the header was no command line: "Python v..." never came.
            first, text = command_more[0]
            raise ParseError(
                ctx.name,
                first,
                f"expected 'Python v<version>' or 'Thread ...' after the 'Process' header, "
                f"found {text[:80]!r}",
            )
        if not processes:
            raise ParseError(
                ctx.name,
                number,
                f"expected py-spy's 'Process <pid>: <command line>' header, found {line[:80]!r}",
            )
        if m := _PYTHON_RE.match(line):
            pid, cmdline, _ = processes[-1]
            cmdline = " ".join([cmdline, *(text for _, text in command_more)]).strip()
            processes[-1] = (pid, cmdline, m.group(1))
            command_open, command_more = False, []
            continue
        if m := _THREAD_RE.match(line):
            command_open = False
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
        fm = _FRAME_RE.match(line) or (
            _FRAME_PARENS_RE.match(line) if len(line) <= _PARENS_LINE_MAX else None
        )
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
    if command_more:
        first, text = command_more[0]
        raise ParseError(
            ctx.name,
            first,
            f"expected 'Python v<version>' after the 'Process' header, found {text[:80]!r}",
        )
    if not threads:
        why = f" (py-spy: {failures[0]})" if failures else ""
        raise ParseError(
            ctx.name, 0, f"expected at least one 'Thread <id> (state)' in the dump{why}"
        )
    result = _pyspy_result(data, ctx, processes, threads)
    if failures:
        result.warnings.append(
            f"{ctx.name}: py-spy could not read {len(failures)} process(es) of the dump "
            f"({'; '.join(failures[:3])}); the others' threads are kept"
        )
    return result


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
            key=dump_key("py-spy", data, ctx),
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
        doc = jsontext.loads(decode(data, ctx.name), ctx.name)
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
        parts.append(title + ("\n\n" + code_block(frames) if frames else ""))
    return "\n\n".join(parts)
