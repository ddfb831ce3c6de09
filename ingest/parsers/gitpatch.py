"""The config files a ``git log -p`` patch shows, as the text of each side.

Pure: the lines of one file's patch in, the old and new text of what it shows out. A repository
gives the reader every version of a config file whole (:mod:`ingest.clients.git`); a saved
``git log -p`` gives only its hunks, each side of a hunk at the line numbers git printed. Each
side is rebuilt with every line it shows at its own line number and blank lines between, so a
setting read from it names the line the repository reader would name, and the two sides diff
as the whole files would wherever the hunks carry what a setting needs:

- ``.env`` files and shell scripts are read line by line: every hunk is read. A flag on a line
  whose command starts above the hunk's context cannot be read; such lines are counted and said
  (``unread``), with the option that shows whole files (``--unified=100000``).
- YAML, TOML, JSON and Markdown need what surrounds a line (its parent keys, its code fence):
  they are read only when every hunk starts at the file's first line (a new or deleted file, a
  small file, or a log saved with a large ``--unified``); otherwise the file is said to be
  unread, not read wrong.
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
    "read_file_patch",
    "sides",
    "unread_flags",
]

HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FROM_RE = re.compile(r"^--- (?:a/(.+)|/dev/null)$")
_TO_RE = re.compile(r"^\+\+\+ (?:b/(.+)|/dev/null)$")
# Config kinds whose settings are each one line's (a shell command continued over lines is the
# exception the unread count catches).
LINE_KINDS = frozenset({"dotenv", "shell"})
_FLAG_LINE = re.compile(r"^\s*--?[A-Za-z]")
WHOLE_FILES = "git log -p --unified=100000"


@dataclass
class Hunk:
    old_start: int
    new_start: int
    old: list[str] = field(default_factory=list)  # context and removed lines, in order
    new: list[str] = field(default_factory=list)  # context and added lines, in order
    removed: list[tuple[int, str]] = field(default_factory=list)  # (old line number, text)
    added: list[tuple[int, str]] = field(default_factory=list)  # (new line number, text)


@dataclass
class FilePatch:
    old_path: str | None  # None: the commit creates the file
    new_path: str | None  # None: the commit deletes it
    hunks: list[Hunk] = field(default_factory=list)
    cut: str = ""  # why the patch could not be read to its end ("" when it could)


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
    while i < n and not lines[i].startswith(("diff --", "commit ")):
        i += 1  # (only after a cut hunk: the rest of this file's patch)
    return patch, i


def _read_hunk(lines: list[str], i: int, m: re.Match[str], patch: FilePatch) -> int:
    old_left = int(m.group(2)) if m.group(2) is not None else 1
    new_left = int(m.group(4)) if m.group(4) is not None else 1
    hunk = Hunk(old_start=int(m.group(1)), new_start=int(m.group(3)))
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
        elif mark == "-" and old_left:
            hunk.removed.append((hunk.old_start + len(hunk.old), text))
            hunk.old.append(text)
            old_left -= 1
        elif mark == "+" and new_left:
            hunk.added.append((hunk.new_start + len(hunk.new), text))
            hunk.new.append(text)
            new_left -= 1
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


def sides(patch: FilePatch) -> tuple[str | None, str | None] | str:
    """(old text, new text) of what the patch shows (None for the side where the file does not
    exist), or why its settings cannot be read from it ("" when the patch changes none: a mode
    change, or a file renamed unchanged between config paths)."""
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
    if kind not in LINE_KINDS and any(h.old_start > 1 or h.new_start > 1 for h in patch.hunks):
        return (
            f"its hunks start at line {min(h.new_start for h in patch.hunks)}, without the "
            f"lines above that a {kind.upper() if kind != 'markdown' else 'Markdown'} setting's "
            f"place depends on (save the log with `{WHOLE_FILES}` to read it)"
        )
    before = None if patch.old_path is None else _side(patch.hunks, new=False)
    after = None if patch.new_path is None else _side(patch.hunks, new=True)
    return before, after


def unread_flags(patch: FilePatch) -> list[tuple[str, int, str]]:
    """The changed flag lines of a shell script's patch whose command starts above the hunk
    (the lines before it, back to the hunk's first, all continue a command): ("-" or "+",
    line number, text). No setting can be read from them without the whole file."""
    out: list[tuple[str, int, str]] = []
    for hunk in patch.hunks:
        for mark, start, body, changed in (
            ("-", hunk.old_start, hunk.old, hunk.removed),
            ("+", hunk.new_start, hunk.new, hunk.added),
        ):
            if start <= 1:
                continue
            for number, text in changed:
                if not _FLAG_LINE.match(text):
                    continue
                k = number - start
                while k > 0 and body[k - 1].rstrip().endswith("\\"):
                    k -= 1
                if k == 0 and body[0][:1] in (" ", "\t", "-"):
                    out.append((mark, number, text))
    return out
