"""Claims on running work (artifact loads, analyses): who runs a row, and a heartbeat that says
the process is still alive.

A worker claims a row by writing ``claimed_by`` ("host:pid") and ``heartbeat_at``; while the
run lasts, a thread of the same process writes ``heartbeat_at`` every WORKER_HEARTBEAT_S
through a connection of its own, in autocommit (the run's transaction would hide it). A
process that dies (SIGKILL, OOM, a lost machine) stops beating: once the beat is older than
``stale_after()``, the reaper (ingest.services.reaper) hands the row to another worker.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
from types import TracebackType
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection
from django.utils import timezone

from timeline.choices import RunStatus

log = logging.getLogger(__name__)

STALE_BEATS = 3  # a row is orphaned once this many beats in a row are missing


def worker_id() -> str:
    """This process, as a claim names it."""
    return f"{socket.gethostname()}:{os.getpid()}"[:300]


def stale_after() -> dt.timedelta:
    """How old a heartbeat is when its process is taken for dead."""
    return dt.timedelta(seconds=STALE_BEATS * settings.WORKER_HEARTBEAT_S)


def stale_before(now: dt.datetime | None = None) -> dt.datetime:
    return (now or timezone.now()) - stale_after()


class Heartbeat:
    """``with Heartbeat("timeline_artifact", pk, claimed_by):`` beats while the block runs.

    Only the claim's owner beats (a row re-claimed by another worker is left to it), and only
    while the row is running. A beat that cannot be written is logged and tried again: the
    heartbeat never fails the run it watches."""

    def __init__(self, table: str, pk: int, claimed_by: str) -> None:
        if table not in ("timeline_artifact", "timeline_analysis"):
            raise ValueError(f"no run claims in {table!r}")
        self.table, self.pk, self.claimed_by = table, pk, claimed_by
        self.interval = float(settings.WORKER_HEARTBEAT_S)
        self._stop = threading.Event()
        self._params: dict[str, Any] = {}
        self._thread: threading.Thread | None = None
        self.beats = 0

    def __enter__(self) -> Heartbeat:
        params = connection.get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        self._params = params
        self._thread = threading.Thread(
            target=self._run, name=f"heartbeat-{self.table}-{self.pk}", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        sql = (
            f"UPDATE {self.table} SET heartbeat_at = now() "  # noqa: S608 (table checked above)
            "WHERE id = %s AND claimed_by = %s AND status = %s"
        )
        try:
            # The claim wrote the first beat; the next is due one interval later.
            while not self._stop.wait(self.interval):
                try:
                    if conn is None:
                        conn = psycopg.connect(**self._params, autocommit=True, connect_timeout=5)
                        conn.execute("SET synchronous_commit = off")
                        # The run's own transaction may hold the row at its very end: wait a
                        # little, never for the whole of it.
                        conn.execute("SET lock_timeout = '2s'")
                    conn.execute(sql, [self.pk, self.claimed_by, RunStatus.RUNNING.value])
                    self.beats += 1
                except psycopg.Error as exc:
                    log.warning("heartbeat of %s %s not written: %s", self.table, self.pk, exc)
                    if conn is not None:
                        conn.close()
                    conn = None
        finally:
            if conn is not None:
                conn.close()
