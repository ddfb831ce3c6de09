"""Security, shown over the whole URL conf rather than page by page.

Every URL needs a login (or, under /api/, a bearer token); another team's incident is a 404 for
every incident URL and every method, and changes nothing; every session POST needs a CSRF token;
an upload never writes outside its folder; Markdown from users cannot inject HTML or scripts.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from ingest import push
from ingest.services import bundles, loading
from tests.reliability.helpers import row_counts
from timeline.choices import FindingKind, HypothesisStatus, RunStatus
from timeline.markdown import render
from timeline.models import (
    Analysis,
    Artifact,
    AuditEntry,
    Event,
    Evidence,
    Finding,
    Hypothesis,
    Incident,
    Note,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CONVERTER_RE = re.compile(r"<(?:(\w+):)?(\w+)>")
# Regex routes cannot be filled in generically: one example path each (a new one fails the walk).
REGEX_EXAMPLES = {
    "admin/^(?P<app_label>auth|axes|timeline)/$": "admin/timeline/",
    "admin/(?P<url>.*)$": "admin/no-such-page/",
}
PUBLIC = {"login", "admin:login"}  # the only pages an anonymous user may see


def _routes() -> list[tuple[str, str]]:
    """(route with converters, URL name) of every pattern, includes flattened."""

    def walk(patterns: list, prefix: str, ns: str) -> list[tuple[str, str]]:
        out = []
        for p in patterns:
            if isinstance(p, URLResolver):
                inner_ns = f"{ns}{p.namespace}:" if p.namespace else ns
                out += walk(p.url_patterns, prefix + str(p.pattern), inner_ns)
            elif isinstance(p, URLPattern):
                out.append((prefix + str(p.pattern), f"{ns}{p.name}" if p.name else ""))
        return out

    return walk(get_resolver().url_patterns, "", "")


def _path(route: str, values: dict[str, str]) -> str:
    if route in REGEX_EXAMPLES:
        return "/" + REGEX_EXAMPLES[route]
    assert "(?P" not in route and "^" not in route, f"add an example path for {route!r}"

    def fill(m: re.Match[str]) -> str:
        converter, name = m.group(1) or "str", m.group(2)
        if name in values:
            return values[name]
        return {"int": "1", "slug": "x", "path": "1", "uuid": "0" * 32}.get(converter, "x")

    return "/" + CONVERTER_RE.sub(fill, route)


@pytest.fixture
def alices(incident, user):
    """Alice's incident with one of everything a URL can name."""
    bundles.path_register(incident=incident, path=FIXTURES / "docs" / "DSV4_DEPLOY.md")
    artifact = Artifact.objects.get(incident=incident)
    assert loading.artifact_ingest(artifact_id=artifact.pk).status == RunStatus.DONE
    event = Event.objects.filter(incident=incident).first()
    analysis = Analysis.objects.create(incident=incident, version=1, status=RunStatus.DONE)
    finding = Finding.objects.create(
        analysis=analysis, kind=FindingKind.SUSPECT, rank=1, event=event, title="suspect"
    )
    hypothesis = Hypothesis.objects.create(incident=incident, title="CTAS=512", author=user)
    evidence = Evidence.objects.create(
        hypothesis=hypothesis, event=event, stance="supports", author=user
    )
    note = Note.objects.create(
        incident=incident, at=dt.datetime(2026, 11, 20, 23, 40, tzinfo=dt.UTC), body="hi"
    )
    values = {
        "slug": incident.slug,
        "event_id": str(event.pk),
        "finding_id": str(finding.pk),
        "hypothesis_id": str(hypothesis.pk),
        "evidence_id": str(evidence.pk),
        "note_id": str(note.pk),
        "fmt": "md",
        "kind": "events",
    }
    return incident, values


def _snapshot(incident: Incident) -> dict[str, object]:
    incident.refresh_from_db()
    return {
        **row_counts(incident),
        "artifacts": Artifact.objects.filter(incident=incident).count(),
        "hypotheses": list(
            Hypothesis.objects.filter(incident=incident).values_list("title", "status", "body")
        ),
        "evidence": Evidence.objects.filter(hypothesis__incident=incident).count(),
        "notes": list(Note.objects.filter(incident=incident).values_list("body", "at")),
        "audit": AuditEntry.objects.filter(incident=incident).count(),
        "incident": (
            incident.title,
            incident.status,
            incident.last_good_at,
            incident.first_bad_at,
            incident.summary,
        ),
        "findings": list(Finding.objects.filter(analysis__incident=incident).values_list("id")),
    }


def test_the_walk_sees_the_whole_url_conf():
    names = {name for _, name in _routes()}
    assert {"incident_list", "incident_timeline", "upload", "event_detail"} <= names
    assert any(route.startswith("admin/") for route, _ in _routes())


@pytest.mark.attack("no login or token")
def test_every_url_needs_a_login_or_a_token(client, alices, request):
    _, values = alices
    checked = 0
    for route, name in _routes():
        path = _path(route, values)
        for method in ("get", "post"):
            response = getattr(client, method)(path)
            where = f"{method.upper()} {path} ({name})"
            if name in PUBLIC:
                assert response.status_code in (200, 302, 403), where
            elif route.startswith("api/"):
                assert response.status_code in (401, 405), where
                if response.status_code == 401:
                    assert "Bearer" in response["WWW-Authenticate"], where
            elif name == "logout":
                assert response.status_code in (302, 405), where  # logging out is no leak
            elif route.startswith("admin/"):
                assert response.status_code == 302, where
                location = response["Location"]
                assert location.startswith(("/admin/login/", "/login/?next=")), where
            else:
                assert response.status_code == 302, where
                assert response["Location"].startswith("/login/?next="), where
            checked += 1
    request.node.user_properties.append(("attacks", checked))
    assert checked >= 2 * 30


def test_login_page_is_the_only_public_page():
    public = set()
    for route, name in _routes():
        if route in REGEX_EXAMPLES:
            continue
        func = resolve(_path(route, {})).func
        if getattr(func, "login_required", True) is False:
            public.add(name if not route.startswith("api/") else "api")
    assert public <= {"login", "admin:login", "logout", "api"}, public


@pytest.mark.attack("another team's incident")
def test_another_teams_incident_is_a_404_for_every_url_and_method(
    client, alices, outsider, request
):
    incident, values = alices
    before = _snapshot(incident)
    client.force_login(outsider)
    checked = 0
    for route, name in _routes():
        if not route.startswith("incidents/<slug:slug>/"):
            continue
        path = _path(route, values)
        for method in ("get", "post"):
            data = {"title": "pwned", "body": "pwned", "status": "refuted", "note": "x"}
            response = getattr(client, method)(path, data if method == "post" else None)
            where = f"{method.upper()} {path} ({name})"
            # 405 is fine: a method the view never serves reveals nothing either.
            assert response.status_code in (404, 405), (where, response.status_code)
            if response.status_code == 404:
                assert "pwned" not in response.content.decode()
            checked += 1
    request.node.user_properties.append(("attacks", checked))
    assert checked >= 2 * 15
    assert _snapshot(incident) == before
    client.force_login(outsider)
    listing = client.get("/").content.decode()
    assert incident.title not in listing


@pytest.mark.attack("another team's incident")
def test_an_object_of_another_incident_is_a_404_under_my_own_slug(client, alices, user, other_team):
    """Ids are checked against the slug's incident: my slug does not unlock their events."""
    incident, values = alices
    from timeline.services import incident_create

    theirs = incident_create(team=other_team, title="Training outage")
    bundles.path_register(incident=theirs, path=FIXTURES / "docs" / "DSV4_DEPLOY.md")
    artifact = Artifact.objects.get(incident=theirs)
    loading.artifact_ingest(artifact_id=artifact.pk)
    their_event = Event.objects.filter(incident=theirs).first()
    client.force_login(user)
    response = client.get(f"/incidents/{incident.slug}/events/{their_event.pk}/")
    assert response.status_code == 404
    response = client.get(f"/incidents/{theirs.slug}/events/{their_event.pk}/")
    assert response.status_code == 404


@pytest.mark.attack("another team's incident")
def test_api_token_reaches_only_its_own_team(client, alices, other_team):
    incident, _ = alices
    theirs = push.token_create(team=other_team, name="ci")
    before = _snapshot(incident)
    headers = {"Authorization": f"Bearer {theirs}"}
    response = client.get(f"/api/v1/incidents/{incident.slug}/analysis", headers=headers)
    assert response.status_code == 404
    response = client.post(
        f"/api/v1/incidents/{incident.slug}/events",
        data=b'{"events": []}',
        content_type="application/json",
        headers=headers,
    )
    assert response.status_code == 404
    response = client.get(
        f"/api/v1/incidents/{incident.slug}/analysis", headers={"Authorization": "Bearer nope"}
    )
    assert response.status_code == 401
    assert _snapshot(incident) == before


@pytest.mark.attack("CSRF")
def test_every_session_post_needs_a_csrf_token(alices, user, request):
    incident, values = alices
    before = _snapshot(incident)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    checked = 0
    for route, name in _routes():
        if route.startswith("api/") or name in PUBLIC:
            continue
        path = _path(route, values)
        response = strict.post(path, {"title": "forged", "body": "forged", "files": []})
        assert response.status_code == 403, (path, name, response.status_code)
        assert b"CSRF" in response.content
        checked += 1
    request.node.user_properties.append(("attacks", checked))
    assert checked >= 20
    assert _snapshot(incident) == before
    # The same POST with the token gets through (so the 403 above was the CSRF check).
    strict.get(f"/incidents/{incident.slug}/upload/")
    token = strict.cookies[django_settings.CSRF_COOKIE_NAME].value
    f = io.BytesIO((FIXTURES / "bad" / "nan_inf.prom").read_bytes())
    f.name = "nan_inf.prom"
    response = strict.post(
        f"/incidents/{incident.slug}/upload/", {"files": [f], "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302
    assert Artifact.objects.filter(incident=incident, name="nan_inf.prom").exists()


@pytest.mark.attack("CSRF")
def test_login_form_needs_csrf_too(user):
    strict = Client(enforce_csrf_checks=True)
    response = strict.post("/login/", {"username": "alice", "password": "correct horse battery"})
    assert response.status_code == 403
    assert "_auth_user_id" not in strict.session


def _multipart(filename: str, data: bytes) -> tuple[bytes, str]:
    boundary = "----reliabilityboundary"
    body = (
        (
            f"--{boundary}\r\n"
            f'Content-Disposition: form-data; name="files"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.attack("upload path traversal")
@pytest.mark.parametrize(
    "filename",
    [
        "../../../escape.prom",
        "..\\..\\escape.prom",
        "/tmp/escape.prom",
        "....//....//escape.prom",
        "%2e%2e%2fescape.prom",
    ],
)
def test_upload_names_cannot_leave_the_upload_folder(
    client, incident, user, settings, tmp_path, filename
):
    settings.UPLOAD_ROOT = tmp_path / "deep" / "uploads"
    client.force_login(user)
    body, content_type = _multipart(filename, (FIXTURES / "bad" / "nan_inf.prom").read_bytes())
    response = client.post(
        f"/incidents/{incident.slug}/upload/", data=body, content_type=content_type
    )
    assert response.status_code == 302
    artifact = Artifact.objects.get(incident=incident)
    assert "/" not in artifact.name and "\\" not in artifact.name and ".." not in artifact.name
    root = Path(settings.UPLOAD_ROOT).resolve()
    stored = (root / artifact.path).resolve()
    assert root in stored.parents and stored.is_file()
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and root not in p.parents]
    assert outside == []


@pytest.mark.attack("upload path traversal")
def test_uploaded_zip_with_traversal_is_refused_with_a_message(
    client, incident, user, settings, tmp_path
):
    settings.UPLOAD_ROOT = tmp_path / "deep" / "uploads"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("bundle/metrics/ok.prom", (FIXTURES / "bad" / "nan_inf.prom").read_bytes())
        zf.writestr("bundle/../../../../escape.prom", b"x 1 1\n")
    buf.seek(0)
    buf.name = "bundle.zip"
    client.force_login(user)
    response = client.post(f"/incidents/{incident.slug}/upload/", {"files": [buf]}, follow=True)
    assert response.status_code == 200
    assert "would be written outside its folder" in response.content.decode()
    assert not list(tmp_path.rglob("escape.prom"))
    assert not Artifact.objects.filter(incident=incident).exists()


@pytest.mark.attack("HTML or script injection")
def test_a_hostile_file_name_is_shown_escaped(client, incident, user):
    client.force_login(user)
    f = io.BytesIO((FIXTURES / "bad" / "nan_inf.prom").read_bytes())
    f.name = "<img src=x onerror=alert(1)>.prom"
    client.post(f"/incidents/{incident.slug}/upload/", {"files": [f]})
    html = client.get(f"/incidents/{incident.slug}/upload/").content.decode()
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;.prom" in html


# --- Markdown ------------------------------------------------------------------------------------

PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JAVASCRIPT:alert(1))",
    "[x]( javascript:alert(1))",
    "[x](java\tscript:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](javascript&#58;alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](vbscript:msgbox(1))",
    "![x](javascript:alert(1))",
    "<javascript:alert(1)>",
    "[x]: javascript:alert(1)\n\n[y][x]",
    '<svg onload="alert(1)">',
    "<iframe src=//evil></iframe>",
    "```\n</code><script>alert(1)</script>\n```",
    "| a | b |\n|---|---|\n| <script>alert(1)</script> | <b onmouseover=alert(1)>x</b> |",
    '[x](https://ok.example "title\\" onmouseover=\\"alert(1)")',
    "<!-- --><script>alert(1)</script>",
]
UNSAFE = re.compile(
    r"<(script|iframe|svg|img[^>]*\bon\w+|object|embed|style)\b|\bon\w+\s*=\s*[\"']?alert"
    r"|(href|src)\s*=\s*[\"']?\s*(javascript|vbscript|data):",
    re.IGNORECASE,
)


def _inside_tags(html: str) -> str:
    """Only the markup itself (text between tags is harmless however it reads)."""
    return " ".join(re.findall(r"<[^>]*>", html))


@pytest.mark.attack("HTML or script injection")
@pytest.mark.parametrize("payload", PAYLOADS)
def test_markdown_payload_renders_inert(payload):
    html = str(render(payload))
    assert not UNSAFE.search(_inside_tags(html)), html


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(PAYLOADS + ["\n\n", "> ", "- ", "**", "`", "[", "](", ")"]), max_size=8
    )
)
def test_markdown_mixtures_render_inert(parts):
    html = str(render("".join(parts)))
    assert not UNSAFE.search(_inside_tags(html)), html


@pytest.mark.attack("HTML or script injection")
def test_hostile_markdown_in_an_ingested_doc_stays_inert_on_every_page(
    client, incident, user, tmp_path
):
    doc = tmp_path / "DSV4_HOSTILE.md"
    doc.write_text(
        "# DSV4 <script>alert('title')</script>\n\n## Changelog\n\n"
        "- 2026-11-20 13:10 set SGLANG_SM120_MMA_TARGET_CTAS=512 <img src=x onerror=alert(1)> "
        "[x](javascript:alert(1))\n"
    )
    bundles.path_register(incident=incident, path=doc)
    artifact = Artifact.objects.get(incident=incident)
    assert loading.artifact_ingest(artifact_id=artifact.pk).status == RunStatus.DONE
    Hypothesis.objects.create(
        incident=incident,
        title="<script>alert('hyp')</script>",
        body="<img src=x onerror=alert(1)> [x](javascript:alert(1))",
        status=HypothesisStatus.OPEN,
    )
    client.force_login(user)
    pages = [
        f"/incidents/{incident.slug}/",
        f"/incidents/{incident.slug}/events/",
        f"/incidents/{incident.slug}/upload/",
        f"/incidents/{incident.slug}/hypotheses/",
        f"/incidents/{incident.slug}/postmortem.html",
    ]
    pages += [f"/incidents/{incident.slug}/events/{e.pk}/" for e in incident.events.all()]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        html = response.content.decode()
        scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.S)
        assert not any("alert" in s for s in scripts), page
        assert not re.search(r"<img[^>]*onerror", html, re.I), page
        assert not re.search(r"href=[\"']?javascript:", html, re.I), page
