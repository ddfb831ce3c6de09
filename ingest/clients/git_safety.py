"""Where git may run and how: the containment check of a repository and the pinned ``git``
process (environment, options, deadline). The history reader is ``git.py``.

Repositories may come from uploaded bundles, so they are treated as hostile:

* A repository must be self-contained in its own folder. Before git runs at all, ``.git`` must
  be a real folder (not a gitfile, not a symbolic link), with no ``commondir`` file, no
  ``objects/info/alternates`` and no symbolic link inside it that leads out of the folder;
  otherwise :class:`UnsafeRepositoryError`. Every git command goes through :func:`_open`, so no
  entry point can skip the check.
* git runs pinned to that folder: ``GIT_DIR`` / ``GIT_WORK_TREE`` set explicitly, no discovery
  above it, no system or global config, a ``HOME`` where nothing can exist, no hooks,
  ``safe.directory`` naming only this folder, and no ``GIT_*`` variable inherited from the caller.
* git is told not to run anything the repository's own config could ask for (external diff
  drivers, textconv filters, fsmonitor hooks, pagers, signature checks), and never to reach a
  remote: every transport is refused (``protocol.allow=never``), so a partial clone's lazy
  fetch of a missing object cannot run the repository's ``core.sshCommand`` or proxy. A
  partial clone (``extensions.partialClone``, a ``promisor`` remote) is refused before git
  runs: its history is not all in its folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_SELF_CONTAINED = (
    "an uploaded repository must be self-contained: upload a plain clone "
    "(git clone --no-local, then git repack -a -d) with its own .git folder"
)


class UnsafeRepositoryError(ValueError):
    """A repository that reaches outside its own folder; git is never run on it."""


@dataclass(frozen=True)
class Repo:
    """A repository that passed the containment check: where git is pinned to."""

    top: Path  # the folder given, resolved: the work tree, or the bare repository itself
    git_dir: Path
    work_tree: Path | None


def _open(path: Path) -> Repo | None:
    """The repository whose top is ``path`` (None when there is none), checked to be
    self-contained; raises UnsafeRepositoryError when it reaches out of its folder."""
    if not path.is_dir():
        return None
    top = path.resolve()
    dot_git = top / ".git"
    if dot_git.is_symlink():
        raise UnsafeRepositoryError(
            f"{top.name}/.git is a symbolic link; git data reached through links is refused "
            f"({_SELF_CONTAINED})"
        )
    if dot_git.exists() and not dot_git.is_dir():
        raise UnsafeRepositoryError(
            f"{top.name}/.git is a file, not a folder: a gitfile pointing at a repository "
            f"elsewhere, which is refused ({_SELF_CONTAINED})"
        )
    if dot_git.is_dir():
        repo = Repo(top=top, git_dir=dot_git, work_tree=top)
    elif (top / "HEAD").is_file() and (top / "objects").is_dir():
        repo = Repo(top=top, git_dir=top, work_tree=None)  # a bare repository
    else:
        return None
    _check_contained(repo)
    return repo


def _check_contained(repo: Repo) -> None:
    """Refuse the ways a git folder can make git read another repository: ``commondir``,
    alternates, and symbolic links whose target lies outside the repository's folder."""
    label = repo.top.name if repo.work_tree is None else f"{repo.top.name}/.git"
    if os.path.lexists(repo.git_dir / "commondir"):
        raise UnsafeRepositoryError(
            f"{label}/commondir names another repository's git folder to share; "
            f"refused ({_SELF_CONTAINED})"
        )
    for dirpath, dirnames, filenames in os.walk(repo.git_dir):  # links are not followed
        for name in dirnames + filenames:
            entry = Path(dirpath) / name
            if not entry.is_symlink():
                continue
            try:
                target = entry.resolve()
            except (RuntimeError, OSError):  # a loop of links
                target = Path("/")
            if target != repo.top and repo.top not in target.parents:
                rel = entry.relative_to(repo.git_dir)
                raise UnsafeRepositoryError(
                    f"{label}/{rel} is a symbolic link out of the repository's folder; git "
                    f"data reached through links is refused ({_SELF_CONTAINED})"
                )
    config = repo.git_dir / "config"
    if config.is_file() and not config.is_symlink():
        with open(config, "rb") as src:
            text = src.read(1024 * 1024).decode("utf-8", errors="replace").lower()
        if re.search(r"^\s*(?:partialclone|promisor)\s*=", text, re.M):
            raise UnsafeRepositoryError(
                f"{label} is a partial clone: objects it lacks would be fetched from its remote "
                f"when read, so its history is not in its folder; refused ({_SELF_CONTAINED}, "
                "without --filter)"
            )
    for alternates in ("objects/info/alternates", "objects/info/http-alternates"):
        entry = repo.git_dir / alternates
        if not os.path.lexists(entry):
            continue
        if entry.is_file():
            with open(entry, "rb") as src:
                lines = src.read(64 * 1024).decode("utf-8", errors="replace").splitlines()
            if not any(line.strip() and not line.startswith("#") for line in lines):
                continue  # an empty list borrows nothing
        raise UnsafeRepositoryError(
            f"{label}/{alternates} borrows objects from another repository; "
            f"refused ({_SELF_CONTAINED})"
        )


def is_repository(path: Path) -> bool:
    """True when ``path`` is the top of a git work tree (it holds a ``.git`` folder), or a bare
    repository itself. A directory that merely sits inside some other repository is not one.

    Raises UnsafeRepositoryError for a repository that reaches outside its folder.
    """
    return _verified(Path(path)) is not None


def is_repository_root(path: Path) -> bool:
    """Alias of :func:`is_repository`, the name the bundle walk uses."""
    return is_repository(path)


def _verified(path: Path) -> Repo | None:
    """:func:`_open`, then git itself agrees that it is a repository."""
    repo = _open(path)
    if repo is None:
        return None
    try:
        git_output(repo, ["rev-parse", "--git-dir"], time.monotonic() + 10.0)
    except RuntimeError:
        return None  # HEAD and objects/ that are not a repository after all
    return repo


def checked_repository(path: Path) -> Repo:
    repo = _verified(Path(path))
    if repo is None:
        raise ValueError(
            f"{path} is not a git repository: expected the top directory of a work tree "
            "(the one holding .git) or a bare repository"
        )
    return repo


# --- running git --------------------------------------------------------------------------------


# HOME and XDG_CONFIG_HOME for git: a path under which no file can exist, so no user config,
# attributes or ignore file can be planted for it (and no folder is left behind per process).
_NO_HOME = os.path.join(os.devnull, "no-home")


def _env(repo: Repo) -> dict[str, str]:
    # Nothing GIT_* from the caller: GIT_DIR, GIT_ALTERNATE_OBJECT_DIRECTORIES,
    # GIT_CONFIG_PARAMETERS and friends would all point git somewhere else.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_DIR": str(repo.git_dir),
            "GIT_CEILING_DIRECTORIES": str(repo.top.parent),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "HOME": _NO_HOME,
            "XDG_CONFIG_HOME": _NO_HOME,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_PAGER": "cat",
            # No fetch of a missing object (git 2.44 and later; protocol.allow below for older)
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_PROTOCOL_FROM_USER": "0",
            "LC_ALL": "C",
        }
    )
    if repo.work_tree is not None:
        env["GIT_WORK_TREE"] = str(repo.work_tree)
    return env


def _command(repo: Repo, args: list[str]) -> list[str]:
    return [
        "git",
        "--no-pager",
        "-C",
        str(repo.top),
        "-c",
        f"safe.directory={repo.work_tree or repo.git_dir}",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.quotePath=false",
        "-c",
        "log.showSignature=false",
        "-c",
        "protocol.allow=never",
        *args,
    ]


def run_git(
    repo: Repo, args: list[str], deadline: float, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise RuntimeError(f"git {args[0]} in {repo.top}: out of time before it could start")
    try:
        return subprocess.run(
            _command(repo, args),
            input=stdin,
            capture_output=True,
            timeout=remaining,
            env=_env(repo),
            check=False,
        )
    except FileNotFoundError:
        raise _no_git() from None
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"git {args[0]} in {repo.top} timed out (deadline reached)") from None


def _no_git() -> RuntimeError:
    return RuntimeError("the git command-line tool is not installed (no 'git' on PATH)")


def stream_git_records(
    repo: Repo, args: list[str], deadline: float, mark: bytes, parse: Callable[[bytes], T]
) -> list[T]:
    """Run git and ``parse`` each ``mark``-led record of its output as it arrives, so that
    git and the parse share the two cores instead of taking turns."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise RuntimeError(f"git {args[0]} in {repo.top}: out of time before it could start")
    try:
        proc = subprocess.Popen(  # noqa: S603 (fixed argument list, no shell)
            _command(repo, args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(repo),
        )
    except FileNotFoundError:
        raise _no_git() from None
    stdout, stderr_pipe = proc.stdout, proc.stderr
    assert stdout is not None and stderr_pipe is not None
    errors: list[bytes] = []
    drain = threading.Thread(target=lambda: errors.append(stderr_pipe.read()), daemon=True)
    drain.start()
    timer = threading.Timer(remaining, proc.kill)
    timer.start()
    records: list[T] = []
    try:
        pending = b""
        while chunk := stdout.read(1 << 20):
            parts = (pending + chunk).split(mark)
            pending = parts.pop()
            records.extend(parse(part) for part in parts if part)
        if pending:
            records.append(parse(pending))
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        drain.join()
    if code < 0 and time.monotonic() >= deadline:
        raise RuntimeError(f"git {args[0]} in {repo.top} timed out (deadline reached)")
    if code != 0:
        stderr = b"".join(errors).decode("utf-8", errors="replace").strip()
        raise RuntimeError(
            f"git {args[0]} failed in {repo.top} (exit {code}): {stderr or 'no message'}"
        )
    return records


def git_output(repo: Repo, args: list[str], deadline: float, stdin: bytes | None = None) -> bytes:
    proc = run_git(repo, args, deadline, stdin)
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", errors="replace").strip()
        raise RuntimeError(
            f"git {args[0]} failed in {repo.top} (exit {proc.returncode}): {stderr or 'no message'}"
        )
    return proc.stdout
