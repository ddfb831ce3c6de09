"""Issue 16: what a first visit to the timeline page transfers, and the postmortem export's size.

The DSV4 sample incident is ingested into a scratch database; static files are collected (when
STATIC_ROOT is configured) and gunicorn serves the app on a free loopback port; Chromium (through
Playwright, cache empty) opens the timeline page logged in and waits for the chart to draw. Every
response of that visit is summed twice: the bytes on the wire (compressed where the server
compressed: Chromium sends ``Accept-Encoding: gzip, deflate, br``) and the decoded body sizes.
Then the HTML postmortem is downloaded and its size printed.

    .venv/bin/python bench/first_visit.py [--port 0]

Run it on two checkouts (PYTHONPATH) to compare before and after; it is not a test.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import _common  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("STATIC_ROOT", tempfile.mkdtemp(prefix="first-visit-static-"))
    _common.setup("first_visit", time_limit=600)
    from io import StringIO

    from django.conf import settings
    from django.core.management import call_command

    from ingest.samples.dsv4_wedge import write_bundle

    root = Path(settings.BASE_DIR)
    if getattr(settings, "STATIC_ROOT", None):
        call_command("collectstatic", interactive=False, verbosity=0)
    team, user, _ = _common.team_user_incident("bench-empty")
    bundle = write_bundle(Path(tempfile.mkdtemp(prefix="first-visit-")) / "dsv4-wedge", seed=7)
    call_command(
        "ingest",
        str(bundle),
        incident="dsv4",
        team="Inference",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    from django.test import Client

    client = Client()
    client.force_login(user)
    session = client.cookies["sessionid"].value

    port = args.port or free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "timeline.wsgi", "--bind", f"127.0.0.1:{port}"],
        cwd=root,
        env=os.environ.copy(),
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/login/", timeout=2)  # noqa: S310
                break
            except OSError:
                time.sleep(0.2)
        visit(base, session)
    finally:
        server.terminate()
        server.wait(timeout=20)


def visit(base: str, session: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], headless=True
        )
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
        page = context.new_page()
        responses: list = []
        page.on("response", lambda r: responses.append(r))
        page.goto(f"{base}/incidents/dsv4/")
        page.wait_for_selector("#timeline-chart .main-svg", timeout=60_000)
        page.wait_for_load_state("networkidle")
        wire = body = 0
        print(f"  {'response':<60} {'wire':>10} {'body':>10}  encoding / cache")
        for r in responses:
            sizes = r.request.sizes()
            headers = r.headers
            wire += sizes["responseBodySize"] + sizes["responseHeadersSize"]
            decoded = len(r.body())
            body += decoded
            path = r.url.replace(base, "")
            print(
                f"  {path[:60]:<60} {sizes['responseBodySize']:>10,} {decoded:>10,}  "
                f"{headers.get('content-encoding', '-')} / {headers.get('cache-control', '-')}"
            )
        print(f"  {'first visit, total':<60} {wire:>10,} {body:>10,}")
        export = context.request.get(f"{base}/incidents/dsv4/postmortem.html")
        print(f"  postmortem.html download: {len(export.body()):,} bytes")
        browser.close()


if __name__ == "__main__":
    main()
