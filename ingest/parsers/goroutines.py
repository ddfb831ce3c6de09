"""Go goroutine dumps (SIGQUIT, pprof ``debug=2``) and pprof ``debug=1`` goroutine profiles
(see ``stacks.py`` for the capture time).

Pure: bytes in, one ``stack_dump`` event out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from evidence.vocabulary import EventKind, Lane

from .stacks import capture_time, code_block, dump_key
from .text import decode_lines, head_text
from .types import EventRecord, ParseContext, ParseError, ParseResult

KIND_GOROUTINES = "goroutine_dump"

_MAX_GROUP_IDS = 20

# --- goroutines ---------------------------------------------------------------------------------

_GOROUTINE_RE = re.compile(r"^goroutine (\d+)(?: [a-z]+=\S+)* \[([^\]]*)\]:\s*$")
_GO_CALL_RE = re.compile(r"^(.+?)\(([^()]*)\)$")
# A frame's file line: a tab, or spaces where a paste turned the tab into them.
_GO_FILE_RE = re.compile(r"^(?:\t| {2,})(.+):(\d+)(?: \+0x[0-9a-f]+)?(?: .*)?$")
# What the runtime printed before the stacks when the program crashed (not a SIGQUIT asked for).
_CRASH_RE = re.compile(
    r"^(?:panic: |fatal error: |unexpected fault address|SIG(?!QUIT)[A-Z]+: |"
    r"\[signal SIG[A-Z]+)"
)
# A register of the dump a signal prints after the stacks ("rax    0x0", "rflags 0x286").
_REGISTER_RE = re.compile(r"^[a-z0-9]{2,6}\s+0x[0-9a-fA-F]+\s*$")
# The runtime's own lines before a signal's stacks: "SIGQUIT: quit", "PC=0x46ee61 m=0
# sigcode=0", "signal arrived during cgo execution", the stack that follows a crash's reason.
_PREAMBLE_RE = re.compile(
    r"^(?:SIG[A-Z]+: |PC=0x|signal arrived|\[|-----$|created by |exit status )"
)
# A header cut short ("goroutine 31 [s" at the end of a truncated file).
_HEADER_START_RE = re.compile(r"^goroutine \d+\b")
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
        reason = ""
    else:
        goroutines, reason, skipped, unlisted = _read_goroutines(lines, ctx)
        before = _lines_before_dump(lines)
        if before:
            result.warnings.append(
                f"{ctx.name}: {before} line(s) before the dump (the program's own log?) are not "
                "part of it and were not read"
            )
        if unlisted:
            result.warnings.append(
                f"{ctx.name}: {unlisted} goroutine(s) after the '-----' rule were not listed "
                "above it (the threads' reports repeat listed ones): left out"
            )
        if skipped:
            result.warnings.append(
                f"{ctx.name}: {skipped} line(s) between or after the stacks are neither frames "
                "nor registers (log lines?) and were left out of the dump"
            )
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
    if reason:  # the crash first: it is what the dump is about
        title = f"{reason[:120]} ({title})"
    result.events.append(
        EventRecord(
            kind=EventKind.STACK_DUMP,
            lane=Lane.DUMPS,
            at=at,
            key=dump_key("goroutines", data, ctx),
            title=title,
            body=_goroutine_body(groups),
            attrs={
                "format": "goroutines",
                "total": total,
                "groups": groups,
                **({"crash": reason} if reason else {}),
            },
            line=first_line,
        )
    )
    return result


def _lines_before_dump(lines: list[str]) -> int:
    """The lines before the first goroutine header that are not the runtime's own preamble
    (``SIGQUIT: quit``, ``PC=...``, a crash's reason, registers): a log the dump was
    appended to, as `kubectl logs` shows a Go service's."""
    count = 0
    for line in lines:
        stripped = line.strip()
        if _GOROUTINE_RE.match(stripped):
            return count
        if stripped and not (
            _PREAMBLE_RE.match(stripped) or _CRASH_RE.match(line) or _REGISTER_RE.match(stripped)
        ):
            count += 1
    return 0  # (no header at all: the caller refuses the file)


def _read_profile(lines: list[str], ctx: ParseContext) -> list[dict[str, Any]]:
    """The groups of a ``debug=1`` profile: ``N @ 0x...`` then ``#\t0x...\tfunc+0x..\tfile:line``
    frames, biggest group first as pprof writes them."""
    groups: list[dict[str, Any]] = []
    headers = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if _PROFILE_RE.match(line):
            headers += 1
            if headers > 1:
                raise ParseError(
                    ctx.name,
                    number,
                    "a second 'goroutine profile: total N' header: a second profile starts "
                    "here; expected one profile per file (split it where the second begins)",
                )
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


def _read_goroutines(lines: list[str], ctx: ParseContext) -> tuple[list[_Goroutine], str, int, int]:
    """The goroutines, the crash the runtime reported before them ("" for none), how many
    lines after a stack were neither frames nor headers (log lines, register dumps), and how
    many goroutines after GOTRACEBACK=crash's "-----" were not listed above it."""
    goroutines: list[_Goroutine] = []
    current: _Goroutine | None = None
    pending: tuple[str, int] | None = None  # a call line waiting for its "\tfile:line"
    reason = ""
    skipped = 0
    seen: dict[int, int] = {}  # goroutine id -> its header's line
    # GOTRACEBACK=crash: after "-----" each thread reports its signal and its goroutine again
    per_thread = False
    unlisted = 0
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped == "-----" and goroutines and pending is None:
            per_thread, current = True, None
            continue
        if m := _GOROUTINE_RE.match(stripped):
            if pending is not None:
                raise _missing_file(ctx, pending)
            state, minutes = _goroutine_state(m.group(2))
            current = _Goroutine(int(m.group(1)), state, minutes, number)
            if per_thread:
                # a thread's report repeats a goroutine listed above (read, not kept); one not
                # listed there is counted (another dump joined by a rule?)
                unlisted += current.id not in seen and current.id != 0
                continue
            if current.id in seen:
                raise ParseError(
                    ctx.name,
                    number,
                    f"goroutine {current.id} again (first at line {seen[current.id]}): a second "
                    "dump starts here; expected one dump per file (split it where the second "
                    "begins)",
                )
            if current.id != 0:  # goroutine 0: a thread's system stack (GOTRACEBACK=crash)
                seen[current.id] = number
                goroutines.append(current)
            continue
        if _HEADER_START_RE.match(stripped) and not stripped.startswith("goroutine profile:"):
            raise ParseError(
                ctx.name,
                number,
                f"expected a goroutine header 'goroutine <id> [<state>]:', got {line[:80]!r} "
                "(a file cut short?)",
            )
        if current is None:
            if goroutines and not per_thread and stripped and not _REGISTER_RE.match(line):
                skipped += 1  # after a stack: a log line (registers are the dump's own)
            # The preamble ("SIGQUIT: quit", "PC=...") or log lines: not a stack. A crash's
            # own line says why the program died.
            if not reason and not goroutines and _CRASH_RE.match(line):
                reason = stripped
            continue
        if not stripped:
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
        if call_match is None and current.frames:
            # Not a call (no "(...)"): a log line or a register dump after the stack ends it.
            current = None
            skipped += not _REGISTER_RE.match(stripped)
            continue
        pending = (call_match.group(1) if call_match else stripped, number)
    if pending is not None:
        raise _missing_file(ctx, pending)
    return goroutines, reason, skipped, unlisted


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
        parts.append(f"**{group['count']} × {group['site']}**{state}\n\n" + code_block(frames))
    return "\n\n".join(parts)
