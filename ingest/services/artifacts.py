"""An artifact's run state, written here only: claimed, progress, done (with its counts), failed.

The load runs in one transaction, so a progress update made inside it would stay invisible
until the end. ProgressReporter writes through a connection of its own, in autocommit; the
loading transaction does not lock the artifact row (an advisory lock serialises loads
instead), so the two never wait on each other.
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import F, Q
from django.utils import timezone

from timeline.choices import RunStatus
from timeline.models import Artifact

MIN_INTERVAL_S = 0.5


def artifact_claim(*, artifact_id: int, worker: str) -> bool:
    """Claim the row for this run, as ``worker`` (timeline.runs.worker_id). A 'running' row is
    re-claimed: a task is only delivered again when the worker that ran it died (acks_late) or
    stopped beating (the reaper), and its transaction died with it; were it still alive, the
    load's advisory lock and its 'done' check keep the load to one."""
    now = timezone.now()
    return bool(
        Artifact.objects.filter(
            Q(status=RunStatus.PENDING) | Q(status=RunStatus.RUNNING), pk=artifact_id
        ).update(
            status=RunStatus.RUNNING,
            started_at=now,
            progress=0.05,
            error="",
            claimed_by=worker,
            heartbeat_at=now,
            attempts=F("attempts") + 1,
        )
    )


def artifact_progress(*, artifact_id: int, progress: float) -> None:
    """Progress written outside any load transaction (visible at once)."""
    Artifact.objects.filter(pk=artifact_id).update(progress=progress)


def artifact_done(*, artifact: Artifact, counts: dict[str, Any], kind: str = "") -> Artifact:
    """Record a finished load on the row, in the load's transaction (it commits with the rows
    it loaded): status, counts of what was written, and the kind the parser settled on."""
    artifact.status = RunStatus.DONE
    artifact.progress = 1.0
    artifact.kind = kind or artifact.kind
    artifact.finished_at = timezone.now()
    artifact.counts = counts
    artifact.save(update_fields=["status", "progress", "kind", "finished_at", "counts"])
    return artifact


def artifact_fail(*, artifact: Artifact, message: str) -> Artifact:
    """Record why a load failed (after its transaction rolled back) and read the row back.
    Server paths in the message are cut to what the user gave (see :func:`public_text`)."""
    if artifact.path:  # the stored copy (a file, or a repository's folder) is the named file
        for root in {Path(settings.UPLOAD_ROOT), Path(settings.UPLOAD_ROOT).resolve()}:
            message = message.replace(str(root / artifact.path), artifact.name)
    Artifact.objects.filter(pk=artifact.pk).update(
        status=RunStatus.FAILED,
        error=public_text(message)[:5000],
        finished_at=timezone.now(),
        progress=1.0,
    )
    artifact.refresh_from_db()
    return artifact


_ABSOLUTE_PATH = re.compile(r"(?<![\w.])/(?:[^\s/'\"]+/)+([^\s/'\"]*)")


def unexpected_message(name: str, exc: BaseException) -> str:
    """What a user reads when a load stopped on an error no parser or loader names itself: the
    file, the kind of error and its first line, with no server path or SQL in it (the traceback
    goes to the worker's log)."""
    kind = type(exc).__name__
    if isinstance(exc, DatabaseError):
        detail = "the database refused the file's rows"
    else:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        detail = _ABSOLUTE_PATH.sub(lambda m: m.group(1) or "/", text)[:200]
    detail = f": {detail}" if detail else ""
    return f"{name}: the ingest stopped on an unexpected error ({kind}{detail}); nothing was stored"


# An absolute path under a folder of the server (the upload root, a temporary folder, a home).
_SERVER_PATH = re.compile(
    r"(?<![\w.:/~-])/(?:tmp|var|home|root|srv|opt|usr|data|work|mnt|run|private|Users|etc)"
    r"(?:/[^\s'\"/:,;()]+)+"
)


def public_text(message: str) -> str:
    """A message for users: paths under the upload root become relative to it (below the
    incident's folder and the digest or extraction folder: the name the user gave), and any
    other absolute server path is cut to its last part."""
    roots = {Path(settings.UPLOAD_ROOT), Path(tempfile.gettempdir()), Path(settings.BASE_DIR)}
    roots |= {root.resolve() for root in roots}
    for root in sorted(roots, key=lambda p: len(str(p)), reverse=True):
        prefix = str(root).rstrip("/") + "/"
        message = re.sub(re.escape(prefix) + r"(?:\.tmp/)?(?:[^\s'\"/]+/)?", "", message)
    return _SERVER_PATH.sub(lambda m: Path(m.group()).name, message)


class ProgressReporter:
    """Writes ``Artifact.progress`` (0..1) at most every MIN_INTERVAL_S seconds."""

    def __init__(self, artifact_id: int, *, low: float = 0.05, high: float = 0.95) -> None:
        self.artifact_id, self.low, self.high = artifact_id, low, high
        self._conn: psycopg.Connection[Any] | None = None
        self._last = 0.0

    def report(self, fraction: float) -> None:
        now = time.monotonic()
        if now - self._last < MIN_INTERVAL_S:
            return
        self._last = now
        value = self.low + (self.high - self.low) * min(max(fraction, 0.0), 1.0)
        try:
            if self._conn is None:
                params = connection.get_connection_params()
                params.pop("cursor_factory", None)
                params.pop("context", None)
                self._conn = psycopg.connect(**params, autocommit=True, connect_timeout=5)
                # A progress figure lost in a crash is harmless: do not wait for the WAL flush
                # of each one (~60 ms apiece while a big COPY fills the WAL).
                self._conn.execute("SET synchronous_commit = off")
            self._conn.execute(
                "UPDATE timeline_artifact SET progress = %s WHERE id = %s AND status = %s",
                [value, self.artifact_id, RunStatus.RUNNING.value],
            )
        except psycopg.Error:
            self.close()  # progress is a courtesy: never fail the load over it

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None
