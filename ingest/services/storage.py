"""Uploads kept under UPLOAD_ROOT/<incident>/<sha256> and registered as artifacts.

Bytes are hashed while they are written to a temporary ``.part`` file, which is renamed to its
digest, or dropped when the same bytes are stored already: the same bytes twice are one
artifact (unique sha256 per incident).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from django.conf import settings

from ingest import sniff
from ingest.parsers import gitlog, serverlog
from ingest.services import IngestError
from timeline.choices import RunStatus
from timeline.models import Artifact, Incident

PARALLEL_STORE_BYTES = 16 * 1024 * 1024


def upload_dir(incident: Incident) -> Path:
    """The incident's folder under UPLOAD_ROOT (created); never outside it."""
    root = Path(settings.UPLOAD_ROOT).resolve()
    target = (root / incident.slug).resolve()
    if root not in target.parents:
        raise IngestError(f"incident slug {incident.slug!r} would store files outside uploads")
    target.mkdir(parents=True, exist_ok=True)
    return target


STAGE_PREFIX = ".tmp-"


class Stage:
    """The files of one registration, written into a folder of its own under UPLOAD_ROOT
    (``.tmp-<random>``) and moved into place by publish() once the rows that point at them have
    committed. ``staged()`` removes the folder whatever happens: a registration that fails
    leaves nothing on disk."""

    def __init__(self, folder: Path) -> None:
        self.dir = folder
        self._moves: dict[Path, Path] = {}  # final place -> staged copy

    def temp_file(self) -> Path:
        return _temp_file(self.dir)

    def place(self, staged: Path, final: Path) -> None:
        """Move ``staged`` to ``final`` on publish (a file, or a folder kept whole)."""
        self._moves.setdefault(final, staged)

    def planned(self, final: Path) -> bool:
        return final in self._moves

    def publish(self) -> None:
        """Call once the registration committed. What is stored already (the same bytes) is
        left as it is."""
        for final, staged in self._moves.items():
            if not final.exists():
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, final)
        self._moves.clear()


@contextlib.contextmanager
def staged() -> Iterator[Stage]:
    """``with staged() as stage:`` register with ``stage``, commit, then ``stage.publish()``;
    the stage's folder is removed on the way out, on success as on any failure."""
    root = Path(settings.UPLOAD_ROOT).resolve()
    root.mkdir(parents=True, exist_ok=True)
    stage = Stage(Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=root)))
    try:
        yield stage
    finally:
        shutil.rmtree(stage.dir, ignore_errors=True)


def stored_path(artifact: Artifact) -> Path:
    """Where an artifact's bytes are kept."""
    return Path(settings.UPLOAD_ROOT).resolve() / artifact.path


def size_check(name: str, size: int, *, suffix: str = "") -> None:
    """Refuse a file over UPLOAD_MAX_BYTES, before anything of it is stored."""
    if size > settings.UPLOAD_MAX_BYTES:
        raise IngestError(
            f"{name}: {size} bytes is over the limit of {settings.UPLOAD_MAX_BYTES} bytes{suffix}"
        )


def artifact_register_bytes(
    *,
    incident: Incident,
    name: str,
    data: bytes,
    options: dict[str, Any] | None = None,
    user: Any = None,
    stage: Stage | None = None,
) -> tuple[Artifact, bool]:
    """Store the bytes under the incident's upload folder and register them (once per sha256);
    with a ``stage``, they reach that folder when the stage is published.

    Big files are written while they are hashed (both leave the GIL: ~0.5 s saved on 500 MiB);
    the written copy is dropped when the same bytes turn out to be stored already."""
    size_check(name, len(data))
    folder = upload_dir(incident)
    tmp = stage.temp_file() if stage else _temp_file(folder)
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
    return _keep_and_register(
        incident,
        folder,
        tmp,
        name,
        digest,
        len(data),
        (data[: sniff.HEAD_BYTES], data[-sniff.HEAD_BYTES :]),
        options,
        user,
        stage,
    )


def artifact_register_file(
    *,
    incident: Incident,
    name: str,
    path: Path,
    options: dict[str, Any] | None = None,
    user: Any = None,
    stage: Stage | None = None,
) -> tuple[Artifact, bool]:
    """Like artifact_register_bytes for a file on disk: hashed while it is copied, in chunks,
    so registering never holds the whole file in memory."""
    size_check(name, path.stat().st_size)
    folder = upload_dir(incident)
    hasher = hashlib.sha256()
    size = 0
    head = tail = b""
    tmp = stage.temp_file() if stage else _temp_file(folder)
    with open(tmp, "wb") as out:
        try:
            with open(path, "rb") as src:
                while chunk := src.read(1 << 23):
                    if not head:
                        head = chunk[: sniff.HEAD_BYTES]
                    tail = (tail + chunk[-sniff.HEAD_BYTES :])[-sniff.HEAD_BYTES :]
                    size += len(chunk)
                    size_check(name, size)  # the file grew while it was read
                    hasher.update(chunk)
                    out.write(chunk)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    return _keep_and_register(
        incident, folder, tmp, name, hasher.hexdigest(), size, (head, tail), options, user, stage
    )


def _temp_file(folder: Path) -> Path:
    """A new empty ``.part`` file in the upload folder, to be renamed to its digest."""
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".", suffix=".part", delete=False) as out:
        return Path(out.name)


def _keep_and_register(
    incident: Incident,
    folder: Path,
    tmp: Path,
    name: str,
    digest: str,
    size: int,
    ends: tuple[bytes, bytes],
    options: dict[str, Any] | None,
    user: Any,
    stage: Stage | None,
) -> tuple[Artifact, bool]:
    """Move a written copy to its digest's name and register it, or return the artifact that
    holds these bytes already (the copy is dropped then, as it is when the file is stored
    already). Its format is sniffed from its first bytes, else from its last (a dump a program
    appended to its log). Unrecognised files are recorded as failed with the reason, not
    guessed."""
    existing = Artifact.objects.filter(incident=incident, sha256=digest).first()
    final = folder / digest
    if existing is not None or final.exists() or (stage and stage.planned(final)):
        tmp.unlink(missing_ok=True)
    elif stage is not None:
        stage.place(tmp, final)
    else:
        os.replace(tmp, final)
    if existing is not None:
        return existing, False
    head, tail = ends  # the file's first and last bytes
    fmt = sniff.sniff_ends(name, head, tail) if size else None
    return Artifact.objects.get_or_create(
        incident=incident,
        sha256=digest,
        defaults={
            "name": name[-500:],
            "kind": fmt.kind if fmt else "",
            "size": size,
            "path": str((folder / digest).relative_to(Path(settings.UPLOAD_ROOT).resolve())),
            "options": options or {},
            "uploaded_by": user,
            "status": RunStatus.PENDING if fmt else RunStatus.FAILED,
            "error": "" if fmt else unrecognised(name, head, empty=size == 0),
        },
    )


def unrecognised(name: str, data: bytes | None = None, *, empty: bool | None = None) -> str:
    """Why a file has no parser, in words, with the formats that are known."""
    if (empty is None and data is not None and not data) or empty:
        return f"{name}: the file is empty; nothing to ingest"
    what = "not recognised as any known format"
    head = data[: sniff.HEAD_BYTES] if data is not None else b""
    if _looks_binary(head):
        what = "binary data, not text; not recognised as any known format"
    elif layout := gitlog.dateless_git_log(head):
        return (
            f"{name}: this looks like `git log {layout}` output, which this reader cannot place "
            "on the timeline; save the log with `git log -p --parents "
            "--diff-merges=first-parent --unified=100000 --pretty=fuller`, or give the "
            "repository itself"
        )
    elif stamp := serverlog.undated_sglang_log(head):
        return (
            f"{name}: these look like SGLang server log records with {stamp}, not the "
            "[YYYY-MM-DD HH:MM:SS] SGLang's own format puts there, which the timeline needs to "
            "place them; this reader takes SGLang's own line format (current releases print "
            "[YYYY-MM-DD HH:MM:SS] and the ranks before every record; a log shipper's prefix "
            "before that is fine)"
        )
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
