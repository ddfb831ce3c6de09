"""Progress of a long ingest, visible while its transaction is still open.

The load runs in one transaction, so a progress update made inside it would stay invisible
until the end. The reporter writes through a connection of its own, in autocommit; the loading
transaction does not lock the artifact row (an advisory lock serialises loads instead), so the
two never wait on each other.
"""

from __future__ import annotations

import time

import psycopg
from django.db import connection

MIN_INTERVAL_S = 0.5


class ProgressReporter:
    """Writes ``Artifact.progress`` (0..1) at most every MIN_INTERVAL_S seconds."""

    def __init__(self, artifact_id: int, *, low: float = 0.05, high: float = 0.95) -> None:
        self.artifact_id, self.low, self.high = artifact_id, low, high
        self._conn: psycopg.Connection | None = None
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
                "UPDATE timeline_artifact SET progress = %s WHERE id = %s AND status = 'running'",
                [value, self.artifact_id],
            )
        except psycopg.Error:
            self.close()  # progress is a courtesy: never fail the load over it

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None
