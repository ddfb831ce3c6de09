"""Progress while the files themselves upload (issue 16, defect 7): bytes sent of the total and a
percentage, reaching 100 %, then the page with the files' ingest status; without JavaScript the
form still posts (real Postgres and Redis, Chromium with its upload throttled)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.conftest import screenshot
from tests.ui_helpers import CSP_VIOLATIONS, VIEWPORTS, session_page
from timeline.models import Artifact

# Every change of the progress bar, kept in sessionStorage (it outlives the page's navigation).
RECORD_PROGRESS = """
document.addEventListener('DOMContentLoaded', () => {
  const bar = document.getElementById('upload-progress');
  if (!bar) return;
  new MutationObserver(() => {
    const seen = JSON.parse(sessionStorage.getItem('progress') || '[]');
    seen.push(Number(bar.dataset.percent));
    sessionStorage.setItem('progress', JSON.stringify(seen));
  }).observe(bar, {attributes: true, attributeFilter: ['data-percent']});
});
"""


def _metrics(path, mb: float) -> int:
    """A Prometheus text exposition of about ``mb`` MB (valid: it ingests)."""
    lines = ["# TYPE upload_test_gauge gauge"]
    size, i = 0, 0
    while size < mb * 1024 * 1024:
        line = f'upload_test_gauge{{series="{i % 50}"}} {i * 0.5} {1763600000000 + i * 1000}'
        lines.append(line)
        size += len(line) + 1
        i += 1
    path.write_text("\n".join(lines) + "\n")
    return path.stat().st_size


def test_the_script_gets_where_to_go_and_the_messages_stay_for_that_page(
    transactional_db, client, user, incident
):
    client.force_login(user)
    url = reverse("upload", args=[incident.slug])
    from django.core.files.uploadedfile import SimpleUploadedFile

    f = SimpleUploadedFile("small.prom", b"# TYPE up gauge\nup 1 1763600000000\n")
    response = client.post(url, {"files": [f]}, HTTP_X_UPLOAD_PROGRESS="1")
    assert response.status_code == 200
    assert json.loads(response.content) == {"next": url}
    assert Artifact.objects.filter(incident=incident, name="small.prom").exists()
    page = client.get(url).content.decode()
    assert "1 file(s) queued for ingest." in page
    # Without the script: a plain form post and a redirect, as before.
    g = SimpleUploadedFile("other.prom", b"# TYPE up gauge\nup 0 1763600000000\n")
    assert client.post(url, {"files": [g]}).status_code == 302


@pytest.mark.browser
@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_multi_megabyte_upload_shows_its_progress_to_100_percent(
    browser, live_server, client, user, incident, tmp_path, viewport
):
    width, height = viewport
    big = tmp_path / "big-metrics.prom"
    total = _metrics(big, 6)
    page, context = session_page(browser, live_server, client, user, viewport)
    try:
        page.add_init_script(CSP_VIOLATIONS)
        page.add_init_script(RECORD_PROGRESS)
        page.goto(f"{live_server.url}/incidents/{incident.slug}/upload/")
        assert not page.locator("#upload-progress-box").is_visible()  # until an upload starts
        # About 3 MB/s up, so the upload lasts long enough to be seen part-way.
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send(
            "Network.emulateNetworkConditions",
            {
                "offline": False,
                "latency": 0,
                "downloadThroughput": -1,
                "uploadThroughput": 3 * 1024 * 1024,
            },
        )
        page.set_input_files("#files", str(big))
        page.get_by_role("button", name="Upload").click()
        page.wait_for_function(
            "() => { const p = Number(document.getElementById('upload-progress').dataset.percent);"
            " return p > 0 && p < 100; }"
        )
        status = page.locator("#upload-progress-text").inner_text()
        assert f"of {total / (1024 * 1024):.1f} MB sent (" in status, status
        screenshot(page, f"upload-progress-{width}x{height}")
        page.wait_for_selector("text=1 file(s) queued for ingest.", timeout=60_000)
        seen = json.loads(page.evaluate("sessionStorage.getItem('progress')"))
        assert seen[-1] == 100 and max(seen) == 100, seen
        assert any(0 < p < 100 for p in seen), seen
        assert seen == sorted(seen), seen  # it only goes forward
        artifact = Artifact.objects.get(incident=incident, name="big-metrics.prom")
        assert artifact.size == total
        # Back on the page: the ingest status of the file takes over.
        assert "big-metrics.prom" in page.locator("#artifact-table").inner_text()
        assert not page.locator("#upload-progress-box").is_visible()
        assert page.evaluate("window.__csp") == []
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        screenshot(page, f"upload-queued-{width}x{height}")
    finally:
        context.close()
