"""Files under UPLOAD_ROOT that no artifact points to, removed (beat: ``ingest.uploads_sweep``,
or ``manage.py uploads_sweep``).

What a registration writes stays in its stage until its rows commit (storage.staged), so an
orphan is the rest of something that stopped half-way: a process killed mid-upload, files kept
by an older version of the product, an archive's folder whose repository is gone. Anything
younger than the grace period is left alone (an upload in flight is never swept), and links
are removed as links, never followed out of the folder.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from timeline.models import Artifact


@dataclass
class Swept:
    removed: list[str] = field(default_factory=list)  # relative to UPLOAD_ROOT
    freed_bytes: int = 0
    kept_young: int = 0  # orphans younger than the grace period


def uploads_sweep(*, grace_s: float | None = None, dry_run: bool = False) -> Swept:
    """Remove what no artifact row points to and nothing wrote for ``grace_s`` seconds."""
    root = Path(settings.UPLOAD_ROOT).resolve()
    out = Swept()
    if not root.is_dir():
        return out
    grace = settings.UPLOADS_SWEEP_GRACE_S if grace_s is None else grace_s
    cutoff = time.time() - grace
    candidates = _orphan_candidates(root, *_referenced(root))
    # Read again after the listing: a file at its final place had its row committed before it
    # got there (storage.Stage.publish), so it is referenced now.
    keep, holding = _referenced(root)
    for path in candidates:
        if path in keep or path in holding:
            continue
        newest, size = _newest_and_size(path)
        if newest >= cutoff:
            out.kept_young += 1
            continue
        out.removed.append(str(path.relative_to(root)))
        out.freed_bytes += size
        if not dry_run:
            _remove(path)
    return out


def _referenced(root: Path) -> tuple[set[Path], set[Path]]:
    """Every path under ``root`` an artifact points to (a stored file, a repository's folder),
    and every folder that holds one of them."""
    keep: set[Path] = set()
    for raw in Artifact.objects.exclude(path="").values_list("path", flat=True).iterator():
        path = Path(os.path.normpath(root / raw))  # an absolute path stays as it is
        if path.is_relative_to(root) and path != root:
            keep.add(path)
    holding = {parent for path in keep for parent in path.parents if parent.is_relative_to(root)}
    return keep, holding


def _orphan_candidates(root: Path, keep: set[Path], holding: set[Path]) -> list[Path]:
    """Entries that may be unreferenced: every file and link, and every folder nothing
    referenced lies in (judged whole); folders holding referenced paths are walked into."""
    found: list[Path] = []

    def walk(folder: Path) -> None:
        with os.scandir(folder) as entries:
            for entry in entries:
                path = Path(entry.path)
                if path in keep:
                    continue
                if path in holding and entry.is_dir(follow_symlinks=False):
                    walk(path)
                else:
                    found.append(path)

    walk(root)
    return found


def _newest_and_size(path: Path) -> tuple[float, int]:
    """The latest modification in ``path`` (a folder: anything in it) and its size in bytes;
    links are looked at, not followed."""
    st = path.lstat()
    newest, size = st.st_mtime, st.st_size if stat.S_ISREG(st.st_mode) else 0
    if stat.S_ISDIR(st.st_mode):
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            for name in dirnames + filenames:
                try:
                    child = os.lstat(os.path.join(dirpath, name))
                except FileNotFoundError:
                    continue
                newest = max(newest, child.st_mtime)
                if stat.S_ISREG(child.st_mode):
                    size += child.st_size
    return newest, size


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)  # removes links inside, never what they name
    else:
        path.unlink(missing_ok=True)
