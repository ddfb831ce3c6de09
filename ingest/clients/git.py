"""Read a git repository's history through the ``git`` CLI (never by reading ``.git`` by hand).

An I/O client: it runs ``git`` in a subprocess with a deadline and returns plain
:class:`~ingest.parsers.gitcommits.CommitInfo` values for the pure parser to turn into records.
Every git command goes through :mod:`ingest.clients.git_safety`, which checks that the
repository is self-contained and runs git pinned to it (uploaded repositories are hostile).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ingest.clients.git_safety import (
    Repo,
    checked_repository,
    git_output,
    run_git,
    stream_git_records,
)
from ingest.parsers.configfiles import is_config_path
from ingest.parsers.gitcommits import CommitInfo, FileStat, split_message

logger = logging.getLogger(__name__)

_MARK = b"\x00\x1eINCIDENT-TIMELINE-COMMIT\x1f"
# Dates come as epoch seconds (%at, %ct: what the commit object records, always readable) and
# as ISO 8601 with the author's zone (%aI, %cI), which only serves to notice a malformed zone:
# real histories hold offsets such as +051800, which git prints as "+518:00".
_FORMAT = (
    "%x00%x1eINCIDENT-TIMELINE-COMMIT%x1f%H%x00%P%x00%an%x00%ae%x00%at %aI%x00%ct %cI%x00%B%x00"
)
_HEADER_FIELDS = 7
_ZERO_OID = frozenset({"0" * 40, "0" * 64})
_REGULAR_FILE_MODES = frozenset({"100644", "100755"})
# A config or doc bigger than this is not a hand-written setting file; skip it, keep memory flat.
MAX_TEXT_BYTES = 4 * 1024 * 1024


def head(path: Path, *, timeout: float = 10.0) -> str:
    """HEAD's commit hash ("" for a repository without commits); ValueError if no repository
    (UnsafeRepositoryError, a ValueError, if it reaches outside its folder)."""
    repo = checked_repository(path)
    proc = run_git(repo, ["rev-parse", "--verify", "--quiet", "HEAD"], time.monotonic() + timeout)
    return proc.stdout.decode("ascii", errors="replace").strip() if proc.returncode == 0 else ""


@dataclass(frozen=True)
class History:
    """A repository's commits, oldest first, and what was odd about them (malformed dates)."""

    commits: list[CommitInfo]
    warnings: list[str]


def read_repository(
    path: Path, *, timeout: float = 60.0, max_commits: int = 100_000
) -> list[CommitInfo]:
    """The commits of :func:`read_history`, without its warnings."""
    return read_history(path, timeout=timeout, max_commits=max_commits).commits


def read_history(path: Path, *, timeout: float = 60.0, max_commits: int = 100_000) -> History:
    """All commits of HEAD's history, oldest first, with config/doc texts before and after.

    One ``git log`` reads every commit with its ``--numstat`` and ``--raw`` entries (blob ids),
    merges shown without a diff as ``git log`` shows them; one more reads what each merge of
    HEAD's first-parent line brought against its first parent (``--raw`` only: its paths and
    blob ids, no line counts, which would cost as much again on a history of release merges).
    Texts are filled for commits on HEAD's first-parent line; side-branch commits carry none,
    since their settings reach the deployed line with the merge. Config and doc blobs are
    then read in one batch.

    A malformed commit date (real histories hold zone offsets such as ``+051800``) is read
    from the commit's timestamp and reported in ``warnings``, never fatal. If the history is
    longer than ``max_commits``, the newest ``max_commits`` are returned (with a warning).
    Raises ValueError if ``path`` is not a repository (UnsafeRepositoryError if it reaches
    outside its folder), RuntimeError when git fails or times out.
    """
    repo = checked_repository(path)
    deadline = time.monotonic() + timeout
    head = run_git(repo, ["rev-parse", "--verify", "--quiet", "HEAD"], deadline)
    if head.returncode != 0:
        return History([], [])  # an empty repository: no commit yet
    count = f"--max-count={max_commits + 1}"
    # The two small reads run beside the big one (each is its own git process).
    with ThreadPoolExecutor(max_workers=2) as pool:
        first_parent = pool.submit(
            git_output, repo, ["rev-list", "--first-parent", "HEAD"], deadline
        )
        merged = pool.submit(_merge_changes, repo, deadline)
        raw_commits = stream_git_records(
            repo,
            ["log", count, *_LOG_OPTIONS],
            deadline,
            _MARK,
            lambda record: _parse_record(record, repo.top),
        )
        raw_commits.reverse()  # oldest first; git's --reverse costs it more than this does
        mainline = set(first_parent.result().decode().split())
        merges = merged.result()
    warnings: list[str] = []
    if len(raw_commits) > max_commits:
        warnings.append(
            f"the history is longer than {max_commits} commits; only the newest {max_commits} "
            "were read"
        )
        logger.warning("%s: %s", repo.top, warnings[-1])
        raw_commits = raw_commits[len(raw_commits) - max_commits :]
    # Settings are diffed along HEAD's first-parent line only: a side-branch commit changes
    # nothing on the deployed line until its merge, and diffing both would report it twice.
    diffed = [_with_merge_diff(raw, merges) for raw in raw_commits if raw.hash in mainline]
    blobs = _read_blobs(repo, _wanted_blobs(diffed), deadline)
    by_hash = {raw.hash: raw for raw in diffed}
    # A shallow clone's oldest commits have their parents cut off: diffed against nothing,
    # every setting they hold would read as introduced there. Their files are the history's
    # starting point instead, as the first commit's are not.
    shallow = _shallow_boundary(repo)
    cut = [raw for raw in raw_commits if raw.hash in shallow]
    if cut:
        warnings.append(
            f"the repository is a shallow clone: its history is cut at {len(cut)} commit(s) "
            f"({', '.join(raw.hash[:12] for raw in cut[:3])}); settings they hold are not "
            "reported as introduced there (clone without --depth for the whole history)"
        )
    commits: list[CommitInfo] = []
    previous: dt.datetime | None = None
    for raw in raw_commits:
        authored, committed = _dates(raw, previous, warnings)
        previous = committed
        commits.append(
            _commit_info(
                by_hash.get(raw.hash, raw),
                blobs,
                with_texts=raw.hash in by_hash and raw.hash not in shallow,
                dates=(authored, committed),
                skipped=warnings,
            )
        )
    return History(commits, warnings)


def _shallow_boundary(repo: Repo) -> set[str]:
    """The commits whose parents a shallow clone cut off (its ``shallow`` file)."""
    path = repo.git_dir / "shallow"
    if not path.is_file() or path.is_symlink():
        return set()
    with open(path, "rb") as src:
        return set(src.read(16 * 1024 * 1024).decode("ascii", errors="replace").split())


# What every `git log` here reads the same way: renames found, raw entries NUL-separated with
# full hashes, and nothing of the repository's own configuration run or applied (no external
# diff, no textconv filter, no colour, no signature check).
_RAW_OPTIONS = (
    "-M",
    "--raw",
    "-z",
    "--no-abbrev",
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--no-show-signature",
)
_LOG_OPTIONS = (
    *_RAW_OPTIONS,
    "--numstat",
    "--encoding=UTF-8",
    f"--format=format:{_FORMAT}",
    "HEAD",
    "--",
)


def _merge_changes(repo: Repo, deadline: float) -> dict[str, tuple[_Raw, ...]]:
    """The ``--raw`` entries of each merge on HEAD's first-parent line against its first
    parent (a tree comparison: no file contents are read)."""
    out = git_output(
        repo,
        [
            "log",
            "--merges",
            "--first-parent",
            "--diff-merges=first-parent",
            *_RAW_OPTIONS,
            "--format=format:%x00%x1eINCIDENT-TIMELINE-COMMIT%x1f%H%x00",
            "HEAD",
            "--",
        ],
        deadline,
    )
    merges: dict[str, tuple[_Raw, ...]] = {}
    for record in out.split(_MARK):
        if not record:
            continue
        commit_hash, _, rest = record.partition(b"\x00")
        try:
            raws, _stats = _parse_changes(rest)
        except (ValueError, IndexError) as exc:
            raise RuntimeError(
                f"git log in {repo.top}: unexpected output for merge {_text(commit_hash)[:12]}: "
                f"{exc}"
            ) from None
        merges[_text(commit_hash)] = tuple(raws)
    return merges


def _with_merge_diff(raw: _RawCommit, merges: dict[str, tuple[_Raw, ...]]) -> _RawCommit:
    """A merge of the first-parent line with what it brought: its ``--raw`` entries, and its
    files (paths only: line counts are not computed for merges)."""
    entries = merges.get(raw.hash)
    if entries is None:
        return raw
    stats = tuple(FileStat(e.path, None, None, e.old_path) for e in entries)
    return dataclasses.replace(raw, raws=entries, stats=stats)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _when(field: str) -> tuple[dt.datetime | None, str]:
    """A ``%at %aI`` field: the moment (None if unreadable) and what is wrong with it."""
    seconds, _, iso = field.partition(" ")
    try:
        at = _EPOCH + dt.timedelta(seconds=int(seconds))
    except (ValueError, OverflowError):
        return None, f"an unreadable date ({field.strip()!r} as git prints it)"
    try:
        dt.datetime.fromisoformat(iso)
    except ValueError:
        return at, f"a malformed zone offset ({iso!r} as git prints it)"
    return at, ""


def _dates(
    raw: _RawCommit, previous: dt.datetime | None, warnings: list[str]
) -> tuple[dt.datetime, dt.datetime]:
    """Author and committer dates; a malformed one is warned about and read as best it can be
    (from the timestamp, else the other date, else the commit before it)."""
    authored, author_problem = _when(raw.authored)
    committed, committer_problem = _when(raw.committed)
    fallback = committed or authored or previous or _EPOCH
    for who, at, problem in (
        ("author", authored, author_problem),
        ("committer", committed, committer_problem),
    ):
        if not problem:
            continue
        if at is not None:
            read_as = f"read as {at.isoformat()} from its timestamp"
        elif committed or authored:
            read_as = f"read as its {'committer' if who == 'author' else 'author'} date"
        else:
            read_as = "read as the time of the commit before it"
        warnings.append(f"commit {raw.hash[:12]}: its {who} date has {problem}; {read_as}")
    return authored or fallback, committed or fallback


# --- parsing `git log -z --raw --numstat` -------------------------------------------------------


@dataclass(frozen=True)
class _Raw:
    """One ``--raw`` entry: modes, blob ids and the paths (old is None unless renamed)."""

    src_mode: str
    dst_mode: str
    src_oid: str
    dst_oid: str
    status: str
    path: str
    old_path: str | None


@dataclass(frozen=True)
class _RawCommit:
    hash: str
    parents: tuple[str, ...]
    author: str
    email: str
    authored: str  # "%at %aI": see _when
    committed: str  # "%ct %cI"
    message: str
    raws: tuple[_Raw, ...]
    stats: tuple[FileStat, ...]


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")


def _parse_record(record: bytes, path: Path) -> _RawCommit:
    fields = record.split(b"\x00", _HEADER_FIELDS)
    if len(fields) < _HEADER_FIELDS:
        raise RuntimeError(f"git log in {path}: unexpected output (a commit record is cut short)")
    commit_hash, parents, author, email, authored, committed, message = (
        _text(f) for f in fields[:_HEADER_FIELDS]
    )
    rest = fields[_HEADER_FIELDS] if len(fields) > _HEADER_FIELDS else b""
    try:
        raws, stats = _parse_changes(rest)
    except (ValueError, IndexError) as exc:
        raise RuntimeError(
            f"git log in {path}: unexpected output for commit {commit_hash[:12]}: {exc}"
        ) from None
    return _RawCommit(
        hash=commit_hash,
        parents=tuple(parents.split()),
        author=author,
        email=email,
        authored=authored,
        committed=committed,
        message=message,
        raws=tuple(raws),
        stats=tuple(stats),
    )


def _read_nul(buf: bytes, pos: int) -> tuple[bytes, int]:
    end = buf.index(b"\x00", pos)
    return buf[pos:end], end + 1


def _parse_changes(buf: bytes) -> tuple[list[_Raw], list[FileStat]]:
    """Parse the ``-z`` raw entries (``:mode mode oid oid S\\0path\\0``) and numstat entries."""
    raws: list[_Raw] = []
    stats: list[FileStat] = []
    pos = 0
    while pos < len(buf):
        if buf[pos : pos + 1] in (b"\x00", b"\n"):
            pos += 1  # separators git puts between the message and the diff
            continue
        if buf[pos : pos + 1] == b":":
            meta, pos = _read_nul(buf, pos + 1)
            src_mode, dst_mode, src_oid, dst_oid, status = _text(meta).split(" ")
            first, pos = _read_nul(buf, pos)
            old: str | None = None
            new = _text(first)
            if status[:1] in ("R", "C"):
                second, pos = _read_nul(buf, pos)
                old, new = new, _text(second)
            raws.append(_Raw(src_mode, dst_mode, src_oid, dst_oid, status, new, old))
            continue
        tab1 = buf.index(b"\t", pos)
        tab2 = buf.index(b"\t", tab1 + 1)
        added, removed = _text(buf[pos:tab1]), _text(buf[tab1 + 1 : tab2])
        pos = tab2 + 1
        old_path: str | None = None
        if buf[pos : pos + 1] == b"\x00":  # a rename: "\0old\0new\0"
            old_raw, pos = _read_nul(buf, pos + 1)
            new_raw, pos = _read_nul(buf, pos)
            old_path = _text(old_raw)
        else:
            new_raw, pos = _read_nul(buf, pos)
        stats.append(
            FileStat(
                path=_text(new_raw),
                added=None if added == "-" else int(added),
                removed=None if removed == "-" else int(removed),
                old_path=old_path,
            )
        )
    return raws, stats


# --- blobs --------------------------------------------------------------------------------------


def _wanted(raw: _Raw) -> bool:
    return is_config_path(raw.path) or (raw.old_path is not None and is_config_path(raw.old_path))


def _side_oid(mode: str, oid: str) -> str | None:
    if oid in _ZERO_OID or mode not in _REGULAR_FILE_MODES:
        return None
    return oid


def _wanted_blobs(commits: list[_RawCommit]) -> list[str]:
    oids: dict[str, None] = {}
    for commit in commits:
        for raw in commit.raws:
            if not _wanted(raw):
                continue
            for oid in (_side_oid(raw.src_mode, raw.src_oid), _side_oid(raw.dst_mode, raw.dst_oid)):
                if oid is not None:
                    oids[oid] = None
    return list(oids)


def _read_blobs(repo: Repo, oids: list[str], deadline: float) -> dict[str, str | None]:
    """Blob texts by id (None if too big): one ``cat-file --batch-check``, one ``--batch``."""
    if not oids:
        return {}
    sizes: dict[str, int] = {}
    check = git_output(
        repo, ["cat-file", "--batch-check"], deadline, ("\n".join(oids) + "\n").encode()
    )
    for line in check.decode("utf-8", errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob":
            sizes[parts[0]] = int(parts[2])
    small = [oid for oid in oids if sizes.get(oid, MAX_TEXT_BYTES + 1) <= MAX_TEXT_BYTES]
    texts: dict[str, str | None] = dict.fromkeys(oids)
    if not small:
        return texts
    out = git_output(repo, ["cat-file", "--batch"], deadline, ("\n".join(small) + "\n").encode())
    pos = 0
    while pos < len(out):
        end = out.index(b"\n", pos)
        header = _text(out[pos:end]).split()
        pos = end + 1
        if len(header) != 3:
            continue  # "<oid> missing": leave it None
        oid, _kind, size_text = header
        size = int(size_text)
        texts[oid] = _text(out[pos : pos + size])
        pos += size + 1  # the content is followed by a newline
    return texts


def _commit_info(
    raw: _RawCommit,
    blobs: dict[str, str | None],
    *,
    with_texts: bool,
    dates: tuple[dt.datetime, dt.datetime],
    skipped: list[str],
) -> CommitInfo:
    subject, body = split_message(raw.message)
    texts: dict[str, tuple[str | None, str | None]] = {}
    for entry in raw.raws if with_texts else ():
        if not _wanted(entry):
            continue
        before_oid = _side_oid(entry.src_mode, entry.src_oid)
        after_oid = _side_oid(entry.dst_mode, entry.dst_oid)
        before = blobs.get(before_oid) if before_oid else None
        after = blobs.get(after_oid) if after_oid else None
        if (before_oid and before is None) or (after_oid and after is None):
            skipped.append(
                f"commit {raw.hash[:12]}: {entry.path} is larger than {MAX_TEXT_BYTES:,} bytes "
                "or unreadable; its settings are skipped"
            )
            continue
        if entry.old_path is not None and not is_config_path(entry.path):
            texts[entry.old_path] = (before, None)  # renamed away from a config name
        elif entry.old_path is not None and not is_config_path(entry.old_path):
            texts[entry.path] = (None, after)  # became a config file by its new name
        else:
            # A rename between config names diffs old contents against new ones, so moving
            # launch.sh to run.sh is not reported as every setting removed and re-added.
            texts[entry.path] = (before, after)
    return CommitInfo(
        hash=raw.hash,
        parents=raw.parents,
        author=raw.author,
        email=raw.email,
        authored_at=dates[0],
        committed_at=dates[1],
        subject=subject,
        body=body,
        files=raw.stats,
        texts=texts,
    )
