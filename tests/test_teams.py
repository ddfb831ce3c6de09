"""Team management (issue 16, deliver 5): create a team, add and remove members, make and unmake
admins, issue and revoke push-API tokens; each action audited; team admins for their team and
superusers everywhere, nobody else (real Postgres, the test client, Chromium for the flow)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.conftest import screenshot
from tests.ui_helpers import VIEWPORTS, session_page
from timeline.models import ApiToken, AuditEntry, Team


@pytest.fixture
def admin(team, user):
    team.admins.add(user)
    return user


@pytest.fixture
def bob(team, django_user_model):
    u = django_user_model.objects.create_user("bob", email="Bob@Example.com", password="pw-bob-1")
    return u


def _entries(team, action):
    return list(AuditEntry.objects.filter(team=team, action=action, incident=None))


def _api(client, slug, token):
    return client.get(f"/api/v1/incidents/{slug}/analysis", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_an_admin_creates_a_team_and_becomes_its_admin(client, admin):
    client.force_login(admin)
    response = client.post(reverse("team_new"), {"name": "Platform SRE"})
    team = Team.objects.get(slug="platform-sre")
    assert response.status_code == 302 and response["Location"] == reverse(
        "team_detail", args=["platform-sre"]
    )
    assert list(team.members.all()) == [admin] and list(team.admins.all()) == [admin]
    [entry] = _entries(team, "team.create")
    assert entry.actor == admin and entry.target == "Platform SRE"
    # The same name again is refused and changes nothing.
    client.post(reverse("team_new"), {"name": "platform sre"})
    assert Team.objects.filter(name__iexact="platform sre").count() == 1


def test_a_plain_member_can_neither_create_nor_manage_a_team(client, user, team):
    client.force_login(user)
    assert client.post(reverse("team_new"), {"name": "Mine"}).status_code == 403
    assert not Team.objects.filter(name="Mine").exists()
    assert client.get(reverse("team_detail", args=[team.slug])).status_code == 403
    assert (
        client.post(reverse("team_token_issue", args=[team.slug]), {"name": "x"}).status_code == 403
    )
    assert not ApiToken.objects.exists()
    assert not AuditEntry.objects.filter(team=team).exists()


def test_an_admin_of_another_team_gets_403(client, admin, other_team, outsider):
    client.force_login(admin)
    assert client.get(reverse("team_detail", args=[other_team.slug])).status_code == 403
    url = reverse("team_member_remove", args=[other_team.slug, outsider.pk])
    assert client.post(url).status_code == 403
    assert other_team.members.filter(pk=outsider.pk).exists()


def test_a_superuser_manages_every_team(client, django_user_model, other_team, outsider):
    root = django_user_model.objects.create_superuser("root", password="pw-root-1")
    client.force_login(root)
    assert client.get(reverse("team_detail", args=[other_team.slug])).status_code == 200
    client.post(reverse("team_member_admin", args=[other_team.slug, outsider.pk]), {"admin": "1"})
    assert other_team.admins.filter(pk=outsider.pk).exists()
    [entry] = _entries(other_team, "team.admin_grant")
    assert entry.actor == root and entry.target == "mallory"


def test_anonymous_users_are_sent_to_log_in(client, team):
    response = client.get(reverse("team_detail", args=[team.slug]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_members_are_added_by_username_or_email_and_removed(client, admin, team, bob):
    client.force_login(admin)
    add = reverse("team_member_add", args=[team.slug])
    client.post(add, {"who": "bob@example.com"})  # e-mail, any case
    assert team.members.filter(pk=bob.pk).exists()
    [added] = _entries(team, "team.member_add")
    assert added.actor == admin and added.target == "bob" and added.data == {"user_id": bob.pk}
    # Unknown users and members already in are refused with a message, nothing recorded.
    page = client.post(add, {"who": "nobody"}, follow=True).content.decode()
    assert "No user &#x27;nobody&#x27;" in page
    page = client.post(add, {"who": "bob"}, follow=True).content.decode()
    assert "bob is a member already" in page
    assert len(_entries(team, "team.member_add")) == 1

    client.post(reverse("team_member_remove", args=[team.slug, bob.pk]))
    assert not team.members.filter(pk=bob.pk).exists()
    [removed] = _entries(team, "team.member_remove")
    assert removed.target == "bob" and removed.actor == admin


def test_admins_are_made_and_unmade_but_the_last_one_stays(client, admin, team, bob):
    team.members.add(bob)
    client.force_login(admin)
    client.post(reverse("team_member_admin", args=[team.slug, bob.pk]), {"admin": "1"})
    assert team.admins.filter(pk=bob.pk).exists()
    client.post(reverse("team_member_admin", args=[team.slug, bob.pk]), {"admin": "0"})
    assert not team.admins.filter(pk=bob.pk).exists()
    assert [e.target for e in _entries(team, "team.admin_grant")] == ["bob"]
    assert [e.target for e in _entries(team, "team.admin_revoke")] == ["bob"]
    # alice is now the only admin: she can neither step down nor be removed.
    page = client.post(
        reverse("team_member_admin", args=[team.slug, admin.pk]), {"admin": "0"}, follow=True
    ).content.decode()
    assert "the team&#x27;s only admin" in page
    client.post(reverse("team_member_remove", args=[team.slug, admin.pk]))
    assert team.admins.filter(pk=admin.pk).exists() and team.members.filter(pk=admin.pk).exists()
    assert len(_entries(team, "team.admin_revoke")) == 1
    assert not _entries(team, "team.member_remove")


def test_a_token_is_shown_once_works_with_the_push_api_and_stops_when_revoked(
    client, admin, team, incident
):
    client.force_login(admin)
    response = client.post(reverse("team_token_issue", args=[team.slug]), {"name": "nightly"})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    raw = re.search(r'id="new-token-value">(itl_[\w-]+)<', response.content.decode()).group(1)
    token = ApiToken.objects.get(team=team, name="nightly")
    assert raw not in token.digest  # only the digest is kept
    [issued] = _entries(team, "team.token_issue")
    assert issued.target == "nightly" and issued.data == {"token_id": token.pk}
    # The token is not shown again.
    assert raw not in client.get(reverse("team_detail", args=[team.slug])).content.decode()

    api = type(client)()  # no session: the token alone
    assert _api(api, incident.slug, raw).status_code == 200
    client.post(reverse("team_token_revoke", args=[team.slug, token.pk]))
    assert not ApiToken.objects.filter(pk=token.pk).exists()
    assert _api(api, incident.slug, raw).status_code == 401
    [revoked] = _entries(team, "team.token_revoke")
    assert revoked.target == "nightly" and revoked.actor == admin
    # A name in use is refused.
    client.post(reverse("team_token_issue", args=[team.slug]), {"name": "ci"})
    client.post(reverse("team_token_issue", args=[team.slug]), {"name": "ci"})
    assert ApiToken.objects.filter(team=team, name="ci").count() == 1


def test_the_team_audit_log_lists_the_actions_on_the_team_page(client, admin, team, bob):
    client.force_login(admin)
    client.post(reverse("team_member_add", args=[team.slug]), {"who": "bob"})
    client.post(reverse("team_token_issue", args=[team.slug]), {"name": "ci"})
    html = client.get(reverse("team_detail", args=[team.slug])).content.decode()
    assert 'data-action="team.member_add"' in html and 'data-action="team.token_issue"' in html
    # The team list shows what alice manages, nothing of other teams.
    html = client.get(reverse("team_list")).content.decode()
    assert "Inference" in html and "Training" not in html


@pytest.mark.browser
@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_team_flow_in_a_browser(browser, live_server, client, admin, team, bob, viewport):
    width, height = viewport
    page, context = session_page(browser, live_server, client, admin, viewport)
    try:
        page.goto(f"{live_server.url}/")
        page.locator("#nav-teams").click()
        page.fill("#team-new input[name=name]", "Platform SRE")
        page.locator("#team-new button").click()
        page.wait_for_selector("h1:has-text('Team Platform SRE')")
        page.fill("#member-add input[name=who]", "bob@example.com")
        page.locator("#member-add button").click()
        page.wait_for_selector(".member[data-username=bob]")
        page.locator(".member[data-username=bob] .make-admin").click()
        page.wait_for_selector(".member[data-username=bob] .badge-admin")
        page.fill("#token-issue input[name=name]", "nightly-harness")
        page.locator("#token-issue button").click()
        token = page.locator("#new-token-value").inner_text()
        assert token.startswith("itl_")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        screenshot(page, f"team-page-{width}x{height}")
        page.locator(".token-row[data-name=nightly-harness] .revoke-token").click()
        page.wait_for_selector(".msg-success:has-text('revoked')")
        page.locator(".member[data-username=bob] .remove-member").click()
        page.wait_for_selector(".msg-success:has-text('bob removed')")
        assert page.locator(".member[data-username=bob]").count() == 0
        actions = page.locator("#team-audit .audit-row").evaluate_all(
            "rows => rows.map(r => r.dataset.action)"
        )
        assert actions == [
            "team.member_remove",
            "team.token_revoke",
            "team.token_issue",
            "team.admin_grant",
            "team.member_add",
            "team.create",
        ]
        screenshot(page, f"team-page-after-{width}x{height}")
    finally:
        context.close()
