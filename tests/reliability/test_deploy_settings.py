"""Deployment settings (issue #15, point 4): no public SECRET_KEY, HTTPS from the environment,
and a Content-Security-Policy that lets only the app's own scripts run.

Settings are read once per process, so the SECRET_KEY and ``check --deploy`` cases start a fresh
Python process with the environment under test.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.urls import reverse

from tests.conftest import screenshot

ROOT = Path(__file__).resolve().parent.parent.parent
OLD_PUBLIC_KEY = "local-only-insecure-key-set-SECRET_KEY-in-production"
PRINT_KEY = (
    "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
)
# Variables that decide the mode; each case sets the ones it is about.
MODE_VARS = {"SECRET_KEY", "LOCAL", "DEBUG", "PYTEST_VERSION", "REQUIRE_SECRET_KEY", "HTTPS"}
# The browser fixture sets this for Playwright; check --deploy rightly refuses it.
MODE_VARS.add("DJANGO_ALLOW_ASYNC_UNSAFE")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in MODE_VARS}
    env.update(
        DJANGO_SETTINGS_MODULE="timeline.settings",
        TIMELINE_DATA_DIR=str(tmp_path / "data"),
        DATABASE_URL=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/timeline"),
        REDIS_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/3"),
    )
    env.update(extra)
    return env


def _python(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


REMOTE_DB = "postgres://timeline:pw@db.internal.example:5432/timeline"  # never connected to


@pytest.mark.parametrize(
    "mode", [{"DATABASE_URL": REMOTE_DB}, {"LOCAL": "0"}], ids=["remote-db", "LOCAL=0"]
)
def test_a_shared_deployment_without_secret_key_refuses_to_start(tmp_path, mode):
    out = _python(_env(tmp_path, **mode), "manage.py", "check")
    assert out.returncode != 0
    assert "SECRET_KEY is not set" in out.stderr and "LOCAL=1" in out.stderr, out.stderr[-2000:]
    assert not (tmp_path / "data" / "secret_key").exists()


def test_local_mode_generates_a_private_key_once_and_keeps_it(tmp_path):
    env = _env(tmp_path)  # the database on 127.0.0.1: this machine
    # Several processes starting at once (web, worker, a command) agree on one key.
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda _: _python(env, "-c", PRINT_KEY), range(4)))
    assert all(run.returncode == 0 for run in runs), [r.stderr[-2000:] for r in runs]
    keys = {run.stdout.strip() for run in runs}
    assert len(keys) == 1
    key = keys.pop()
    assert key != OLD_PUBLIC_KEY and len(key) >= 50 and len(set(key)) >= 5
    path = tmp_path / "data" / "secret_key"
    assert path.read_text().strip() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["secret_key"]  # no temp file left over
    # The next start reads it back.
    again = _python(env, "-c", PRINT_KEY)
    assert again.stdout.strip() == key
    # A key file others can read is refused, not used.
    path.chmod(0o644)
    loose = _python(env, "-c", PRINT_KEY)
    assert loose.returncode != 0 and "chmod 600" in loose.stderr


@pytest.mark.parametrize(
    "mode",
    [{"DATABASE_URL": REMOTE_DB, "DEBUG": "true"}, {"DATABASE_URL": REMOTE_DB, "LOCAL": "1"}],
    ids=["DEBUG", "LOCAL=1"],
)
def test_debug_or_local_1_use_the_generated_key(tmp_path, mode):
    out = _python(_env(tmp_path, **mode), "-c", PRINT_KEY)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == (tmp_path / "data" / "secret_key").read_text().strip()


def test_an_explicit_key_wins_and_nothing_is_generated(tmp_path):
    given = _python(_env(tmp_path, SECRET_KEY="x" * 60), "-c", PRINT_KEY)
    assert given.stdout.strip() == "x" * 60
    assert not (tmp_path / "data" / "secret_key").exists()


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("", True),
        ("postgres://postgres@127.0.0.1:5432/timeline", True),
        ("postgres://u:p@localhost/timeline", True),
        ("postgresql://u@[::1]:5432/timeline", True),
        ("postgresql://postgres@/timeline?host=/tmp/pg", True),
        (REMOTE_DB, False),
        ("postgres://u@10.0.0.5/timeline", False),
    ],
)
def test_which_databases_count_as_this_machine(url, local):
    from timeline.env import is_local_database

    assert is_local_database(url) is local


def test_check_deploy_is_clean_when_https_comes_from_the_environment(tmp_path):
    env = _env(
        tmp_path,
        SECRET_KEY="k7#Qz" * 12,
        HTTPS="1",
        ALLOWED_HOSTS="timeline.example.com",
    )
    out = _python(env, "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "System check identified no issues" in out.stdout, out.stdout + out.stderr


def test_without_https_check_deploy_still_names_what_is_missing(tmp_path):
    env = _env(tmp_path, SECRET_KEY="k7#Qz" * 12, ALLOWED_HOSTS="timeline.example.com")
    out = _python(env, "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert out.returncode != 0
    assert "security.W008" in out.stderr + out.stdout  # SECURE_SSL_REDIRECT


# --- Content-Security-Policy ---------------------------------------------------------------------

# The postmortem's one-file export: a document downloaded as an attachment and opened offline,
# rendered without a request, never served as a page of the app; its scripts must be inline.
OFFLINE_DOCUMENTS = {Path("templates/timeline/postmortem.html")}
INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.IGNORECASE)
JS_URL = re.compile(r"(href|src|action)\s*=\s*[\"']?\s*javascript:", re.IGNORECASE)


def _policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    directives = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            directives[words[0]] = words[1:]
    return directives


def test_every_page_sends_a_policy_that_runs_only_our_own_scripts(client, user, incident):
    client.force_login(user)
    for url in (
        reverse("login"),
        reverse("incident_list"),
        reverse("incident_timeline", args=[incident.slug]),
        reverse("upload", args=[incident.slug]),
    ):
        policy = _policy(client.get(url))
        assert policy["script-src"] == ["'self'"], url
        assert policy["default-src"] == ["'self'"], url
        assert policy["object-src"] == ["'none'"], url
        assert policy["frame-ancestors"] == ["'none'"], url
        assert "'unsafe-eval'" not in " ".join(sum(policy.values(), [])), url


def test_no_template_has_inline_script_or_handlers():
    """script-src 'self' blocks them: every script lives in static/ and is loaded by src."""
    offenders = []
    for template in sorted((ROOT / "templates").rglob("*.html")):
        if template.relative_to(ROOT) in OFFLINE_DOCUMENTS:
            continue
        text = template.read_text()
        for pattern in (INLINE_SCRIPT, INLINE_HANDLER, JS_URL):
            offenders += [f"{template.relative_to(ROOT)}: {m}" for m in pattern.findall(text)]
    assert offenders == []


_COLLECT_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sourceFile));
"""


@pytest.mark.browser
def test_the_pages_work_in_a_browser_under_the_policy(logged_in_page, live_server, loaded):
    """Charts drawn, htmx fragments loaded, the upload drop zone alive; no violation reported."""
    page = logged_in_page
    page.add_init_script(_COLLECT_VIOLATIONS)
    response = page.goto(f"{live_server.url}/incidents/{loaded.slug}/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector("#timeline-chart[data-state=ready]")
    assert page.locator("#timeline-chart .main-svg").count() > 0
    # Every trace drew with the vendored basic bundle (a trace type it lacks draws nothing):
    # each metric line is a path with points, each lane its markers.
    drawn = page.evaluate(
        """() => { const el = document.getElementById('timeline-chart');
                   const lines = [...el.querySelectorAll('.scatterlayer .trace .js-line')]
                     .filter(p => (p.getAttribute('d') || '').length > 20).length;
                   const points = el.querySelectorAll('.scatterlayer .trace .point').length;
                   return {traces: el.data.length, lines, points,
                           metric: el.data.filter(t => t.mode === 'lines').length}; }"""
    )
    assert drawn["metric"] > 0 and drawn["lines"] == drawn["metric"], drawn
    assert drawn["points"] > 0, drawn
    # Plotly's own style rules (mode bar, hover labels) went in.
    assert page.evaluate("document.getElementById('plotly.js-style-global').sheet.cssRules.length")
    page.wait_for_selector("#event-table table")
    page.locator(".suspect-link").first.click()
    page.wait_for_selector("#detail .finding-detail")
    screenshot(page, "timeline-under-csp")
    assert page.evaluate("window.__csp") == []

    page.goto(f"{live_server.url}/incidents/{loaded.slug}/upload/")
    page.dispatch_event("#dropzone", "dragenter")
    assert "over" in (page.get_attribute("#dropzone", "class") or "")
    assert page.evaluate("window.__csp") == []
    page.goto(f"{live_server.url}/incidents/{loaded.slug}/hypotheses/")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__csp") == []
