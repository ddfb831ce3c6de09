"""A file, a bundle directory or an archive registered as artifacts; incident.toml read.

A bundle is a directory (see FORMATS.md): every file in it is one artifact, every git
repository in it is one artifact (its history, not the files of its work tree: a directory that
is itself a repository registers that one artifact), and ``incident.toml`` at its top names the
title, the timezone of naive timestamps and the operator's marks.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import tomllib
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from ingest import sniff
from ingest.clients import git as git_client
from ingest.clients import git_safety
from ingest.services import IngestError, archives, storage
from timeline.models import Artifact, Incident

IGNORED_NAMES = {"incident.toml", ".DS_Store", "README.md", "README", "README.txt"}


@dataclass
class BundleSettings:
    """What incident.toml says; marks are aware UTC datetimes."""

    title: str = ""
    timezone: str = ""
    last_good: dt.datetime | None = None
    first_bad: dt.datetime | None = None


@dataclass
class RegisterOutcome:
    artifacts: list[Artifact] = field(default_factory=list)
    created: list[Artifact] = field(default_factory=list)
    settings: BundleSettings = field(default_factory=BundleSettings)


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


def repository_register(
    *,
    incident: Incident,
    path: Path,
    name: str,
    options: dict[str, Any] | None = None,
    user: Any = None,
    kept_at: Path | None = None,
) -> tuple[Artifact, bool]:
    """A git repository is one artifact, identified by its name and HEAD commit; it is read
    where it is, or at ``kept_at`` (where a stage moves it once registered)."""
    head = git_client.head(path)
    digest = hashlib.sha256(f"git_repo\x00{name}\x00{head}".encode()).hexdigest()
    artifact, created = Artifact.objects.get_or_create(
        incident=incident,
        sha256=digest,
        defaults={
            "name": name,
            "kind": sniff.GIT_REPO,
            "path": str((kept_at or path).resolve()),
            "options": {**(options or {}), "head": head},
            "uploaded_by": user,
        },
    )
    return artifact, created


def _walk_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        current = Path(dirpath)
        # A git repository is one artifact: do not descend into it.
        for d in list(dirnames):
            if d == ".git" or git_safety.is_repository_root(current / d):
                dirnames.remove(d)
        dirnames.sort()
        for name in sorted(filenames):
            p = current / name
            if not p.is_symlink() and p.is_file():
                yield p


def _repositories(root: Path) -> list[Path]:
    found = []
    if git_safety.is_repository_root(root):
        return [root]
    for dirpath, dirnames, _ in os.walk(root):
        for d in sorted(dirnames):
            if d != ".git" and git_safety.is_repository_root(Path(dirpath) / d):
                found.append(Path(dirpath) / d)
        dirnames[:] = [d for d in dirnames if d != ".git" and Path(dirpath, d) not in found]
    return sorted(found)


def path_register(
    *,
    incident: Incident,
    path: Path,
    user: Any = None,
    timezone_name: str = "",
    default_time: dt.datetime | None = None,
    stage: storage.Stage | None = None,
) -> RegisterOutcome:
    """Register a file, a bundle directory or an archive (.zip / .tar.gz) as artifacts, whole
    or not at all. What is stored is written into ``stage`` (storage.staged), which the caller
    publishes once its transaction committed; without one, this call stages, commits and
    publishes itself. Either way a refused registration leaves no file behind."""
    if stage is not None:
        return _register(incident, Path(path), user, timezone_name, default_time, stage)
    with storage.staged() as own:
        outcome = _register(incident, Path(path), user, timezone_name, default_time, own)
        own.publish()
    return outcome


@transaction.atomic  # a bundle registers whole or not at all (one oversized file stops it all)
def _register(
    incident: Incident,
    path: Path,
    user: Any,
    timezone_name: str,
    default_time: dt.datetime | None,
    stage: storage.Stage,
) -> RegisterOutcome:
    if not path.exists():
        raise IngestError(f"{path}: no such file or directory")
    outcome = RegisterOutcome()
    # An archive is extracted into the stage; its folder is kept (under bundles/<sha256>) only
    # when a repository in it is registered, since a repository is read where it is.
    tree = stage.dir / "tree"
    kept_tree: Path | None = None
    kept: Path | None = None  # where the bundle root will be
    if path.is_file() and archives.is_archive(path):
        kept_tree = storage.upload_dir(incident) / "bundles" / archives.file_digest(path)
        path = archives.extract_archive(path, tree)
        kept = kept_tree / path.relative_to(tree)
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

    if path.is_file():
        _add(
            storage.artifact_register_file(
                incident=incident,
                name=path.name,
                path=path,
                options=options,
                user=user,
                stage=stage,
            )
        )
        return outcome
    try:
        repos = _repositories(path)
        # A repository given as the path is its history: the files of its work tree are what
        # the commits recorded (and mostly not evidence at all: sources, tests, lock files).
        files = [] if repos == [path] else list(_walk_files(path))
    except git_safety.UnsafeRepositoryError as exc:  # it reaches another repository: refused
        raise IngestError(str(exc)) from None
    for repo in repos:
        name = str(repo.relative_to(path)) if repo != path else repo.name
        artifact, created = repository_register(
            incident=incident,
            path=repo,
            name=name or path.name,
            options=options,
            user=user,
            kept_at=kept / repo.relative_to(path) if kept else None,
        )
        _add((artifact, created))
        if created and kept_tree:
            stage.place(tree, kept_tree)
    for file in files:
        rel = file.relative_to(path)
        if rel.name in IGNORED_NAMES and len(rel.parts) == 1:
            continue
        _add(
            storage.artifact_register_file(
                incident=incident, name=str(rel), path=file, options=options, user=user, stage=stage
            )
        )
    return outcome
