"""The audit log names things (issue 16, defect 9): titles, note excerpts and user names instead of
``hypothesis:1`` or ``event 58``, a link while the thing exists, "(deleted)" after; one query
per kind of object for a whole page (real Postgres, the sample incident, Chromium)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.conftest import screenshot
from tests.ui_helpers import VIEWPORTS, session_page
from timeline import services
from timeline.analysis import current_analysis
from timeline.choices import FindingKind
from timeline.models import Event


def _work(incident, user, n: int = 1):
    """n rounds of: a hypothesis with an event and a finding as evidence, a note, and one
    hypothesis and one note deleted again."""
    event = Event.objects.filter(incident=incident, kind="config_change").order_by("at").first()
    finding = current_analysis(incident).findings.filter(kind=FindingKind.SUSPECT).first()
    kept = []
    for i in range(n):
        h = services.hypothesis_create(
            incident=incident, user=user, title=f"CTAS starves decode {i}", body=""
        )
        services.evidence_add(hypothesis=h, user=user, stance="supports", event=event)
        services.evidence_add(hypothesis=h, user=user, stance="supports", finding=finding)
        at = dt.datetime(2026, 11, 20, 23, 40, tzinfo=dt.UTC)
        services.note_add(incident=incident, user=user, at=at, body=f"Decode stalls here {i}")
        gone = services.hypothesis_create(
            incident=incident, user=user, title=f"Tokenizer swap {i}", body=""
        )
        services.hypothesis_delete(hypothesis=gone, user=user)
        note = services.note_add(incident=incident, user=user, at=at, body=f"Wrong guess {i}")
        services.note_delete(note=note, user=user)
        kept.append(h)
    return event, finding, kept


def test_the_log_shows_what_each_id_is_with_links_and_deleted_marks(client, user, loaded):
    user.first_name, user.last_name = "Alice", "Liddell"
    user.save()
    event, finding, [h] = _work(loaded, user)
    client.force_login(user)
    html = client.get(reverse("audit_log", args=[loaded.slug])).content.decode()
    board = reverse("hypothesis_board", args=[loaded.slug])
    # No raw ids left: neither "hypothesis:N" targets nor bare numbers for events.
    assert not re.search(r"\b(hypothesis|note):\d+", html)
    assert f"<dd>{event.pk}</dd>" not in html
    # What they are, linked while they exist.
    assert f'href="{board}#hypothesis-{h.pk}">hypothesis “CTAS starves decode 0”</a>' in html
    assert f'href="{reverse("event_detail", args=[loaded.slug, event.pk])}"' in html
    assert f">{event.title}</a>" in html
    assert f'href="{reverse("finding_detail", args=[loaded.slug, finding.pk])}"' in html
    assert "note “Decode stalls here 0”</a>" in html
    # Deleted: its last known title or text, and "(deleted)", no link.
    assert 'hypothesis “Tokenizer swap 0” <span class="muted deleted">(deleted)</span>' in html
    assert 'note “Wrong guess 0” <span class="muted deleted">(deleted)</span>' in html
    assert "Alice Liddell" in html
    # The page's target on the hypothesis board exists.
    board_html = client.get(board).content.decode()
    assert f'id="hypothesis-{h.pk}"' in board_html


def test_labels_cost_one_query_per_kind_not_per_entry(client, user, loaded):
    client.force_login(user)
    url = reverse("audit_log", args=[loaded.slug])
    _work(loaded, user, n=1)
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    _work(loaded, user, n=6)
    with CaptureQueriesContext(connection) as many:
        assert client.get(url).status_code == 200
    assert len(many) == len(few), [q["sql"][:100] for q in many]


def test_a_deleted_event_id_reads_deleted(client, user, loaded):
    event, _, [h] = _work(loaded, user)
    services.audit(
        incident=loaded,
        actor=user,
        action="evidence.add",
        target=f"hypothesis:{h.pk}",
        data={"event": 987654321},
    )
    client.force_login(user)
    html = client.get(reverse("audit_log", args=[loaded.slug])).content.decode()
    assert 'event 987654321 <span class="muted deleted">(deleted)</span>' in html


@pytest.mark.browser
@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_an_event_of_the_log_opens_beside_it(browser, live_server, client, user, loaded, viewport):
    event, _, _ = _work(loaded, user)
    page, context = session_page(browser, live_server, client, user, viewport)
    try:
        page.goto(f"{live_server.url}/incidents/{loaded.slug}/audit/")
        page.locator(".audit-data a.audit-ref", has_text=event.title).first.click()
        page.wait_for_selector("#detail .event-detail")
        assert event.title in page.locator("#detail").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        screenshot(page, f"audit-log-{viewport[0]}x{viewport[1]}")
    finally:
        context.close()
