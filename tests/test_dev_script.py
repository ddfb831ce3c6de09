"""./dev run and ./dev stop (issue #15, point 10), run for real: the port is checked before
anything starts, and everything a run started is stopped on Ctrl-C, on failure, or by ./dev stop.

The runs use the embedded Postgres and Redis (no DATABASE_URL / REDIS_URL, as a newcomer has),
in a data folder of their own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT / "dev"


def _venv_ready() -> bool:
    """./dev run installs first; with a fresh .venv that is a full pip install, so these tests
    run where ./dev test has set the project's .venv up (CI does) and skip elsewhere."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]
    return (ROOT / ".venv" / f".installed-{digest}").exists()


needs_venv = pytest.mark.skipif(not _venv_ready(), reason="needs the .venv that ./dev test sets up")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "PORT"}}
    env["TIMELINE_DATA_DIR"] = str(data)
    return env


def _started_by_run(data: Path, port: int) -> dict[int, str]:
    """pid -> command line of every process a ./dev run on this port and data folder starts:
    its Celery worker, gunicorn (master and workers), the embedded Postgres and Redis."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue  # gone, or a kernel thread
        ours = (
            ("celery" in cmdline and "--concurrency=2" in cmdline and cwd == str(ROOT))
            or ("gunicorn" in cmdline and f"127.0.0.1:{port}" in cmdline)
            or (("postgres" in cmdline or "redis-server" in cmdline) and cwd.startswith(str(data)))
        )
        if ours:
            found[int(proc.name)] = cmdline
    return found


def _kinds(processes: dict[int, str]) -> set[str]:
    names = ("celery", "gunicorn", "postgres", "redis-server")
    return {name for cmd in processes.values() for name in names if name in cmd}


def _kill(processes: dict[int, str]) -> None:
    for pid in processes:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def data() -> Iterator[Path]:
    """One data folder for the module: the second run finds the demo loaded already.

    Not under pytest's tmp folder: the embedded Postgres runs as a user of its own and must
    reach its files, and pytest sessions (any on the machine) keep /tmp/pytest-of-<user> at mode
    0700."""
    folder = Path(tempfile.mkdtemp(prefix="timeline-dev-run-")) / "data"
    yield folder
    _kill(_started_by_run(folder, 0))  # whatever a failed test left behind
    shutil.rmtree(folder.parent, ignore_errors=True)


def _start(data: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    out = open(log, "wb")  # noqa: SIM115  (the process owns it)
    # A session of its own: a signal to its process group is what Ctrl-C in a terminal sends.
    return subprocess.Popen(
        [str(DEV), "run", "--port", str(port)],
        cwd=ROOT,
        env=_env(data),
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait_until_serving(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 600
    while not _answers(port):
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(1)


def test_a_taken_port_is_refused_before_anything_starts(data, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        before = time.monotonic()
        try:
            out = subprocess.run(
                [str(DEV), "run", "--port", str(port)],
                cwd=ROOT,
                env=_env(data),
                capture_output=True,
                text=True,
                timeout=600,
            )
            left = _started_by_run(data, port)
        finally:
            _kill(_started_by_run(data, port))
    assert out.returncode != 0
    assert f"port {port} " in out.stderr and "already in use" in out.stderr, out.stderr[-3000:]
    assert "--port" in out.stderr  # says how to pick another
    assert "unbound variable" not in out.stderr
    assert time.monotonic() - before < 30  # refused up front, not after the demo load
    assert left == {}


def test_a_port_that_is_no_number_is_refused(data):
    out = subprocess.run(
        [str(DEV), "run", "--port", "80a"], cwd=ROOT, env=_env(data), capture_output=True, text=True
    )
    assert out.returncode == 2 and "80a" in out.stderr


@needs_venv
def test_ctrl_c_stops_everything_the_run_started(data, tmp_path):
    port = _free_port()
    log = tmp_path / "run.log"
    proc = _start(data, port, log)
    try:
        _wait_until_serving(proc, port, log)
        running = _started_by_run(data, port)
        assert _kinds(running) == {"celery", "gunicorn", "postgres", "redis-server"}, running
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=120) != 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    left = _started_by_run(data, port)
    _kill(left)
    assert left == {}, log.read_text()[-3000:]
    assert not list((data / "run").glob("*.pid"))
    assert not _answers(port)


@needs_venv
def test_dev_stop_ends_what_a_killed_run_left_behind(data, tmp_path):
    port = _free_port()
    log = tmp_path / "run.log"
    proc = _start(data, port, log)
    try:
        _wait_until_serving(proc, port, log)
        # SIGKILL: the script gets no chance to clean up; its children keep running.
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert _kinds(_started_by_run(data, port)) == {
            "celery",
            "gunicorn",
            "postgres",
            "redis-server",
        }
        again = subprocess.run(
            [str(DEV), "run", "--port", str(_free_port())],
            cwd=ROOT,
            env=_env(data),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert again.returncode != 0 and "./dev stop" in again.stderr, again.stderr[-2000:]
        stop = subprocess.run(
            [str(DEV), "stop"],
            cwd=ROOT,
            env=_env(data),
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert stop.returncode == 0, stop.stdout + stop.stderr
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    left = _started_by_run(data, port)
    _kill(left)
    assert left == {}, stop.stdout + stop.stderr
    assert not _answers(port)
    # Nothing left to stop: a second ./dev stop says so and succeeds.
    quiet = subprocess.run(
        [str(DEV), "stop"], cwd=ROOT, env=_env(data), capture_output=True, text=True, timeout=60
    )
    assert quiet.returncode == 0 and "nothing" in quiet.stdout.lower(), quiet.stdout
