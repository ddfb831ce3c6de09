"""What ``access.incident_by_session`` proved, kept in this process until Postgres says that
something it rests on changed.

The figure's JSON and the version poll prove on every request that the session cookie may see
the incident, in one query (``access._FusedQuery``). That round trip is a fifth of a small
window's time in the process and more over HTTP (the web process, Postgres and the client wake
each other: measured 2.09 -> 1.63 ms a 20 min ``timeline.json`` with the answer kept). So a
proof is kept, keyed by session key and incident slug, and **all** proofs are forgotten when:

- Postgres announces a change (migration 0021: ``NOTIFY timeline_proofs`` from any statement
  that writes sessions, users, team members, incidents or an incident's change log, which is
  what its version is made of). This process LISTENs on a connection of its own and reads what
  arrived before each lookup, and a thread reads it while no request comes;
- this process writes anything through Django (``note_writes``: at once, and again when the
  transaction commits), so its own logout or upload is never answered from an older proof;
- the listening connection is lost or cannot be made (nothing is kept until it is back);
- the proof is a minute old, or the session's expiry passed.

A change committed by another process reaches this one a few microseconds after its commit
(p99 14-28 us measured here, rarely up to ~10 ms on a loaded machine): a request arriving in
that gap is answered as it would have been just before the change, as a request that raced
the change would have been. A request run inside a transaction (tests, management commands)
never uses or keeps a proof.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
import select
import threading
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone
from psycopg import pq

log = logging.getLogger(__name__)

CHANNEL = "timeline_proofs"  # migration 0021
TTL_SECONDS = 60.0
MAX_PROOFS = 10_000
RETRY_SECONDS = 1.0
IDLE_WAKE_SECONDS = 30.0


@dataclass(frozen=True)
class Proof:
    """One session's proven access to one incident, as the fused query read it."""

    expires: dt.datetime
    user_values: tuple[Any, ...]
    incident_values: tuple[Any, ...]
    version: str
    kept_at: float


class Proofs:
    """The proofs of this process, and the LISTEN connection that says when to forget them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proofs: dict[tuple[str, str], Proof] = {}
        self._generation = 0
        self._conn: psycopg.Connection[Any] | None = None
        self._pid = os.getpid()
        self._retry_at = 0.0
        # A forked child's copy of its parent's connection: kept referenced, never closed
        # from the child (closing would end the parent's session on the shared socket).
        self._inherited: list[Any] = []

    # --- for access.incident_by_session ---------------------------------------------------

    def lookup(self, key: str, slug: str) -> tuple[Proof | None, int | None]:
        """The proof kept for this session and incident (or None), and a ticket for ``keep``
        (None when nothing may be kept now)."""
        if not settings.SESSION_PROOFS or connection.in_atomic_block:
            return None, None
        with self._lock:
            if not self._listening():
                return None, None
            self._drain()
            if self._conn is None:
                return None, None
            proof = self._proofs.get((key, slug))
            if proof is not None and (
                time.monotonic() - proof.kept_at > TTL_SECONDS or proof.expires <= timezone.now()
            ):
                del self._proofs[(key, slug)]
                proof = None
            return proof, self._generation

    def keep(self, ticket: int | None, key: str, slug: str, proof: Proof) -> None:
        """Keep a proof made since ``lookup`` gave ``ticket``, unless anything was announced
        or written in between (the proof may predate that change)."""
        if ticket is None:
            return
        with self._lock:
            if self._conn is None:
                return
            self._drain()
            if self._generation != ticket or self._conn is None:
                return
            if len(self._proofs) >= MAX_PROOFS:
                self._proofs.clear()
            self._proofs[(key, slug)] = proof

    def forget(self) -> None:
        """Forget every proof (a write of this process; an announcement)."""
        with self._lock:
            self._forget()

    def kept(self) -> int:
        with self._lock:
            return len(self._proofs)

    def listening(self) -> bool:
        """Whether this process is listening now (for tests and the health of a worker)."""
        with self._lock:
            return self._conn is not None and self._pid == os.getpid()

    def listener_pid(self) -> int | None:
        """The Postgres backend that listens for this process (None when none does)."""
        with self._lock:
            return None if self._conn is None else self._conn.info.backend_pid

    def close(self) -> None:
        """Stop listening and forget every proof (the next lookup listens again): before the
        database this process listens on is dropped (the test database, at the end of a run)."""
        with self._lock:
            conn, self._conn, self._retry_at = self._conn, None, 0.0
            self._forget()
        if conn is not None and self._pid == os.getpid():
            with contextlib.suppress(Exception):
                conn.close()

    # --- the listening connection (called with the lock held) -----------------------------

    def _forget(self) -> None:
        self._generation += 1
        self._proofs.clear()

    def _listening(self) -> bool:
        if self._pid != os.getpid():  # a forked worker: its own connection, nothing inherited
            if self._conn is not None:
                self._inherited.append(self._conn)
            self._conn, self._pid, self._retry_at = None, os.getpid(), 0.0
            self._forget()
        if self._conn is not None:
            return True
        if time.monotonic() < self._retry_at:
            return False
        params = {
            k: v
            for k, v in connection.get_connection_params().items()
            if k not in ("cursor_factory", "context", "prepare_threshold")
        }
        try:
            conn = psycopg.connect(**params, autocommit=True, connect_timeout=2)
            conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as exc:
            self._retry_at = time.monotonic() + RETRY_SECONDS
            log.warning("proofs: cannot listen for changes (%s); each request is proved", exc)
            return False
        # What was announced before LISTEN took effect is unknown: start from nothing.
        self._conn = conn
        self._forget()
        threading.Thread(
            target=self._watch, args=(conn,), name="timeline-proofs", daemon=True
        ).start()
        return True

    def _drain(self) -> None:
        """Read what arrived; any announcement forgets everything; a lost connection too."""
        conn = self._conn
        if conn is None:
            return
        pg = conn.pgconn
        announced = broken = False
        try:
            pg.consume_input()
            while pg.notifies() is not None:
                announced = True
            broken = pg.status != pq.ConnStatus.OK
        except psycopg.Error:
            broken = True
        if announced or broken:
            self._forget()
        if broken:
            log.warning("proofs: the listening connection was lost; listening again")
            with contextlib.suppress(Exception):
                conn.close()
            self._conn = None
            self._retry_at = time.monotonic() + RETRY_SECONDS

    def _watch(self, conn: psycopg.Connection[Any]) -> None:
        """While no request comes, read announcements as they arrive (Postgres would otherwise
        queue them for this connection without end)."""
        while True:
            try:
                select.select([conn.pgconn.socket], [], [], IDLE_WAKE_SECONDS)
            except (OSError, ValueError, psycopg.Error):
                time.sleep(RETRY_SECONDS)
            with self._lock:
                if self._conn is not conn:
                    return
                self._drain()
                if self._conn is not conn:
                    return


PROOFS = Proofs()

# Statements that cannot change what a proof rests on; anything else run through Django by
# this process forgets every proof (only ever more often than needed).
_READS = re.compile(
    r"\s*(SELECT|SHOW|EXPLAIN|SAVEPOINT|RELEASE|ROLLBACK|SET|BEGIN|FETCH|CLOSE|LISTEN)\b",
    re.IGNORECASE,
)


def _forget_on_commit() -> None:
    PROOFS.forget()


def note_writes(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    """An execute wrapper on every Django connection of this process (apps.ready): a write
    forgets the proofs at once and, in a transaction, again once it commits."""
    try:
        return execute(sql, params, many, context)
    finally:
        if not (isinstance(sql, str) and _READS.match(sql)):
            PROOFS.forget()
            db: BaseDatabaseWrapper = context["connection"]
            if db.in_atomic_block and not any(
                entry[1] is _forget_on_commit for entry in db.run_on_commit
            ):
                transaction.on_commit(_forget_on_commit, using=db.alias)


def watch_connection(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """``connection_created``: put ``note_writes`` on the wrapper once."""
    if note_writes not in connection.execute_wrappers:
        # First: ``connection.execute_wrapper()`` pops the last one when its block ends.
        connection.execute_wrappers.insert(0, note_writes)
