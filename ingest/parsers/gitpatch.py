"""The config files a ``git log -p`` patch shows, as the text of each side.

Pure: the lines of one file's patch in, the old and new text of what it shows out. A repository
gives the reader every version of a config file whole (:mod:`ingest.clients.git`); a saved
``git log -p`` gives only its hunks, each side of a hunk at the line numbers git printed. Each
side is rebuilt with every line it shows at its own line number and blank lines between, so a
setting read from it names the line the repository reader would name.

- ``.env`` files are read line by line: every hunk is read (a value that refers to a variable
  set outside the hunk keeps the reference as written).
- Everything else needs what surrounds a line: a shell line's ``if``, ``case`` or function, a
  flag's command, a YAML key's parents, a Markdown line's code fence, a value that runs past
  the hunk. Such a file is read only when the patch shows it whole: a new or deleted file, or
  one hunk from line 1 to the end (fewer lines of context after the last change than the log
  shows elsewhere, as git prints at a file's end; a log saved with a large ``--unified``).
  Otherwise the file is said to be unread, not read wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .configfiles import file_kind

__all__ = [
    "LINE_KINDS",
    "WHOLE_FILES",
    "FilePatch",
    "Hunk",
    "context_lines",
    "patch_end",
    "read_file_patch",
    "sides",
]

HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FROM_RE = re.compile(r"^--- (?:a/(.+)|/dev/null)$")
_TO_RE = re.compile(r"^\+\+\+ (?:b/(.+)|/dev/null)$")
# Config kinds whose settings are each one line's, whatever surrounds it.
LINE_KINDS = frozenset({"dotenv"})
WHOLE_FILES = "git log -p --unified=100000"


@dataclass
class Hunk:
    old_start: int
    new_start: int
    old: list[str] = field(default_factory=list)  # context and removed lines, in order
    new: list[str] = field(default_factory=list)  # context and added lines, in order
    lead: int = 0  # context lines before the first change
    trail: int = 0  # context lines after the last change


@dataclass
class FilePatch:
    old_path: str | None  # None: the commit creates the file
    new_path: str | None  # None: the commit deletes it
    hunks: list[Hunk] = field(default_factory=list)
    cut: str = ""  # why the patch could not be read to its end ("" when it could)


def patch_end(lines: list[str], i: int) -> int:
    """The index of the next file's or commit's header at or after ``i``: where a patch ends."""
    while i < len(lines) and not lines[i].startswith(("diff --", "commit ")):
        i += 1
    return i


def read_file_patch(lines: list[str], start: int, old: str, new: str) -> tuple[FilePatch, int]:
    """The patch whose ``diff --git`` header is ``lines[start]`` (paths ``old`` and ``new``
    from it) and the index of the line after it (the next file's or commit's header)."""
    patch = FilePatch(old_path=old, new_path=new)
    i, n = start + 1, len(lines)
    while i < n and not lines[i].startswith(("diff --", "commit ")):
        line = lines[i]
        if m := _FROM_RE.match(line):
            patch.old_path = m.group(1)
        elif m := _TO_RE.match(line):
            patch.new_path = m.group(1)
        elif line.startswith("new file mode"):
            patch.old_path = None
        elif line.startswith("deleted file mode"):
            patch.new_path = None
        elif m := HUNK_RE.match(line):
            i = _read_hunk(lines, i, m, patch)
            if patch.cut:
                break
            continue
        i += 1
    return patch, patch_end(lines, i)  # (past i only after a cut hunk: the rest of its patch)


def _read_hunk(lines: list[str], i: int, m: re.Match[str], patch: FilePatch) -> int:
    old_left = int(m.group(2)) if m.group(2) is not None else 1
    new_left = int(m.group(4)) if m.group(4) is not None else 1
    hunk = Hunk(old_start=int(m.group(1)), new_start=int(m.group(3)))
    changed = False
    patch.hunks.append(hunk)
    header = lines[i]
    i += 1
    n = len(lines)
    while (old_left or new_left) and i < n:
        line = lines[i]
        mark, text = line[:1], line[1:]
        if mark == "\\":  # "\ No newline at end of file"
            i += 1
            continue
        if line == "" or mark == " ":  # (a blank context line some editors trimmed to "")
            if not (old_left and new_left):
                break
            hunk.old.append(text)
            hunk.new.append(text)
            old_left -= 1
            new_left -= 1
            hunk.trail += 1
            hunk.lead += not changed
        elif mark == "-" and old_left:
            hunk.old.append(text)
            old_left -= 1
            changed, hunk.trail = True, 0
        elif mark == "+" and new_left:
            hunk.new.append(text)
            new_left -= 1
            changed, hunk.trail = True, 0
        else:
            break
        i += 1
    if old_left or new_left:
        patch.cut = (
            f"its hunk {header.split(' @@')[0]} @@ ends after {len(hunk.old)} old and "
            f"{len(hunk.new)} new lines, short of what its header counts"
        )
    while i < n and lines[i].startswith("\\"):
        i += 1
    return i


def _side(hunks: list[Hunk], new: bool) -> str:
    out: list[str] = []
    for hunk in hunks:
        start = hunk.new_start if new else hunk.old_start
        body = hunk.new if new else hunk.old
        if not body:
            continue
        out.extend([""] * max(0, start - 1 - len(out)))
        out.extend(body)
    return "\n".join(out) + "\n" if out else ""


def context_lines(patches: list[FilePatch]) -> int | None:
    """How many lines of context the log was printed with (``-U``): the most any hunk shows
    before its first change when it starts below a file's first line; None when no hunk does
    (every hunk starts at line 1: small files, or a log with a large ``--unified``)."""
    leads = [h.lead for p in patches for h in p.hunks if h.old_start > 1 or h.new_start > 1]
    return max(leads) if leads else None


def _whole(patch: FilePatch, context: int | None) -> bool:
    """Whether the patch shows both sides of the file whole."""
    if patch.old_path is None or patch.new_path is None:
        return True  # created or deleted: its one side is all in the hunk
    if len(patch.hunks) != 1:
        return False
    hunk = patch.hunks[0]
    if hunk.old_start > 1 or hunk.new_start > 1:
        return False
    # git prints `context` lines after the last change unless the file ends first
    return context is None or hunk.trail < context


def sides(patch: FilePatch, context: int | None) -> tuple[str | None, str | None] | str:
    """(old text, new text) of what the patch shows (None for the side where the file does not
    exist), or why its settings cannot be read from it ("" when the patch changes none: a mode
    change, or a file renamed unchanged between config paths). ``context``: the log's
    (:func:`context_lines`)."""
    path = patch.new_path or patch.old_path or ""
    if patch.cut:
        return patch.cut
    if not patch.hunks:
        old_kind = "" if patch.old_path is None else file_kind(patch.old_path)
        new_kind = "" if patch.new_path is None else file_kind(patch.new_path)
        if bool(old_kind) == bool(new_kind):
            return ""  # a mode change, or a rename between config paths: the same settings
        return (
            "the patch shows no lines of it (a rename between a config path and another, or a "
            "binary file)"
        )
    kind = file_kind(path)
    if kind not in LINE_KINDS and not _whole(patch, context):
        first = min(h.new_start for h in patch.hunks)
        where = f"its hunks start at line {first}" if first > 1 else "its hunk stops before its end"
        return (
            f"{where}, and a {_KIND_NAMES.get(kind, kind)} setting's meaning depends on lines "
            f"the patch does not show (save the log with `{WHOLE_FILES}` to read it)"
        )
    before = None if patch.old_path is None else _side(patch.hunks, new=False)
    after = None if patch.new_path is None else _side(patch.hunks, new=True)
    return before, after


_KIND_NAMES = {
    "shell": "shell",
    "yaml": "YAML",
    "toml": "TOML",
    "json": "JSON",
    "markdown": "Markdown",
    "python": "Python",
}
