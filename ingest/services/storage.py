"""Uploads kept under UPLOAD_ROOT/<incident>/<sha256> and registered as artifacts.

Bytes are hashed while they are written to a temporary ``.part`` file, which is renamed to its
digest, or dropped when the same bytes are stored already: the same bytes twice are one
artifact (unique sha256 per incident).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from django.conf import settings

from ingest import sniff
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


def scratch_dir() -> Path:
    """A folder under UPLOAD_ROOT for uploads on their way (archives being extracted)."""
    root = Path(settings.UPLOAD_ROOT) / ".tmp"
    root.mkdir(parents=True, exist_ok=True)
    return root


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
) -> tuple[Artifact, bool]:
    """Store the bytes under the incident's upload folder and register them (once per sha256).

    Big files are written while they are hashed (both leave the GIL: ~0.5 s saved on 500 MiB);
    the written copy is dropped when the same bytes turn out to be stored already."""
    size_check(name, len(data))
    folder = upload_dir(incident)
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
    return _keep_and_register(
        incident, folder, tmp, name, digest, len(data), data[: sniff.HEAD_BYTES], options, user
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
    size_check(name, path.stat().st_size)
    folder = upload_dir(incident)
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
                    size_check(name, size)  # the file grew while it was read
                    hasher.update(chunk)
                    out.write(chunk)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    return _keep_and_register(
        incident, folder, tmp, name, hasher.hexdigest(), size, head, options, user
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
    head: bytes,
    options: dict[str, Any] | None,
    user: Any,
) -> tuple[Artifact, bool]:
    """Move a written copy to its digest's name and register it, or return the artifact that
    holds these bytes already (the copy is dropped then, as it is when the file is stored
    already). Unrecognised files are recorded as failed with the reason, not guessed."""
    existing = Artifact.objects.filter(incident=incident, sha256=digest).first()
    if existing is not None or (folder / digest).exists():
        tmp.unlink(missing_ok=True)
    else:
        os.replace(tmp, folder / digest)
    if existing is not None:
        return existing, False
    fmt = sniff.sniff(name, head) if size else None
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
