"""Archives (.zip, .tar.gz, .tgz, .tar) extracted into a bundle folder, within safety limits.

Members may not leave the folder (``..``, absolute paths, drive letters, links, devices), and
the expanded size and member count are bounded by ARCHIVE_MAX_EXPANDED_BYTES and
ARCHIVE_MAX_MEMBERS: a zip bomb stops at the limit, and nothing of it is kept.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from django.conf import settings

from ingest.services import IngestError

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")


def is_archive(path: Path) -> bool:
    """By its name, as uploads are named."""
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _safe_member(name: str) -> PurePosixPath:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or (p.parts and ":" in p.parts[0]):
        raise IngestError(f"archive member {name!r} would be written outside its folder")
    return p


def _refuse_gitfile(name: str, rel: PurePosixPath) -> None:
    """A file named .git is a gitfile: git would read whatever repository it names."""
    if rel.name == ".git":
        raise IngestError(
            f"archive member {name!r} is a gitfile (a .git file pointing at a repository "
            "elsewhere); a repository must be uploaded with its own .git folder"
        )


def file_digest(archive: Path) -> str:
    hasher = hashlib.sha256()
    with open(archive, "rb") as src:
        while chunk := src.read(1 << 23):
            hasher.update(chunk)
    return hasher.hexdigest()


def extract_archive(archive: Path, dest: Path) -> Path:
    """Extract into the new folder ``dest`` with every member checked; returns the bundle root
    (``dest`` or the one folder in it). A refused archive leaves no ``dest`` behind. Callers
    extract into a registration's stage (storage.staged), removed whatever happens next."""
    dest.mkdir(parents=True)
    limit = settings.ARCHIVE_MAX_EXPANDED_BYTES
    try:
        if archive.name.lower().endswith(".zip"):
            _extract_zip(archive, dest, limit)
        else:
            _extract_tar(archive, dest, limit)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise IngestError(f"{archive.name}: not a readable archive ({exc})") from None
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return _bundle_root(dest)


def _bundle_root(folder: Path) -> Path:
    """An archive of ``dsv4-wedge/...`` has the bundle one level down."""
    entries = [p for p in folder.iterdir() if not p.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir() and not (folder / "incident.toml").exists():
        return entries[0]
    return folder


def _check_budget(name: str, total: int, count: int, limit: int) -> None:
    if total > limit:
        raise IngestError(f"archive expands past the limit of {limit} bytes at member {name!r}")
    if count > settings.ARCHIVE_MAX_MEMBERS:
        raise IngestError(
            f"archive has more than {settings.ARCHIVE_MAX_MEMBERS} members (at {name!r})"
        )


def _extract_zip(archive: Path, dest: Path, limit: int) -> None:
    total = 0
    with zipfile.ZipFile(archive) as zf:
        for count, info in enumerate(zf.infolist(), start=1):
            rel = _safe_member(info.filename)
            _check_budget(info.filename, total, count, limit)
            if info.is_dir():
                (dest / rel).mkdir(parents=True, exist_ok=True)
                continue
            _refuse_gitfile(info.filename, rel)
            mode = (info.external_attr >> 16) & 0o170000
            if mode == 0o120000:
                raise IngestError(f"archive member {info.filename!r} is a link; links are refused")
            out = dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(out, "wb") as dst:
                # Count what is really written: declared sizes in a zip can lie.
                while chunk := src.read(1 << 20):
                    total += len(chunk)
                    _check_budget(info.filename, total, count, limit)
                    dst.write(chunk)


def _extract_tar(archive: Path, dest: Path, limit: int) -> None:
    total = 0
    with tarfile.open(archive, "r:*") as tf:
        for count, member in enumerate(tf, start=1):
            rel = _safe_member(member.name)
            _check_budget(member.name, total, count, limit)
            if member.isdir():
                (dest / rel).mkdir(parents=True, exist_ok=True)
                continue
            if not member.isfile():
                raise IngestError(
                    f"archive member {member.name!r} is not a regular file; links and devices "
                    "are refused"
                )
            _refuse_gitfile(member.name, rel)
            out = dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            src = tf.extractfile(member)
            if src is None:
                continue
            with src, open(out, "wb") as dst:
                while chunk := src.read(1 << 20):
                    total += len(chunk)
                    _check_budget(member.name, total, count, limit)
                    dst.write(chunk)
