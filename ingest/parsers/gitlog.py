"""Commit history as `git log` text output.

Pure: bytes in, :class:`~.gitcommits.CommitInfo` values (then a :class:`ParseResult`, through
:func:`~.gitcommits.commits_to_result`) out. The text form is the output of::

    git log --date=iso-strict \\
        --pretty=format:'commit %H%nAuthor: %an <%ae>%nDate: %ad%n%n%w(0,4,4)%B' --numstat

Every message line there is indented by four spaces, so message text can never be mistaken for
a header or a numstat line. Git's default ``medium`` layout (``Merge:`` lines, ``Date:   ``) and
``--pretty=fuller`` headers are read too, because people paste those as often.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
import re
import time

from .configfiles import is_config_path
from .gitcommits import KIND_GIT_REPO, CommitInfo, FileStat, commits_to_result, split_message
from .gitpatch import FilePatch, context_lines, patch_end, read_file_patch, sides
from .text import decode_lines_tolerating, head_text
from .timestamps import (
    UTC,
    LocalTimeError,
    TimeError,
    parse_iso,
    parse_overlong_offset,
    wall_clock,
)
from .types import ConfigChangeRecord, ParseContext, ParseError, ParseResult

# CommitInfo, FileStat, commits_to_result and split_message live in .gitcommits; they are
# named here too because callers of the text parser use them with it.
__all__ = [
    "KIND_GIT_LOG",
    "KIND_GIT_REPO",
    "CommitInfo",
    "FileStat",
    "commits_to_result",
    "dateless_git_log",
    "looks_like_git_log_text",
    "parse_git_log",
    "parse_git_log_text",
    "split_message",
]

KIND_GIT_LOG = "git_log"

_HASH = r"(?:[0-9a-f]{64}|[0-9a-f]{40})"
_COMMIT_RE = re.compile(rf"^commit ({_HASH})((?: {_HASH})*)(?: \(.*\))?$")
_AUTHOR_RE = re.compile(r"^(.*?)\s*<([^<>]*)>$")
_NUMSTAT_RE = re.compile(r"^(\d+|-)\t(\d+|-)\t(.+)$")
# The other file lists git log prints after a message: --name-status ("M<TAB>path",
# "R100<TAB>old<TAB>new"), --stat (" path | 12 +++--", then " 2 files changed, ..."), and -p
# (a "diff --git a/x b/x" header, then the patch, which is skipped).
_NAME_STATUS_RE = re.compile(r"^([ACDMRTUXB])(\d*)\t([^\t]+)(?:\t([^\t]+))?$")
_STAT_RE = re.compile(r"^ (.+?)\s+\|\s+(?:\d+|Bin\b)")
_STAT_SUMMARY_RE = re.compile(r"^ \d+ files? changed")
_DIFF_RE = re.compile(r"^diff --git a/(.+) b/(.+)$")
_COMBINED_RE = re.compile(r"^diff --(?:cc|combined) (.+)$")  # a merge's patch (-c, --cc)
_HEADERS = {"Author", "Date", "AuthorDate", "Commit", "CommitDate", "Merge"}
_ISO_SPACED_RE = re.compile(
    r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}) ([+-]\d{2})(\d{2})$"  # --date=iso
)
_DATE_EXPECTED = "expected an ISO 8601 date such as 2026-11-20T07:30:00-08:00 (--date=iso-strict)"


_ONELINE_RE = re.compile(r"^[0-9a-f]{7,64}(?: \([^)]*\))? \S")
_GRAPH_RE = re.compile(r"^\*[ |\\/]+(?:commit [0-9a-f]{7,64}\b|[0-9a-f]{7,64} \S)")


def dateless_git_log(head: bytes) -> str:
    """Which `git log` layout that cannot be read ``head`` is in ("--graph", its lines drawn
    behind branch lines; "--oneline", no dates), or "" for neither: saying so beats
    "unknown format"."""
    lines = [ln for ln in head_text(head).split("\n")[:20] if ln.strip()]
    if lines and _GRAPH_RE.match(lines[0]):
        return "--graph"
    if len(lines) >= 2 and all(_ONELINE_RE.match(ln) for ln in lines[:10]):
        return "--oneline"
    return ""


def looks_like_git_log_text(name: str, head: bytes) -> bool:
    """True when ``head`` starts like ``git log`` output (``commit <hash>`` then headers)."""
    lines = [ln.rstrip("\r") for ln in head_text(head).split("\n")]
    lines = [ln for ln in lines if ln.strip()]
    if not lines or not _COMMIT_RE.match(lines[0]):
        return False
    if len(lines) == 1:
        return name.endswith(".gitlog")
    return lines[1].partition(":")[0] in _HEADERS


def parse_git_log_text(
    data: bytes,
    ctx: ParseContext,
    warnings: list[str] | None = None,
    *,
    unread: list[str] | None = None,
) -> list[CommitInfo]:
    """Read ``git log --numstat`` text (see the module docstring) into commits, in file order.

    A date with a malformed zone offset (``+518:00``: git prints a recorded ``+051800`` so) is
    read as git meant it, and a line saying so is appended to ``warnings``.
    """
    notes = warnings if warnings is not None else []
    lines = _log_lines(data, ctx.name, notes)
    commits: list[CommitInfo] = []
    patches: list[tuple[FilePatch, dict[str, tuple[str | None, str | None]], str]] = []
    i, n = 0, len(lines)
    while i < n:
        if not lines[i].strip():
            i += 1
            continue
        commit, i = _read_commit(lines, i, ctx, notes, patches)
        commits.append(commit)
    # Which patches show their files whole depends on the log's context size: read last.
    context = context_lines([patch for patch, _, _ in patches])
    for patch, texts, where in patches:
        if not _patch_texts(patch, texts, where, context, notes) and unread is not None:
            unread.append(where)
    return commits


class _InHunk:
    """Whether each line, seen in order, is a line of a ``-p`` hunk's body."""

    def __init__(self) -> None:
        self.inside = False

    def __call__(self, raw: bytes) -> bool:
        if raw.startswith((b"diff --", b"commit ")):
            self.inside = False
        elif raw.startswith(b"@@"):
            self.inside = True
        return self.inside and raw[:1] in (b" ", b"+", b"-")


def _log_lines(data: bytes, name: str, warnings: list[str]) -> list[str]:
    """The log's lines. A ``-p`` log quotes files' bytes as they were committed, and real
    histories hold files in other encodings (Flask's Latin-1 changelog): a patch line that is
    not UTF-8 is read with U+FFFD for each byte that does not decode, counted in a warning,
    rather than refusing the whole history for a file the log only quotes. Anywhere else
    (headers, messages, file lists: git writes them as UTF-8) such a byte is a ParseError."""
    lines, replaced = decode_lines_tolerating(data, name, _InHunk())
    if replaced:
        warnings.append(
            f"{name}: {len(replaced)} patch line(s) are not UTF-8, the first at line "
            f"{replaced[0]}: read with U+FFFD for each byte that does not decode (a file's "
            "contents in another encoding)"
        )
    return lines


def parse_git_log(data: bytes, ctx: ParseContext) -> ParseResult:
    """Parse ``git log`` text into commit events (kind ``git_log``)."""
    warnings: list[str] = []
    unread: list[str] = []
    commits = parse_git_log_text(data, ctx, warnings, unread=unread)
    result = commits_to_result(commits, repo=_repo_name(ctx.name), ctx=ctx, kind=KIND_GIT_LOG)
    merged_in, said_by_merges = _merged_in(commits, ctx.name, warnings)
    _changes_at_merges(result, merged_in, said_by_merges=said_by_merges)
    result.warnings[:0] = warnings
    result.config_unread = len(unread)
    return result


def _merged_in(
    commits: list[CommitInfo], name: str, warnings: list[str]
) -> tuple[dict[str, CommitInfo], bool]:
    """Each commit of a merged branch -> the merge of the deployed line (HEAD's first-parent
    line) that brought it there, as the repository reader sees it: a branch's settings reach
    the deployed line with its merge. Empty when the log shows no such branch (a linear
    history, or a log of the first-parent line alone). True beside it when the log shows the
    merges' own diffs."""
    merges = [c for c in commits if len(c.parents) > 1]
    if not merges:
        return {}, False
    by_hash = {c.hash: c for c in commits}
    ordered = sorted(by_hash)

    def resolve(parent: str) -> CommitInfo | None:  # (the medium layout abbreviates parents)
        found = by_hash.get(parent)
        if found is None:  # the one hash the abbreviation starts, found by bisection
            k = bisect.bisect_left(ordered, parent)
            unique = k + 1 >= len(ordered) or not ordered[k + 1].startswith(parent)
            if k < len(ordered) and ordered[k].startswith(parent) and unique:
                found = by_hash[ordered[k]]
        return found

    branches = [m for m in merges if any(resolve(p) for p in m.parents[1:])]
    if not branches:
        return {}, False
    # A log printed with the merges' own diffs (--diff-merges=first-parent) shows what each
    # merge brought; without them, the branch's changes are folded into its merge (below).
    merge_diffs = any(m.files for m in merges)
    if not any(len(c.parents) == 1 for c in commits):
        what = (
            "read twice, at their own commits and in the merges' diffs"
            if merge_diffs
            else "placed at their own commits, not at the merges that brought them to the "
            "deployed line"
        )
        warnings.append(
            f"{name}: {len(branches)} merge(s) bring in commits this log also lists, and the "
            f"log does not name each commit's parents: settings changed on those branches are "
            f"{what} (save the log with `git log -p --parents --diff-merges=first-parent`)"
        )
        return {}, False
    listed = {p for c in commits for p in c.parents}
    heads = [c for c in commits if c.hash not in listed]
    line: list[CommitInfo] = []
    at: CommitInfo | None = max(heads, key=lambda c: c.committed_at) if heads else None
    while at is not None:
        line.append(at)
        at = resolve(at.parents[0]) if at.parents else None
    mainline = {c.hash for c in line}
    out: dict[str, CommitInfo] = {}
    for merge in reversed(line):  # oldest first: a commit is brought by the first merge
        todo = [c for c in (resolve(p) for p in merge.parents[1:]) if c is not None]
        while todo:
            c = todo.pop()
            if c.hash in mainline or c.hash in out:
                continue
            out[c.hash] = merge
            todo.extend(p for p in (resolve(h) for h in c.parents) if p is not None)
    if merge_diffs:
        return out, True
    if out:
        warnings.append(
            f"{name}: the settings changed on {len(out)} commit(s) of merged branches are "
            "placed at the merges that brought them to the deployed line, from the branches' "
            "own diffs; a merge that resolved a conflict may have kept other values (save the "
            "log with `--diff-merges=first-parent` for the merges' own diffs)"
        )
    return out, False


def _changes_at_merges(
    result: ParseResult, merged_in: dict[str, CommitInfo], *, said_by_merges: bool
) -> None:
    """A merged branch's config changes, one per setting, at the merge that brought them to
    the deployed line (the first old value, the last new one; none when they cancel out).
    When the log shows the merges' own diffs, those say it, and the branch's are dropped."""
    if not merged_in:
        return
    short = {h[:12]: m for h, m in merged_in.items()}
    kept: list[ConfigChangeRecord] = []
    folded: dict[tuple[str, str, str, str, str], ConfigChangeRecord] = {}
    for change in result.config_changes:
        path, doc, rev = change.ref.rpartition("@")
        merge = short.get(rev) if doc else merged_in.get(change.ref)
        if merge is None:
            kept.append(change)
            continue
        if said_by_merges:
            continue
        ref = f"{path}@{merge.hash[:12]}" if doc else merge.hash
        key = (ref, change.source, change.key, change.scope, change.condition)
        before = folded.get(key)
        folded[key] = dataclasses.replace(
            change, ref=ref, at=merge.committed_at, old=before.old if before else change.old
        )
    kept.extend(c for c in folded.values() if c.old != c.new)
    kept.sort(key=lambda c: c.at)
    result.config_changes[:] = kept


def _read_commit(
    lines: list[str],
    start: int,
    ctx: ParseContext,
    warnings: list[str],
    patches: list[tuple[FilePatch, dict[str, tuple[str | None, str | None]], str]],
) -> tuple[CommitInfo, int]:
    name = ctx.name
    m = _COMMIT_RE.match(lines[start])
    if not m:
        raise ParseError(
            name, start + 1, f"expected 'commit <40 hex digit hash>', found {lines[start][:80]!r}"
        )
    commit_hash = m.group(1)
    parents = tuple(m.group(2).split())
    headers: dict[str, tuple[str, int]] = {}
    i, n = start + 1, len(lines)
    while True:
        if i >= n:
            missing = [h for h in ("Author", "Date") if h not in headers]
            what = f"the {' and '.join(missing)} line(s)" if missing else "a blank line"
            raise ParseError(
                name,
                n,
                f"the log ends inside the header of commit {commit_hash[:12]}: expected {what} "
                "followed by the indented message",
            )
        line = lines[i]
        if line == "" or line.startswith("    "):
            break
        key, sep, value = line.partition(":")
        if not sep or key not in _HEADERS:
            raise ParseError(
                name,
                i + 1,
                f"expected a header line 'Author: name <email>' or 'Date: <date>' in commit "
                f"{commit_hash[:12]}, found {line[:80]!r}",
            )
        headers[key] = (value.strip(), i + 1)
        i += 1
    if line == "":
        i += 1  # the blank line between headers and message

    author_value = headers.get("Author")
    if author_value is None:
        raise _missing_header(name, start, commit_hash, "Author: name <email>", lines[i:])
    am = _AUTHOR_RE.match(author_value[0])
    if not am:
        raise ParseError(
            name, author_value[1], f"expected 'Author: name <email>', found {author_value[0]!r}"
        )
    date_value = headers.get("Date") or headers.get("AuthorDate")
    if date_value is None:
        raise _missing_header(name, start, commit_hash, "Date: <date>", lines[i:])
    authored_at = _parse_date(date_value[0], ctx, date_value[1], warnings)
    committed_at = authored_at
    if "CommitDate" in headers:
        committed_at = _parse_date(
            headers["CommitDate"][0], ctx, headers["CommitDate"][1], warnings
        )
    if not parents and "Merge" in headers:
        parents = tuple(headers["Merge"][0].split())  # abbreviated hashes in the medium layout

    message: list[str] = []
    while i < n and (lines[i].startswith("    ") or not lines[i].strip()):
        message.append(lines[i][4:] if lines[i].startswith("    ") else "")
        i += 1
    subject, body = split_message("\n".join(message))

    files: list[FileStat] = []
    texts: dict[str, tuple[str | None, str | None]] = {}
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.startswith("commit "):
            break
        fm = _NUMSTAT_RE.match(line)
        if not fm:
            at = i
            other = _other_file_line(lines, i)
            if other is None:
                raise ParseError(
                    name,
                    i + 1,
                    "expected a file line (--numstat 'added<TAB>removed<TAB>path', "
                    "--name-status, --stat or a -p patch) or the next 'commit <hash>' line, "
                    f"found {line[:80]!r}",
                )
            found, i, patch = other
            files.extend(found)
            if patch is not None:
                patches.append((patch, texts, f"{name}:{at + 1}: commit {commit_hash[:12]}"))
            continue
        path, old_path = _numstat_path(fm.group(3))
        files.append(
            FileStat(
                path=path,
                added=None if fm.group(1) == "-" else int(fm.group(1)),
                removed=None if fm.group(2) == "-" else int(fm.group(2)),
                old_path=old_path,
            )
        )
        i += 1

    commit = CommitInfo(
        hash=commit_hash,
        parents=parents,
        author=am.group(1),
        email=am.group(2),
        authored_at=authored_at,
        committed_at=committed_at,
        subject=subject,
        body=body,
        files=_one_per_path(files),
        texts=texts,
        line=start + 1,
    )
    return commit, i


def _one_per_path(files: list[FileStat]) -> tuple[FileStat, ...]:
    """A commit's files once each: a log printed with two file lists (``-p --stat``, ``-p
    --numstat``) names each file in both; the entry with line counts is kept."""
    kept: dict[tuple[str, str | None], FileStat] = {}
    for f in files:
        key = (f.path, f.old_path)
        if key not in kept or (kept[key].added is None and f.added is not None):
            kept[key] = f
    return tuple(kept.values())


def _patch_texts(
    patch: FilePatch,
    texts: dict[str, tuple[str | None, str | None]],
    where: str,
    context: int | None,
    warnings: list[str],
) -> bool:
    """The sides of a config file's patch into ``texts`` (keyed as the repository reader keys
    them: the path after the commit, or before it for a deletion), or a warning saying why
    its settings are not read (False then)."""
    path = patch.new_path or patch.old_path
    if path is None or not any(
        p is not None and is_config_path(p) for p in (patch.new_path, patch.old_path)
    ):
        return True
    read = sides(patch, context)
    if isinstance(read, str):
        if read:
            warnings.append(f"{where}: the settings of {path} are not read: {read}")
        return not read
    texts[path] = read
    return True


def _other_file_line(
    lines: list[str], i: int
) -> tuple[list[FileStat], int, FilePatch | None] | None:
    """The files a --name-status, --stat or -p line at ``i`` names (none for --stat's summary),
    the line after it (after the whole patch) and the patch read (-p); None for none of them."""
    line = lines[i]
    if m := _NAME_STATUS_RE.match(line):
        if m.group(4) is not None:  # a rename or copy: old, then new
            renamed = FileStat(path=m.group(4), added=None, removed=None, old_path=m.group(3))
            return [renamed], i + 1, None
        return [FileStat(path=m.group(3), added=None, removed=None)], i + 1, None
    if _STAT_SUMMARY_RE.match(line) or line == "---":  # ("---": -p --stat's separator)
        return [], i + 1, None
    if m := _STAT_RE.match(line):
        path, old_path = _numstat_path(m.group(1).strip())
        return [FileStat(path=path, added=None, removed=None, old_path=old_path)], i + 1, None
    if m := _DIFF_RE.match(line):
        old, new = m.group(1), m.group(2)
        found = FileStat(path=new, added=None, removed=None, old_path=old if old != new else None)
        patch, i = read_file_patch(lines, i, old, new)
        return [found], i, patch
    if m := _COMBINED_RE.match(line):
        # A merge's combined diff: its file, not its settings (a merge's changes are its
        # parents', read in their own patches).
        return [FileStat(path=m.group(1), added=None, removed=None)], patch_end(lines, i + 1), None
    return None


def _missing_header(
    name: str, start: int, commit_hash: str, header: str, rest: list[str]
) -> ParseError:
    if not any(line.strip() for line in rest):
        what = f"the log ends inside the header of commit {commit_hash[:12]}"
    else:
        what = f"commit {commit_hash[:12]} has no '{header.split(':')[0]}:' line"
    return ParseError(name, start + 1, f"{what}: expected a '{header}' line")


def _parse_date(value: str, ctx: ParseContext, line: int, warnings: list[str]) -> dt.datetime:
    text = value.strip()
    m = _ISO_SPACED_RE.match(text)
    if m:
        text = f"{m.group(1)}T{m.group(2)}{m.group(3)}:{m.group(4)}"
    try:
        return parse_iso(text, ctx.tz)
    except LocalTimeError as exc:
        raise ParseError(ctx.name, line, str(exc)) from None
    except TimeError:
        pass
    for layout in (
        "%a %b %d %H:%M:%S %Y %z",  # git's default: "Fri Nov 20 07:30:00 2026 -0800"
        "%a, %d %b %Y %H:%M:%S %z",  # --date=rfc: "Fri, 20 Nov 2026 07:30:00 -0800"
    ):
        try:
            return dt.datetime.strptime(text, layout).astimezone(UTC)
        except ValueError:
            pass
    try:
        # --date=local: the default layout without a zone, in the printing machine's time
        # (read in the incident's zone, as every zone-less time)
        fields = time.strptime(text, "%a %b %d %H:%M:%S %Y")[:6]
    except ValueError:
        pass
    else:
        try:
            return wall_clock(*fields, tz=ctx.tz)
        except LocalTimeError as exc:
            raise ParseError(ctx.name, line, str(exc)) from None
    try:
        odd = parse_overlong_offset(value.strip())
    except TimeError:
        raise ParseError(ctx.name, line, f"{_DATE_EXPECTED}, found {value!r}") from None
    warnings.append(
        f"{ctx.name}:{line}: the date {value.strip()!r} has a malformed zone offset; read as "
        f"{odd.isoformat()} (the offset's last two digits as minutes, the rest as hours, as "
        "git printed it)"
    )
    return odd


def _numstat_path(text: str) -> tuple[str, str | None]:
    """Split a numstat path into (path, old_path) for renames: ``a => b``, ``d/{a => b}/c``."""
    if text.startswith('"'):
        first, rest = _read_quoted(text)
        if not rest:
            return first, None
        if rest.startswith(" => "):
            target = rest[4:]
            second = _read_quoted(target)[0] if target.startswith('"') else target
            return second, first
    m = re.fullmatch(r"(.*)\{(.*) => (.*)\}(.*)", text)
    if m:
        prefix, old_mid, new_mid, suffix = m.groups()
        return _join_rename(prefix, new_mid, suffix), _join_rename(prefix, old_mid, suffix)
    if " => " in text:
        old, new = text.split(" => ", 1)
        new_path = _read_quoted(new)[0] if new.startswith('"') else new
        return new_path, old
    return text, None


def _join_rename(prefix: str, middle: str, suffix: str) -> str:
    # "a/{ => b}/c": an empty side means the directory level is absent, not an empty name.
    if not middle and suffix.startswith("/"):
        suffix = suffix[1:]
    return prefix + middle + suffix


_C_ESCAPES = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92, '"': 34}


def _read_quoted(text: str) -> tuple[str, str]:
    """Read git's C-style quoted path at the start of ``text``; return (path, rest)."""
    out = bytearray()
    k = 1
    while k < len(text):
        ch = text[k]
        if ch == '"':
            return out.decode("utf-8", errors="replace"), text[k + 1 :]
        if ch == "\\" and k + 1 < len(text):
            nxt = text[k + 1]
            if nxt in "01234567" and re.fullmatch(r"[0-7]{3}", text[k + 1 : k + 4]):
                out.append(int(text[k + 1 : k + 4], 8))
                k += 4
                continue
            if nxt in _C_ESCAPES:
                out.append(_C_ESCAPES[nxt])
                k += 2
                continue
        out.extend(ch.encode("utf-8"))
        k += 1
    return text, ""  # unbalanced quote: keep the text as it is


def _repo_name(name: str) -> str:
    base = name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    for suffix in (".gitlog", ".log", ".txt"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base
