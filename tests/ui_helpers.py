"""Shared pieces of the browser tests of issue 16: the two screen sizes, a logged-in page at one
of them, and the collector of Content-Security-Policy violations."""

from __future__ import annotations

from typing import Any

# A 1440x900 desktop and a 1280x720 laptop (issue 16, deliver 6).
VIEWPORTS = [(1440, 900), (1280, 720)]

CSP_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sourceFile));
"""


def session_page(
    browser: Any, live_server: Any, client: Any, user: Any, viewport: tuple[int, int]
) -> tuple[Any, Any]:
    """A page logged in as ``user`` at ``viewport``; close the returned context after use."""
    client.force_login(user)
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page = context.new_page()
    page.set_default_timeout(20_000)
    return page, context


def htmx_settled(page: Any) -> None:
    """Wait until htmx has settled every swap: it wires a swapped fragment's forms and buttons
    ~20 ms after the swap (its settle delay, later on a loaded machine); a filter changed or a
    button clicked before that sends no request at all."""
    page.wait_for_function(
        "() => !document.querySelector('.htmx-settling, .htmx-added, .htmx-swapping')"
    )


def table_shows(page: Any, text: str) -> None:
    """Wait until the event table's pager says ``text`` and htmx has settled the swap that put
    it there (:func:`htmx_settled`)."""
    page.locator("#event-table .pager", has_text=text).wait_for()
    htmx_settled(page)
