"""Private copies of the real services for fault tests: a redis-server and an embedded Postgres
that a test may stop and restart without touching the machine's shared ones."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

REDIS_SERVER = shutil.which("redis-server") or "redis-server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class OwnRedis:
    """A redis-server on a free loopback port, no persistence; stop() and start() at will."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        out = open(self.log, "ab")  # noqa: SIM115  (the process owns it until stop)
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1"]
            + ["--save", "", "--appendonly", "no"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 20
        while not port_answers(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start; see {self.log}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)

    def client(self):  # noqa: ANN201
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)


@contextlib.contextmanager
def broker_at(url: str) -> Iterator[None]:
    """Point this process's Celery app at another broker, then back (pools rebuilt both ways)."""
    from timeline.celery import app

    def reset() -> None:
        # Only drop the references: the pools live on in kombu's registry, keyed by URL, and a
        # closed one would be handed back the next time that URL is used.
        app._pool = None
        app.amqp._producer_pool = None

    old = app.conf.broker_url
    reset()
    app.conf.broker_url = url
    try:
        yield
    finally:
        reset()
        app.conf.broker_url = old
