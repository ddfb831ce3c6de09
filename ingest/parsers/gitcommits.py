"""Commits turned into records: commit events, doc revisions and config changes.

Pure: :class:`CommitInfo` values in (read from a ``git log`` text by :mod:`.gitlog`, or from a
repository by :mod:`ingest.clients.git`), a :class:`ParseResult` out. Each config or doc file a
commit carries the contents of (``CommitInfo.texts``) has its settings read before and after
the commit and diffed (:mod:`.configfiles`); a doc's revision also becomes an event.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evidence.vocabulary import EventKind, Lane, Source

from .configfiles import diff_settings, extract_settings, generated_data, is_config_path
from .markdown import changed_sections
from .types import EventRecord, ParseContext, ParseError, ParseResult, Setting

__all__ = ["KIND_GIT_REPO", "CommitInfo", "FileStat", "commits_to_result", "split_message"]

KIND_GIT_REPO = "git_repo"

_DOC_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class FileStat:
    """One changed path of a commit; ``added``/``removed`` are None for binary files."""

    path: str
    added: int | None
    removed: int | None
    old_path: str | None = None  # set when the file was renamed (or copied) from another path


@dataclass(frozen=True)
class CommitInfo:
    """One commit. ``texts`` maps a config/doc path to its (before, after) contents.

    None in ``texts`` means the file is absent on that side; only the repository client fills
    ``texts`` (a ``git log`` text carries no file contents).
    """

    hash: str
    parents: tuple[str, ...]
    author: str
    email: str
    authored_at: dt.datetime
    committed_at: dt.datetime
    subject: str
    body: str
    files: tuple[FileStat, ...]
    texts: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    line: int = 0  # line of the ``commit`` header in a log text, for messages and links


def split_message(message: str) -> tuple[str, str]:
    """Split a commit message: subject = first paragraph joined by spaces (as git's %s)."""
    lines = message.strip("\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    subject_lines: list[str] = []
    k = 0
    while k < len(lines) and lines[k].strip():
        subject_lines.append(lines[k].strip())
        k += 1
    body = "\n".join(line.rstrip() for line in lines[k:]).strip("\n")
    return " ".join(subject_lines), body


def commits_to_result(
    commits: Sequence[CommitInfo],
    *,
    repo: str,
    ctx: ParseContext,
    kind: str = KIND_GIT_REPO,
) -> ParseResult:
    """Turn commits into commit events, doc revisions and config changes.

    Settings of every path in ``CommitInfo.texts`` are diffed before/after. A file whose
    settings cannot be read is skipped for that commit with a warning, so one broken revision
    does not lose the rest of the history. Results come out oldest first.
    """
    result = ParseResult(kind=kind)
    # One version of a file is the "after" of one commit and the "before" of the next: read
    # each version once.
    memo: dict[tuple[str, str], list[Setting] | ValueError] = {}
    generated: set[str] = set()
    for commit in _chronological(commits):
        result.events.append(_commit_event(commit, repo))
        for path in sorted(commit.texts):
            before_text, after_text = commit.texts[path]
            reason = next(
                (generated_data(path, t) for t in (after_text, before_text) if t is not None), ""
            )
            if reason:
                if path not in generated:
                    generated.add(path)
                    result.warnings.append(
                        f"commit {commit.hash[:12]}: {path} is generated data, not "
                        f"configuration ({reason}); its changes are not read"
                    )
                continue
            try:
                before = _settings(path, before_text, memo)
                after = _settings(path, after_text, memo)
            except ValueError as exc:  # ParseError is a ValueError
                detail = str(exc.message) if isinstance(exc, ParseError) else str(exc)
                line = f" line {exc.line}" if isinstance(exc, ParseError) and exc.line else ""
                result.warnings.append(
                    f"commit {commit.hash[:12]}: skipped {path}: its settings could not be "
                    f"read ({detail}{',' if line else ''}{line})"
                )
                continue
            if path.lower().endswith(_DOC_SUFFIXES):
                ref = f"{path}@{commit.hash[:12]}"
                result.events.append(
                    _doc_event(
                        commit,
                        path,
                        after,
                        deleted=after_text is None,
                        edited=changed_sections(before_text, after_text),
                    )
                )
                source = Source.DOC
            else:
                ref = commit.hash
                source = Source.COMMIT
            result.config_changes.extend(
                diff_settings(before, after, at=commit.committed_at, source=source, ref=ref)
            )
    return result


def _settings(
    path: str, text: str | None, memo: dict[tuple[str, str], list[Setting] | ValueError]
) -> list[Setting]:
    if text is None:
        return []
    found = memo.get((path, text))
    if found is None:
        try:
            found = extract_settings(path, text)
        except ValueError as exc:
            found = exc
        memo[(path, text)] = found
    if isinstance(found, ValueError):
        raise found
    return found


def _chronological(commits: Sequence[CommitInfo]) -> list[CommitInfo]:
    ordered = list(commits)
    # `git log` prints newest first; reverse before the stable sort so equal times keep the
    # parent-before-child order.
    if len(ordered) > 1 and ordered[0].committed_at > ordered[-1].committed_at:
        ordered.reverse()
    return sorted(ordered, key=lambda c: c.committed_at)


def _touches_config(commit: CommitInfo) -> bool:
    if commit.texts:
        return True
    return any(
        is_config_path(f.path) or (f.old_path is not None and is_config_path(f.old_path))
        for f in commit.files
    )


def _commit_event(commit: CommitInfo, repo: str) -> EventRecord:
    files: list[dict[str, Any]] = []
    for f in commit.files:
        entry: dict[str, Any] = {"path": f.path, "added": f.added, "removed": f.removed}
        if f.old_path is not None:
            entry["old_path"] = f.old_path
        files.append(entry)
    return EventRecord(
        kind=EventKind.COMMIT,
        lane=Lane.COMMITS,
        at=commit.committed_at,
        key=commit.hash,
        title=commit.subject or f"(no message) {commit.hash[:12]}",
        body=_commit_body(commit),
        attrs={
            "hash": commit.hash,
            "short": commit.hash[:12],
            "author": commit.author,
            "email": commit.email,
            "parents": list(commit.parents),
            "files": files,
            "repo": repo,
            "touches_config": _touches_config(commit),
            # git log prints the author's date; the timeline places a commit at its commit
            # date (when it landed), and keeps the other for reading it against a text log
            **(
                {"authored_at": commit.authored_at.isoformat()}
                if commit.authored_at != commit.committed_at
                else {}
            ),
        },
        line=commit.line,
    )


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _commit_body(commit: CommitInfo) -> str:
    parts: list[str] = []
    if commit.body:
        parts.append(commit.body)
    merge = len(commit.parents) > 1
    if merge:
        parts.append("Merge of " + ", ".join(_code(p[:12]) for p in commit.parents) + ".")
    if commit.files:
        items = []
        for f in commit.files:
            name = _code(f.path)
            if f.old_path is not None:
                name = f"{_code(f.old_path)} → {name}"
            if f.added is not None:
                items.append(f"- {name} (+{f.added} −{f.removed})")
            elif merge:
                items.append(f"- {name}")  # the repository reader counts no lines for merges
            else:
                items.append(f"- {name} (binary)")
        what = "Files changed against the first parent" if merge else "Files changed"
        parts.append(f"**{what} ({len(commit.files)})**\n\n" + "\n".join(items))
    elif merge:
        parts.append("_No diff read: a merge's changes are its parents'._")
    else:
        parts.append("_No files changed._")
    return "\n\n".join(parts)


def _doc_event(
    commit: CommitInfo, path: str, settings: list[Setting], *, deleted: bool, edited: str = ""
) -> EventRecord:
    verb = "deleted" if deleted else "revised"
    body = commit.body
    if edited:
        body = (body + "\n\n" if body else "") + f"**Edited sections of `{path}`**\n\n" + edited
    return EventRecord(
        kind=EventKind.DOC_REVISION,
        lane=Lane.DOCS,
        at=commit.committed_at,
        key=f"{path}@{commit.hash}",
        title=f"{path} {verb} in {commit.hash[:12]}: {commit.subject}",
        body=body,
        attrs={
            "path": path,
            "commit": commit.hash,
            "settings": [s.as_attrs() for s in settings],
        },
        line=commit.line,
    )
