"""Ingest writes: register artifacts (files, repositories, bundles, archives) and load them.

An artifact is loaded in one transaction: a bad file writes nothing and records
``file:line: what was expected`` on its row. The same bytes twice are one artifact.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import mmap
import os
import shutil
import tarfile
import tempfile
import time
import tomllib
import zipfile
import zoneinfo
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from ingest import loaders, sniff, streaming
from ingest.clients import git as git_client
from ingest.parsers import gitlog
from ingest.parsers.types import ParseContext, ParseError, ParseResult
from timeline.choices import RunStatus
from timeline.models import Artifact, Incident

log = logging.getLogger(__name__)

IGNORED_NAMES = {"incident.toml", ".DS_Store", "README.md", "README", "README.txt"}
BUNDLE_DIRS = ("docs", "repo", "metrics", "logs", "harness", "dumps")


class IngestError(Exception):
    """A request to ingest that cannot be carried out (bad path, archive, limits)."""


@dataclass
class BundleSettings:
    title: str = ""
    timezone: str = ""
    last_good: dt.datetime | None = None
    first_bad: dt.datetime | None = None


@dataclass
class RegisterOutcome:
    artifacts: list[Artifact] = field(default_factory=list)
    created: list[Artifact] = field(default_factory=list)
    unrecognised: list[str] = field(default_factory=list)
    settings: BundleSettings = field(default_factory=BundleSettings)


# --- registering ------------------------------------------------------------


PARALLEL_STORE_BYTES = 16 * 1024 * 1024


def _upload_dir(incident: Incident) -> Path:
    root = Path(settings.UPLOAD_ROOT).resolve()
    target = (root / incident.slug).resolve()
    if root not in target.parents:
        raise IngestError(f"incident slug {incident.slug!r} would store files outside uploads")
    target.mkdir(parents=True, exist_ok=True)
    return target


def artifact_register_bytes(
    *,
    incident: Incident,
    name: str,
    data: bytes,
    options: dict[str, Any] | None = None,
    user: Any = None,
) -> tuple[Artifact, bool]:
    """Store the bytes under the incident's upload folder and register them (once per sha256).

    Big files are written while they are hashed (both leave the GIL: ~0.5 s saved on 500 MiB);
    the written copy is dropped when the same bytes turn out to be stored already."""
    _check_size(name, len(data))
    folder = _upload_dir(incident)
    tmp = _temp_file(folder)
    try:
        if len(data) >= PARALLEL_STORE_BYTES:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="store") as pool:
                writing = pool.submit(tmp.write_bytes, data)
                digest = hashlib.sha256(data).hexdigest()
                writing.result()
        else:
            tmp.write_bytes(data)
            digest = hashlib.sha256(data).hexdigest()
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    existing = _keep_stored(incident, folder, tmp, digest)
    if existing is not None:
        return existing, False
    return _register_stored(
        incident=incident,
        name=name,
        digest=digest,
        size=len(data),
        head=data[: sniff.HEAD_BYTES],
        options=options,
        user=user,
    )


def artifact_register_file(
    *,
    incident: Incident,
    name: str,
    path: Path,
    options: dict[str, Any] | None = None,
    user: Any = None,
) -> tuple[Artifact, bool]:
    """Like artifact_register_bytes for a file on disk: hashed while it is copied, in chunks,
    so registering never holds the whole file in memory."""
    _check_size(name, path.stat().st_size)
    folder = _upload_dir(incident)
    hasher = hashlib.sha256()
    size = 0
    head = b""
    tmp = _temp_file(folder)
    with open(tmp, "wb") as out:
        try:
            with open(path, "rb") as src:
                while chunk := src.read(1 << 23):
                    if not head:
                        head = chunk[: sniff.HEAD_BYTES]
                    size += len(chunk)
                    _check_size(name, size)  # the file grew while it was read
                    hasher.update(chunk)
                    out.write(chunk)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    digest = hasher.hexdigest()
    existing = _keep_stored(incident, folder, tmp, digest)
    if existing is not None:
        return existing, False
    return _register_stored(
        incident=incident,
        name=name,
        digest=digest,
        size=size,
        head=head,
        options=options,
        user=user,
    )


def _temp_file(folder: Path) -> Path:
    """A new empty ``.part`` file in the upload folder, to be renamed to its digest."""
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".", suffix=".part", delete=False) as out:
        return Path(out.name)


def _keep_stored(incident: Incident, folder: Path, tmp: Path, digest: str) -> Artifact | None:
    """Move a written copy to its digest's name; returns the artifact that holds these bytes
    already (the copy is dropped then, as it is when the file is stored already)."""
    existing = Artifact.objects.filter(incident=incident, sha256=digest).first()
    if existing is not None or (folder / digest).exists():
        tmp.unlink(missing_ok=True)
    else:
        os.replace(tmp, folder / digest)
    return existing


def _check_size(name: str, size: int) -> None:
    if size > settings.UPLOAD_MAX_BYTES:
        raise IngestError(
            f"{name}: {size} bytes is over the limit of {settings.UPLOAD_MAX_BYTES} bytes"
        )


def _register_stored(
    *,
    incident: Incident,
    name: str,
    digest: str,
    size: int,
    head: bytes,
    options: dict[str, Any] | None,
    user: Any,
) -> tuple[Artifact, bool]:
    """The Artifact row of a file stored under its digest; unrecognised files are recorded
    as failed with the reason, not guessed."""
    fmt = sniff.sniff(name, head) if size else None
    stored = _upload_dir(incident) / digest
    return Artifact.objects.get_or_create(
        incident=incident,
        sha256=digest,
        defaults={
            "name": name[-500:],
            "kind": fmt.kind if fmt else "",
            "size": size,
            "path": str(stored.relative_to(Path(settings.UPLOAD_ROOT).resolve())),
            "options": options or {},
            "uploaded_by": user,
            "status": RunStatus.PENDING if fmt else RunStatus.FAILED,
            "error": "" if fmt else _unrecognised(name, head, empty=size == 0),
        },
    )


def _unrecognised(name: str, data: bytes | None = None, *, empty: bool | None = None) -> str:
    if (empty is None and data is not None and not data) or empty:
        return f"{name}: the file is empty; nothing to ingest"
    what = "not recognised as any known format"
    if data is not None and _looks_binary(data[: sniff.HEAD_BYTES]):
        what = "binary data, not text; not recognised as any known format"
    return f"{name}: {what} (expected one of: {sniff.describe_known()})"


def _looks_binary(head: bytes) -> bool:
    """NUL bytes or bytes that are not UTF-8 (a cut multi-byte character at the end is fine)."""
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 4
    return False


def repository_register(
    *,
    incident: Incident,
    path: Path,
    name: str,
    options: dict[str, Any] | None = None,
    user: Any = None,
) -> tuple[Artifact, bool]:
    """A git repository is one artifact, identified by its name and HEAD commit."""
    head = git_client.head(path)
    digest = hashlib.sha256(f"git_repo\x00{name}\x00{head}".encode()).hexdigest()
    artifact, created = Artifact.objects.get_or_create(
        incident=incident,
        sha256=digest,
        defaults={
            "name": name,
            "kind": sniff.GIT_REPO,
            "path": str(path.resolve()),
            "options": {**(options or {}), "head": head},
            "uploaded_by": user,
        },
    )
    return artifact, created


def read_bundle_settings(path: Path) -> BundleSettings:
    """incident.toml: title, timezone of naive timestamps, operator marks."""
    toml_path = path / "incident.toml"
    if not toml_path.exists():
        return BundleSettings()
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise IngestError(f"{toml_path.name}: {exc}") from None
    tz = str(data.get("timezone", ""))
    if tz:
        try:
            zoneinfo.ZoneInfo(tz)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise IngestError(
                f"incident.toml: timezone {tz!r} is not an IANA zone name "
                "(expected e.g. America/Los_Angeles)"
            ) from None
    marks = data.get("marks", {}) or {}

    def _mark(key: str) -> dt.datetime | None:
        value = marks.get(key)
        if value is None:
            return None
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=zoneinfo.ZoneInfo(tz) if tz else dt.UTC)
            return value.astimezone(dt.UTC)
        raise IngestError(f"incident.toml: marks.{key} must be a date-time, got {value!r}")

    return BundleSettings(
        title=str(data.get("title", "")),
        timezone=tz,
        last_good=_mark("last_good"),
        first_bad=_mark("first_bad"),
    )


def _walk_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        current = Path(dirpath)
        # A git repository is one artifact: do not descend into it.
        for d in list(dirnames):
            if d == ".git" or git_client.is_repository_root(current / d):
                dirnames.remove(d)
        dirnames.sort()
        for name in sorted(filenames):
            p = current / name
            if not p.is_symlink() and p.is_file():
                yield p


def _repositories(root: Path) -> list[Path]:
    found = []
    if git_client.is_repository_root(root):
        return [root]
    for dirpath, dirnames, _ in os.walk(root):
        for d in sorted(dirnames):
            if d != ".git" and git_client.is_repository_root(Path(dirpath) / d):
                found.append(Path(dirpath) / d)
        dirnames[:] = [d for d in dirnames if d != ".git" and Path(dirpath, d) not in found]
    return sorted(found)


@transaction.atomic  # a bundle registers whole or not at all (one oversized file stops it all)
def path_register(
    *,
    incident: Incident,
    path: Path,
    user: Any = None,
    timezone_name: str = "",
    default_time: dt.datetime | None = None,
) -> RegisterOutcome:
    """Register a file, a bundle directory or an archive (.zip / .tar.gz) as artifacts."""
    path = Path(path)
    if not path.exists():
        raise IngestError(f"{path}: no such file or directory")
    outcome = RegisterOutcome()
    if path.is_file() and _is_archive(path):
        path = extract_archive(path, _upload_dir(incident) / "bundles")
    if path.is_dir():
        outcome.settings = read_bundle_settings(path)
    options: dict[str, Any] = {}
    tz = timezone_name or outcome.settings.timezone or incident.timezone
    if tz:
        options["timezone"] = tz
    if default_time is not None:
        options["default_time"] = default_time.astimezone(dt.UTC).isoformat()

    def _add(result: tuple[Artifact, bool]) -> None:
        artifact, created = result
        outcome.artifacts.append(artifact)
        if created:
            outcome.created.append(artifact)
        if artifact.status == RunStatus.FAILED and not artifact.kind:
            outcome.unrecognised.append(artifact.name)

    if path.is_file():
        _add(
            artifact_register_file(
                incident=incident, name=path.name, path=path, options=options, user=user
            )
        )
        return outcome
    try:
        repos = _repositories(path)
        files = list(_walk_files(path))
    except git_client.UnsafeRepositoryError as exc:  # it reaches another repository: refused
        raise IngestError(str(exc)) from None
    for repo in repos:
        name = str(repo.relative_to(path)) if repo != path else repo.name
        _add(
            repository_register(
                incident=incident, path=repo, name=name or path.name, options=options, user=user
            )
        )
    for file in files:
        rel = file.relative_to(path)
        if rel.name in IGNORED_NAMES and len(rel.parts) == 1:
            continue
        _add(
            artifact_register_file(
                incident=incident, name=str(rel), path=file, options=options, user=user
            )
        )
    return outcome


# --- archives ------------------------------------------------------------


def _is_archive(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith((".zip", ".tar.gz", ".tgz", ".tar"))


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


def extract_archive(archive: Path, into: Path) -> Path:
    """Extract into ``into/<sha256>/`` with every member checked; returns the bundle root.

    Members may not leave the folder (``..``, absolute paths, links), and the expanded size and
    member count are bounded (a zip bomb stops at the limit, and nothing of it is kept)."""
    hasher = hashlib.sha256()
    with open(archive, "rb") as src:
        while chunk := src.read(1 << 23):
            hasher.update(chunk)
    digest = hasher.hexdigest()
    target = (into / digest).resolve()
    if target.exists():
        return _bundle_root(target)
    tmp = into / f".{digest}.part"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    limit = settings.ARCHIVE_MAX_EXPANDED_BYTES
    try:
        if archive.name.lower().endswith(".zip"):
            _extract_zip(archive, tmp, limit)
        else:
            _extract_tar(archive, tmp, limit)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise IngestError(f"{archive.name}: not a readable archive ({exc})") from None
    except IngestError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.replace(tmp, target)
    return _bundle_root(target)


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


# --- loading ------------------------------------------------------------


def _context(artifact: Artifact) -> ParseContext:
    opts = artifact.options or {}
    tz_name = opts.get("timezone") or artifact.incident.timezone or "UTC"
    default_time = opts.get("default_time")
    return ParseContext(
        name=artifact.name,
        tz=zoneinfo.ZoneInfo(tz_name),
        default_time=dt.datetime.fromisoformat(default_time) if default_time else None,
    )


def parse_artifact(artifact: Artifact) -> ParseResult:
    """Run the artifact's pure parser (or the git reader for a repository)."""
    ctx = _context(artifact)
    if artifact.kind == sniff.GIT_REPO:
        commits = git_client.read_repository(Path(artifact.path))
        return gitlog.commits_to_result(commits, repo=artifact.name, ctx=ctx)
    data = (Path(settings.UPLOAD_ROOT).resolve() / artifact.path).read_bytes()
    fmt = sniff.BY_KIND.get(artifact.kind)
    if fmt is None:
        # ParseError puts the file name in front itself.
        raise ParseError(artifact.name, 0, _unrecognised(artifact.name)[len(artifact.name) + 2 :])
    return fmt.parse(data, ctx)


def _claim(artifact_id: int) -> bool:
    """Claim the row for this run. A 'running' row is re-claimed: with acks_late, a task is only
    delivered again when the worker that ran it died, and its transaction died with it."""
    return bool(
        Artifact.objects.filter(
            Q(status=RunStatus.PENDING) | Q(status=RunStatus.RUNNING), pk=artifact_id
        ).update(status=RunStatus.RUNNING, started_at=timezone.now(), progress=0.05, error="")
    )


def artifact_ingest(*, artifact_id: int) -> Artifact:
    """Parse and load one artifact in one transaction; idempotent (done rows are left alone)."""
    if not _claim(artifact_id):
        return Artifact.objects.get(pk=artifact_id)
    artifact = Artifact.objects.select_related("incident").get(pk=artifact_id)
    started = time.monotonic()
    if artifact.kind == sniff.KIND_PROMETHEUS_TEXT and artifact.size >= streaming.STREAM_MIN_BYTES:
        streamed = _ingest_streaming(artifact, started)
        if streamed is not None:
            return streamed
    try:
        result = parse_artifact(artifact)
    except (ParseError, ValueError, RuntimeError, OSError) as exc:
        return _fail(
            artifact, str(exc) if isinstance(exc, ParseError) else f"{artifact.name}: {exc}"
        )
    Artifact.objects.filter(pk=artifact.pk).update(progress=0.5)
    parse_s = time.monotonic() - started
    try:
        with transaction.atomic():
            locked = _lock_for_load(artifact)
            if locked.status == RunStatus.DONE:
                return locked
            incident = artifact.incident
            ids = loaders.load_events(incident, locked, result.events)
            changes = loaders.load_config_changes(incident, locked, result.config_changes)
            samples = loaders.load_samples(incident, locked, result.samples)
            locked.status = RunStatus.DONE
            locked.progress = 1.0
            locked.kind = result.kind or locked.kind
            locked.finished_at = timezone.now()
            locked.counts = {
                "events": len(ids),
                "config_changes": changes,
                "samples": samples,
                "series": len(result.samples),
                "warnings": result.warnings[:50],
                "parse_seconds": round(parse_s, 3),
                "seconds": round(time.monotonic() - started, 3),
            }
            locked.save()
    except Exception as exc:  # the transaction rolled back: record why, then re-raise
        log.exception("loading %s failed", artifact.name)
        _fail(artifact, f"{artifact.name}: loading failed: {exc}")
        raise
    return locked


def _lock_for_load(artifact: Artifact) -> Artifact:
    """Serialise loads into one incident (series creation and the sample COPY must not race;
    a redelivered task waits here for the first delivery), then read the row as it is now.

    An advisory lock rather than a row lock, so the progress reporter's own connection can
    still write the artifact's progress while the load runs."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [7411, artifact.incident_id])
    return Artifact.objects.get(pk=artifact.pk)


class _NotStreamed(Exception):
    """The file needs the whole-file path; leave the transaction without writing."""


def _ingest_streaming(artifact: Artifact, started: float) -> Artifact | None:
    """A big Prometheus text file, parsed and COPYed part by part in one transaction.
    Returns None when the file must take the whole-file path (which names any bad line)."""
    # Mapped, not read: the parser takes ~4 MiB pieces of it, and no copy of the whole file is
    # made (~1 s and 500 MiB of memory saved on a 500 MiB file).
    try:
        with open(Path(settings.UPLOAD_ROOT).resolve() / artifact.path, "rb") as src:
            data = mmap.mmap(src.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        return _fail(artifact, f"{artifact.name}: {exc}")
    try:
        with data, transaction.atomic():
            locked = _lock_for_load(artifact)
            if locked.status == RunStatus.DONE:
                return locked
            loaded = streaming.stream_exposition(artifact.incident, locked, data, _context(locked))
            if loaded is None:
                raise _NotStreamed
            samples, series = loaded
            locked.status = RunStatus.DONE
            locked.progress = 1.0
            locked.finished_at = timezone.now()
            locked.counts = {
                "events": 0,
                "config_changes": 0,
                "samples": samples,
                "series": series,
                "warnings": [],
                "streamed": True,
                "seconds": round(time.monotonic() - started, 3),
            }
            locked.save()
    except _NotStreamed:
        return None
    except Exception as exc:  # the transaction rolled back: record why, then re-raise
        log.exception("loading %s failed", artifact.name)
        _fail(artifact, f"{artifact.name}: loading failed: {exc}")
        raise
    return locked


def _fail(artifact: Artifact, message: str) -> Artifact:
    Artifact.objects.filter(pk=artifact.pk).update(
        status=RunStatus.FAILED, error=message[:5000], finished_at=timezone.now(), progress=1.0
    )
    artifact.refresh_from_db()
    return artifact


def artifacts_ingest(
    *, artifacts: list[Artifact], on_progress: Callable[[Artifact], None] | None = None
) -> list[Artifact]:
    """Load several artifacts synchronously (the CLI without a worker)."""
    done = []
    for artifact in artifacts:
        result = artifact_ingest(artifact_id=artifact.pk)
        done.append(result)
        if on_progress:
            on_progress(result)
    return done
