"""The fused session + incident path of timeline.json and the version poll
(timeline.access.incident_by_session, SessionIncidentMiddleware): it serves only a session
Django itself would count as logged in, for a user the access rule lets in; every other request
gets what the rest of the site answers the same session (a login redirect or a 404). Also: weak
If-None-Match (a gzipped body's W/ ETag gets its 304), the same answer with or without the fused
path, and a connection Postgres dropped between two requests.
"""

from __future__ import annotations

import datetime as dt
import gzip
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.models import Session
from django.core import signing
from django.db import connection
from django.http import HttpRequest
from django.test import Client, RequestFactory, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from timeline import charts, shared_cache
from timeline.access import incident_by_session
from timeline.models import Incident, Team
from timeline.versions import incident_version

PASSWORD = "correct horse battery"
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
FUSED = ("timeline_data", "incident_version")
# What the rest of the site answers for the same session: the page and the event table.
USUAL = ("incident_timeline", "event_table")
COMPARED_HEADERS = (
    "Content-Type",
    "Content-Encoding",
    "ETag",
    "Cache-Control",
    "Vary",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "Content-Security-Policy",
)
_names = itertools.count()


def _cookie(client: Client) -> str | None:
    morsel = client.cookies.get(settings.SESSION_COOKIE_NAME)
    return morsel.value if morsel is not None and morsel.value else None


def _as_the_middleware_sees_it(client: Client, path: str) -> HttpRequest:
    """A GET of ``path`` with the client's session cookie, and ``request.session`` as
    SessionMiddleware sets it (a store of the cookie's key, not yet loaded)."""
    key = _cookie(client)
    extra = {"HTTP_COOKIE": f"{settings.SESSION_COOKIE_NAME}={key}"} if key else {}
    request = RequestFactory().get(path, **extra)
    engine = import_module(settings.SESSION_ENGINE)
    request.session = engine.SessionStore(request.COOKIES.get(settings.SESSION_COOKIE_NAME))
    return request


def _proved(client: Client, name: str, slug: str) -> tuple[Incident | None, HttpRequest]:
    request = _as_the_middleware_sees_it(client, reverse(name, args=[slug]))
    return incident_by_session(request, slug), request


def _served_fused(response: Any) -> bool:
    """Whether SessionIncidentMiddleware proved the request (the request the view saw)."""
    return isinstance(getattr(response.wsgi_request, "session_incident", None), Incident)


def _json(response: Any) -> Any:
    body = response.content
    if response.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    return json.loads(body)


def _evict_figure(response: Any) -> None:
    """Drop the shared cache's copy of a whole-incident timeline.json body (always stored), so
    the next request builds it again instead of reading the bytes this one wrote."""
    key = "timeline-json:v1:" + response["ETag"].removeprefix("W/").strip('"')
    assert shared_cache.get(key) is not None  # the key is the one the view stored
    shared_cache.drop(key)
    assert shared_cache.get(key) is None


def _session_row(client: Client) -> Session:
    return Session.objects.get(session_key=_cookie(client))


# --- 1. a member --------------------------------------------------------------------------------


def test_force_login_sessions_carry_the_model_backend(client: Any, user: Any) -> None:
    """The test client's force_login picks ModelBackend (AxesStandaloneBackend has no
    get_user), so the fused path can serve the test client's sessions at all."""
    client.force_login(user)
    data = _session_row(client).get_decoded()
    assert data[BACKEND_SESSION_KEY] == MODEL_BACKEND
    assert MODEL_BACKEND in settings.AUTHENTICATION_BACKENDS
    assert str(data[SESSION_KEY]) == str(user.pk)
    assert data[HASH_SESSION_KEY] == user.get_session_auth_hash()


def test_a_members_session_proves_the_incident_its_version_and_the_user(
    client: Any, user: Any, incident: Any
) -> None:
    """incident_by_session, called as the middleware calls it, returns the incident with the
    version incident_version computes for it, and sets request.user to the member."""
    client.force_login(user)
    found, request = _proved(client, "timeline_data", incident.slug)
    assert found is not None
    fresh = Incident.objects.get(pk=incident.pk)
    assert (found.pk, found.slug, found.team_id, found.title) == (
        fresh.pk,
        fresh.slug,
        fresh.team_id,
        fresh.title,
    )
    assert found.version == incident_version(fresh) != ""
    assert request.user.pk == user.pk and request.user.is_authenticated
    assert not request.session.accessed  # proved from the row, never through the session


def test_a_members_timeline_json_and_version_are_served_by_the_fused_path(
    client: Any, user: Any, incident: Any
) -> None:
    """Through the whole middleware stack: both views answer 200 with the right content, the
    request the view saw carries the middleware's incident and the member as its user, Django
    never loaded the session, and no query on the session or user table went through Django's
    cursor (the fused query uses psycopg's own)."""
    client.force_login(user)
    version = incident_version(Incident.objects.get(pk=incident.pk))
    for name in FUSED:
        path = reverse(name, args=[incident.slug])
        proved, _ = _proved(client, name, incident.slug)
        assert proved is not None and proved.pk == incident.pk, name
        with CaptureQueriesContext(connection) as queries:
            response = client.get(path)
        assert response.status_code == 200, name
        assert _served_fused(response), name
        seen = response.wsgi_request
        assert seen.session_incident.pk == incident.pk and seen.session_incident.version == version
        assert seen.user.pk == user.pk
        assert not seen.session.accessed, name
        assert "Cookie" in response["Vary"], name  # the answer depends on the cookie
        sql = " ".join(q["sql"] for q in queries.captured_queries)
        assert "django_session" not in sql and "auth_user" not in sql, (name, sql)
    assert _json(client.get(reverse("incident_version", args=[incident.slug]))) == {
        "version": version
    }
    figure = _json(client.get(reverse("timeline_data", args=[incident.slug])))
    assert set(figure) == {"figure", "meta"} and "data" in figure["figure"]


# --- 2. who is denied, and how -----------------------------------------------------------------


@dataclass
class World:
    team: Team
    incident: Incident
    outsider: Any
    users: Any  # the user model

    def member(self) -> Any:
        u = self.users.objects.create_user(f"member{next(_names)}", password=PASSWORD)
        self.team.members.add(u)
        return u

    def logged_in(self, u: Any, **kwargs: Any) -> Client:
        c = Client()
        c.force_login(u, **kwargs)
        return c

    def warm(self, c: Client) -> None:
        """A first request the fused path serves (the per-process cache now knows the
        session)."""
        response = c.get(reverse("incident_version", args=[self.incident.slug]))
        assert response.status_code == 200 and _served_fused(response)


def _anonymous(w: World) -> tuple[Client, str]:
    return Client(), w.incident.slug


def _logged_out(w: World) -> tuple[Client, str]:
    c = w.logged_in(w.member())
    w.warm(c)
    # Log out through the site from a copy of the browser; the old cookie is then replayed.
    other = Client()
    other.cookies[settings.SESSION_COOKIE_NAME] = _cookie(c)
    assert other.post(reverse("logout")).status_code == 302
    assert not Session.objects.filter(session_key=_cookie(c)).exists()
    return c, w.incident.slug


def _expired(w: World) -> tuple[Client, str]:
    c = w.logged_in(w.member())
    w.warm(c)
    past = timezone.now() - dt.timedelta(seconds=5)
    assert Session.objects.filter(session_key=_cookie(c)).update(expire_date=past) == 1
    return c, w.incident.slug


def _other_team(w: World) -> tuple[Client, str]:
    return w.logged_in(w.outsider), w.incident.slug


def _inactive(w: World) -> tuple[Client, str]:
    u = w.member()
    c = w.logged_in(u)
    w.warm(c)
    assert w.users.objects.filter(pk=u.pk).update(is_active=False) == 1
    return c, w.incident.slug


def _password_changed(w: World) -> tuple[Client, str]:
    u = w.member()
    c = w.logged_in(u)
    w.warm(c)
    u.set_password("another horse entirely")
    u.save()
    return c, w.incident.slug


def _tampered(w: World) -> tuple[Client, str]:
    """The session's own content (the member, ModelBackend, the right hash) signed with
    another key: only the signature is wrong."""
    u = w.member()
    c = w.logged_in(u)
    w.warm(c)
    row = _session_row(c)
    store = import_module(settings.SESSION_ENGINE).SessionStore()
    forged = signing.dumps(
        row.get_decoded(),
        key="not-the-secret-key",
        salt=store.key_salt,
        serializer=store.serializer,
        compress=True,
    )
    Session.objects.filter(pk=row.pk).update(session_data=forged)
    assert _session_row(c).get_decoded() == {}  # Django no longer reads it
    return c, w.incident.slug


def _tampered_byte(w: World) -> tuple[Client, str]:
    """One character of the stored signature changed."""
    c = w.logged_in(w.member())
    w.warm(c)
    row = _session_row(c)
    data = row.session_data
    broken = data[:-1] + ("A" if data[-1] != "A" else "B")
    Session.objects.filter(pk=row.pk).update(session_data=broken)
    assert _session_row(c).get_decoded() == {}
    return c, w.incident.slug


def _foreign_backend(w: World) -> tuple[Client, str]:
    backend = "django.contrib.auth.backends.RemoteUserBackend"
    assert backend not in settings.AUTHENTICATION_BACKENDS
    c = w.logged_in(w.member(), backend=backend)
    assert _session_row(c).get_decoded()[BACKEND_SESSION_KEY] == backend
    return c, w.incident.slug


def _user_deleted(w: World) -> tuple[Client, str]:
    u = w.member()
    c = w.logged_in(u)
    w.warm(c)
    u.delete()
    assert Session.objects.filter(session_key=_cookie(c)).exists()  # the row outlives the user
    return c, w.incident.slug


def _superuser(w: World) -> tuple[Client, str]:
    root = w.users.objects.create_superuser(f"root{next(_names)}", password=PASSWORD)
    assert not w.team.members.filter(pk=root.pk).exists()
    return w.logged_in(root), w.incident.slug


def _removed_from_team(w: World) -> tuple[Client, str]:
    u = w.member()
    c = w.logged_in(u)
    w.warm(c)
    w.team.members.remove(u)
    return c, w.incident.slug


def _no_such_incident(w: World) -> tuple[Client, str]:
    return w.logged_in(w.member()), "no-such-incident"


CASES: dict[str, tuple[Callable[[World], tuple[Client, str]], int]] = {
    "anonymous": (_anonymous, 302),
    "logged-out": (_logged_out, 302),
    "expired": (_expired, 302),
    "other-team": (_other_team, 404),
    "inactive": (_inactive, 302),
    "password-changed": (_password_changed, 302),
    "tampered-signature": (_tampered, 302),
    "tampered-byte": (_tampered_byte, 302),
    "backend-not-in-settings": (_foreign_backend, 302),
    "user-deleted": (_user_deleted, 302),
    "superuser-not-member": (_superuser, 200),
    "removed-from-team": (_removed_from_team, 404),
    "no-such-incident": (_no_such_incident, 404),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_fused_urls_answer_as_the_rest_of_the_site(
    case: str, team: Any, incident: Any, outsider: Any, django_user_model: Any
) -> None:
    """Each session state, set up afresh for each URL: timeline.json and the version answer
    what the incident's page and its event table answer (a login redirect with ?next=, a 404,
    or a 200); incident_by_session proves exactly the allowed ones, and a denied request is
    never served by the middleware."""
    make, expected = CASES[case]
    world = World(team, incident, outsider, django_user_model)
    answers = {}
    for name in FUSED + USUAL:
        client, slug = make(world)
        path = reverse(name, args=[slug])
        proved, request = _proved(client, name, slug)
        response = client.get(path)
        answers[name] = response.status_code
        if name in FUSED:
            if expected == 200:
                assert proved is not None and proved.pk == incident.pk, (case, name)
                assert request.user.is_superuser, (case, name)
                assert _served_fused(response), (case, name)
            else:
                assert proved is None, (case, name)
                assert not _served_fused(response), (case, name)
        if response.status_code == 302:
            assert response["Location"] == f"{reverse('login')}?next={path}", (case, name)
            assert response.wsgi_request.user.is_anonymous, (case, name)
    assert answers == dict.fromkeys(FUSED + USUAL, expected), (case, answers)


@override_settings(
    AUTHENTICATION_BACKENDS=["axes.backends.AxesStandaloneBackend"],
)
def test_a_model_backend_session_when_model_backend_is_not_configured(
    team: Any, incident: Any, outsider: Any, django_user_model: Any
) -> None:
    """A session naming ModelBackend while AUTHENTICATION_BACKENDS does not list it: a login
    redirect from every URL, and nothing proved."""
    world = World(team, incident, outsider, django_user_model)
    for name in FUSED + USUAL:
        client = world.logged_in(world.member(), backend=MODEL_BACKEND)
        assert _session_row(client).get_decoded()[BACKEND_SESSION_KEY] == MODEL_BACKEND
        proved, _ = _proved(client, name, incident.slug)
        assert proved is None, name
        response = client.get(reverse(name, args=[incident.slug]))
        assert response.status_code == 302, (name, response.status_code)
        assert not _served_fused(response), name


# --- 3. weak ETags -----------------------------------------------------------------------------


def test_a_gzipped_figures_weak_etag_gets_a_304(client: Any, user: Any, custom: Any) -> None:
    """GZipMiddleware weakens the figure's ETag to W/"..."; sent back as If-None-Match it gets
    a body-less 304 (weak comparison), served by the fused path."""
    client.force_login(user)
    path = reverse("timeline_data", args=[custom.slug])
    first = client.get(path, HTTP_ACCEPT_ENCODING="gzip")
    assert first.status_code == 200 and first["Content-Encoding"] == "gzip"
    assert first["ETag"].startswith('W/"')
    assert set(_json(first)) == {"figure", "meta"}
    again = client.get(path, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again.content == b""
    assert _served_fused(again)
    # One of a list, and the strong form, match as well; another ETag does not.
    listed = client.get(path, HTTP_IF_NONE_MATCH=f'"nope", {first["ETag"]}')
    assert listed.status_code == 304 and listed.content == b""
    strong = client.get(path, HTTP_IF_NONE_MATCH=first["ETag"].removeprefix("W/"))
    assert strong.status_code == 304
    other = client.get(path, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH='W/"nope"')
    assert other.status_code == 200 and _json(other) == _json(first)


def test_the_versions_strong_etag_and_its_weak_form_get_a_304(
    client: Any, user: Any, incident: Any
) -> None:
    """The version is not gzipped: a strong ETag; it and its W/ form both get a 304."""
    client.force_login(user)
    path = reverse("incident_version", args=[incident.slug])
    first = client.get(path, HTTP_ACCEPT_ENCODING="gzip")
    assert first.status_code == 200 and "Content-Encoding" not in first
    etag = first["ETag"]
    assert etag == f'"{_json(first)["version"]}"'
    for sent in (etag, f"W/{etag}"):
        again = client.get(path, HTTP_IF_NONE_MATCH=sent)
        assert again.status_code == 304 and again.content == b"", sent
        assert again["ETag"] == etag and _served_fused(again), sent
    assert client.get(path, HTTP_IF_NONE_MATCH='W/"nope"').status_code == 200


# --- 4. the same answer either way -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "encoding"),
    [("timeline_data", "gzip"), ("timeline_data", ""), ("incident_version", "gzip")],
)
def test_the_fused_and_the_usual_path_answer_the_same(
    client: Any, user: Any, custom: Any, name: str, encoding: str
) -> None:
    """A member's answer (body, and the headers a browser or cache acts on) is the same when
    the fused path serves it and when it does not (SESSION_SAVE_EVERY_REQUEST turns it off)."""
    client.force_login(user)
    path = reverse(name, args=[custom.slug])
    fused = client.get(path, HTTP_ACCEPT_ENCODING=encoding)
    assert fused.status_code == 200 and _served_fused(fused)
    assert "Set-Cookie" not in fused.headers
    if name == "timeline_data":
        _evict_figure(fused)  # the usual path builds the body again, it does not reuse this one
    with override_settings(SESSION_SAVE_EVERY_REQUEST=True):
        proved, _ = _proved(client, name, custom.slug)
        assert proved is None
        usual = client.get(path, HTTP_ACCEPT_ENCODING=encoding)
    assert usual.status_code == 200 and not _served_fused(usual)
    assert usual.wsgi_request.session.accessed  # Django's session and user decided
    # Set-Cookie is ignored: SESSION_SAVE_EVERY_REQUEST itself adds it to the usual answer.
    assert _json(usual) == _json(fused)
    headers = {h: (fused.get(h), usual.get(h)) for h in COMPARED_HEADERS}
    assert all(a == b for a, b in headers.values()), headers
    assert "Cookie" in fused["Vary"] and fused["Content-Security-Policy"], headers
    assert fused["X-Frame-Options"] == "DENY" and fused["X-Content-Type-Options"] == "nosniff"


# --- 5. a dropped connection -------------------------------------------------------------------


@pytest.mark.parametrize("kept_proofs", [False, True], ids=["proved-each-time", "proof-kept"])
def test_a_connection_postgres_dropped_is_replaced_for_the_next_figure(
    transactional_db: None,
    client: Any,
    user: Any,
    custom: Any,
    settings: Any,
    kept_proofs: bool,
    elsewhere: Any,
) -> None:
    """The app's connection terminated by Postgres between two requests (outside any
    transaction): the next timeline.json still answers 200 with the same figure through the
    fused path; on a new connection when it is proved again, and with no query at all when its
    proof was kept (timeline.proofs)."""
    settings.SESSION_PROOFS = kept_proofs
    client.force_login(user)
    path = reverse("timeline_data", args=[custom.slug])
    first = client.get(path)
    assert first.status_code == 200 and _served_fused(first)
    assert not connection.in_atomic_block
    pid = connection.connection.info.backend_pid
    # The timeout: wait (up to 10 s) until the backend has exited.
    terminated = elsewhere.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,)).fetchone()
    assert terminated == (True,)
    gone = elsewhere.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,))
    assert gone.fetchone() == (0,)
    _evict_figure(first)  # the figure is built again on the new connection
    second = client.get(path)
    assert second.status_code == 200 and _served_fused(second)
    if kept_proofs:
        assert connection.connection.info.backend_pid == pid  # asked nothing of Postgres
        # Served, the next request that queries gets a new connection from Django's health
        # check (CONN_HEALTH_CHECKS, armed by request_started, which the test client mutes).
        connection.close()
    else:
        assert connection.connection.info.backend_pid != pid
    assert second["ETag"] == first["ETag"]
    assert _json(second) == _json(first)
    lines = [t for t in _json(second)["figure"]["data"] if t.get("mode") == "lines"]
    assert len(lines) == 2
    assert all(len(charts.from_typed_array(t["y"])) == 600 for t in lines)


def test_a_warm_session_is_not_proved_once_model_backend_is_no_longer_configured(
    client: Any, user: Any, incident: Any
) -> None:
    """The backend rule is checked on every request, not only when a session's data is first
    decoded: with ModelBackend taken out of AUTHENTICATION_BACKENDS after a served request,
    the fused URLs log the session out as every other page does."""
    client.force_login(user)
    path = reverse("incident_version", args=[incident.slug])
    assert _served_fused(client.get(path))
    with override_settings(AUTHENTICATION_BACKENDS=["axes.backends.AxesStandaloneBackend"]):
        proved, _ = _proved(client, "incident_version", incident.slug)
        assert proved is None
        fused = client.get(path)
        page = client.get(reverse("incident_timeline", args=[incident.slug]))
        assert not _served_fused(fused)
        assert fused.status_code == page.status_code == 302


def test_a_failed_fused_query_lets_the_usual_path_answer(
    transactional_db: None, client: Any, user: Any, custom: Any, caplog: Any, settings: Any
) -> None:
    """An error of the fused query that is not a dropped connection (here its prepared
    statement gone from the server behind psycopg's back, as behind a pooler in transaction
    mode) is logged and the usual path answers: the same 200 and figure, not a 500."""
    settings.SESSION_PROOFS = False  # the query itself, every time (no kept proof)
    client.force_login(user)
    path = reverse("timeline_data", args=[custom.slug])
    first = client.get(path)
    assert first.status_code == 200 and _served_fused(first)
    # Straight through libpq: psycopg still believes its statement is prepared.
    connection.connection.pgconn.exec_(b"DEALLOCATE ALL")
    _evict_figure(first)
    with caplog.at_level("WARNING", logger="timeline.access"):
        second = client.get(path)
    assert second.status_code == 200 and not _served_fused(second)
    assert _json(second) == _json(first)
    assert any("usual path" in r.getMessage() for r in caplog.records)
    assert not connection.connection.broken  # the connection was kept
