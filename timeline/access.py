"""Who may see and change an incident: one rule for every page, write and API call.

A signed-in user may view an incident and act on it (upload, retry, pull metrics, notes, marks,
hypotheses, evidence, findings, edits, the event table, the analysis, exports) when they are a
member of its team; a superuser may everywhere. Anyone else gets the same 404 as for an incident
that does not exist, for every URL and method. A bearer token of the push API acts for its
team: that team's incidents and no other (a superuser's session is no token).

Managing a team (its members, admins and push API tokens) is for the team's admins, and
superusers everywhere; creating a team for superusers and those who administer one already.

Every view and the API get their incident here; no view checks teams itself.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from functools import wraps
from typing import Any

import psycopg
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.crypto import constant_time_compare
from django.utils.functional import cached_property

from timeline import proofs
from timeline.models import Incident, Team
from timeline.versions import VERSION_SQL, version_annotation


def _is_superuser(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False) and getattr(user, "is_superuser", False))


def incidents_visible(user: Any) -> QuerySet[Incident]:
    """Every incident the user may view and act on."""
    qs = Incident.objects.select_related("team")
    if not getattr(user, "is_authenticated", False):
        return qs.none()
    if _is_superuser(user):
        return qs
    return qs.filter(team__members=user.pk)


def teams_for(user: Any) -> QuerySet[Team]:
    """The teams the user may create incidents in (and whose incidents they act on)."""
    if _is_superuser(user):
        return Team.objects.all()
    if not getattr(user, "is_authenticated", False):
        return Team.objects.none()
    return Team.objects.filter(members=user.pk)


def incident_for(user: Any, slug: str, *, annotate: dict[str, Any] | None = None) -> Incident:
    """The incident, for a page or a write; 404 when the user may not (no hint it exists).
    ``annotate``: expressions to read in the same query (the live version, say)."""
    incident = incidents_visible(user).filter(slug=slug).annotate(**(annotate or {})).first()
    if incident is None:
        raise Http404("No such incident")
    return incident


def incident_for_token(team: Team, slug: str) -> Incident | None:
    """The incident a push API token of ``team`` may reach, or None."""
    return Incident.objects.filter(team=team, slug=slug).first()


def may_manage_team(user: Any, team: Team) -> bool:
    """A superuser, or an admin of this team: members, admins and push API tokens."""
    if not getattr(user, "is_authenticated", False):
        return False
    return _is_superuser(user) or team.admins.filter(pk=user.pk).exists()


def teams_managed(user: Any) -> QuerySet[Team]:
    """The teams the user manages."""
    if _is_superuser(user):
        return Team.objects.all()
    if not getattr(user, "is_authenticated", False):
        return Team.objects.none()
    return Team.objects.filter(admins=user.pk)


def may_create_team(user: Any) -> bool:
    """Superusers, and users who administer a team already."""
    return _is_superuser(user) or teams_managed(user).exists()


# --- One round trip for the session, the user, the incident and its version -----------------
#
# The figure's JSON and the version are what open pages ask for most (every zoom, every 4 s).
# Django would spend four round trips on them before the view's own work: the connection's
# health check, the session, the user and the incident (with its version). For these two views
# the session row, the user, the team membership, the incident and its version are one query
# instead. It can only say yes, never no: a request it does not prove allowed, for any reason,
# goes the usual way (request.user, then incident_for), which decides exactly as for every
# other page. It proves the same things Django's get_user does before it counts a session as
# logged in (the row exists and has not expired, its data carries Django's signature, the
# backend is ModelBackend and one of AUTHENTICATION_BACKENDS, the user exists and is active,
# the password hash in the session is the user's, under the current SECRET_KEY), then the rule
# above (a member of the incident's team, or a superuser).

log = logging.getLogger(__name__)
_MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
_DB_SESSIONS = "django.contrib.sessions.backends.db"
# A session key -> (its data as stored, the user id and password hash it holds): decoding the
# signed data costs more than the query, and the same data always decodes the same way. The
# query still reads the row every time: a logout or a new login changes or removes it.
_SESSION_USERS: dict[str, tuple[str, int, str]] = {}
_SESSION_USERS_MAX = 10_000


class _FusedQuery:
    """The query's SQL and how to read its rows, built once from the models."""

    @cached_property
    def parts(self) -> tuple[str, list[str], list[str]]:
        user_model = get_user_model()
        members = Team.members.through._meta
        user_fields = [f.attname for f in user_model._meta.concrete_fields]
        incident_fields = [f.attname for f in Incident._meta.concrete_fields]
        user_cols = ", ".join(f'u."{f.column}"' for f in user_model._meta.concrete_fields)
        incident_cols = ", ".join(f'i."{f.column}"' for f in Incident._meta.concrete_fields)
        version = VERSION_SQL.format(i='i."id"')
        team_col = members.get_field("team").column
        user_col = members.get_field(str(user_model._meta.model_name)).column  # type: ignore[union-attr]
        sql = (
            # Names come from the models' metadata; every value is a parameter.
            f'SELECT s.session_data, s.expire_date, EXISTS (SELECT 1 FROM "{members.db_table}" m '  # noqa: S608
            f'WHERE m."{team_col}" = i."team_id" AND m."{user_col}" = u."id"), '
            f"({version}), {user_cols}, {incident_cols} "
            f'FROM "django_session" s CROSS JOIN "{Incident._meta.db_table}" i '
            f'LEFT JOIN "{user_model._meta.db_table}" u ON u."id" = %(uid)s '
            "WHERE s.session_key = %(key)s AND s.expire_date > %(now)s AND i.slug = %(slug)s"
        )
        return sql, user_fields, incident_fields

    def row(self, key: str, uid: int | None, slug: str) -> tuple[Any, ...] | None:
        """The row, through a prepared statement (half the time of Django's cursor, which
        plans the query again each time); None also when the query failed (the usual path
        answers then). Without Django's cursor there is no health check either: a connection
        Postgres dropped (a restart) is replaced and the query run once more, as the health
        check would have done."""
        sql, _, _ = self.parts
        # The expiry as Django's session store judges it: by this process's clock.
        params = {"key": key, "uid": uid, "slug": slug, "now": timezone.now()}
        for again in (False, True):
            connection.ensure_connection()
            try:
                with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cur:
                    # Binary results: Django reads a text timestamptz with a Python loader
                    # (~10 us each, and the row holds eight); psycopg's binary one is C.
                    cur.execute(sql, params, prepare=True, binary=True)
                    found: tuple[Any, ...] | None = cur.fetchone()
                    return None if found is None else tuple(map(_as_django_reads, found))
            except DatabaseError:
                if connection.in_atomic_block:
                    raise
                raw = connection.connection
                if not again and (raw is None or raw.closed or raw.broken):
                    connection.close()
                    continue
                # Anything else (a plan invalidated by a migration, a pooler refusing
                # prepared statements): this path says nothing; Django's answers.
                log.warning(
                    "session + incident query failed; the usual path answers it", exc_info=True
                )
                return None
        return None


_FUSED = _FusedQuery()


def _as_django_reads(value: Any) -> Any:
    """A value of the binary row as Django's own cursor gives it: an aware datetime in
    ``datetime.UTC`` (psycopg's binary loader gives the session's zone, which is UTC)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC)
    return value


def _session_user(request: HttpRequest, key: str, data: str) -> tuple[str, int, str] | None:
    """(data, user id, password hash) of a session's data when Django would accept it."""
    known = _SESSION_USERS.get(key)
    if known is not None and known[0] == data:
        return known
    decoded = request.session.decode(data)  # {} when the signature does not hold
    backend, raw_id, auth_hash = (
        decoded.get(BACKEND_SESSION_KEY),
        decoded.get(SESSION_KEY),
        decoded.get(HASH_SESSION_KEY),
    )
    if backend != _MODEL_BACKEND:  # (listed in AUTHENTICATION_BACKENDS: incident_by_session)
        return None
    if not isinstance(auth_hash, str) or not auth_hash:
        return None
    try:
        uid = int(get_user_model()._meta.pk.to_python(raw_id))
    except (TypeError, ValueError, ValidationError):
        return None
    if len(_SESSION_USERS) >= _SESSION_USERS_MAX:
        _SESSION_USERS.clear()
    entry = (data, uid, auth_hash)
    _SESSION_USERS[key] = entry  # (another thread may clear the dict at any time)
    return entry


def incident_by_session(request: HttpRequest, slug: str) -> Incident | None:
    """The incident with its ``version`` when the session cookie alone proves the user may
    view it (one query; sets ``request.user``); None when it does not prove it."""
    if settings.SESSION_ENGINE != _DB_SESSIONS or settings.SESSION_SAVE_EVERY_REQUEST:
        return None
    if _MODEL_BACKEND not in settings.AUTHENTICATION_BACKENDS:
        return None  # checked on every request, not only when a session is first decoded
    key = request.COOKIES.get(settings.SESSION_COOKIE_NAME, "")
    if not (8 <= len(key) <= 40 and key.isascii() and key.isalnum()):
        return None
    _, user_fields, incident_fields = _FUSED.parts
    proof, ticket = proofs.PROOFS.lookup(key, slug)
    if proof is not None:  # proven before, and nothing it rests on has changed since
        return _proven(request, user_fields, incident_fields, proof)
    known = _SESSION_USERS.get(key)
    row = _FUSED.row(key, known[1] if known else None, slug)
    if row is None:
        return None  # no such session (or expired), or no such incident
    session = _session_user(request, key, row[0])
    if session is None:
        return None
    if known is None or known[1] != session[1]:
        row = _FUSED.row(key, session[1], slug)
        if row is None or row[0] != session[0]:
            return None
    data, expires, member, version, *values = row
    user_values, incident_values = values[: len(user_fields)], values[len(user_fields) :]
    if user_values[user_fields.index("id")] is None:
        return None  # the user is gone
    user = get_user_model().from_db(connection.alias, user_fields, user_values)
    if not getattr(user, "is_active", True):
        return None
    if not constant_time_compare(session[2], user.get_session_auth_hash()):
        return None  # a changed password, or another SECRET_KEY: Django decides
    if not (member or user.is_superuser):
        return None
    proof = proofs.Proof(
        expires=expires,
        user_values=tuple(user_values),
        incident_values=tuple(incident_values),
        version=version,
        kept_at=time.monotonic(),
    )
    proofs.PROOFS.keep(ticket, key, slug, proof)
    return _proven(request, user_fields, incident_fields, proof, user=user)


def _proven(
    request: HttpRequest,
    user_fields: list[str],
    incident_fields: list[str],
    proof: proofs.Proof,
    *,
    user: Any = None,
) -> Incident:
    """The incident (with its version) of a proof; sets ``request.user``. Fresh model
    instances for each request: nothing a view changes on them outlives it."""
    if user is None:
        user = get_user_model().from_db(connection.alias, user_fields, proof.user_values)
    incident = Incident.from_db(connection.alias, incident_fields, proof.incident_values)
    incident.version = proof.version  # type: ignore[attr-defined]  # as version_annotation()
    request.user = user
    return incident


def fused_incident_view(
    view: Callable[..., HttpResponse],
) -> Callable[..., HttpResponse]:
    """A view of one incident called as ``view(request, incident)``: the incident (with its
    ``version``) that SessionIncidentMiddleware proved from the session, else incident_for's."""

    @wraps(view)
    def wrapped(request: HttpRequest, slug: str) -> HttpResponse:
        incident = getattr(request, "session_incident", None)
        if not isinstance(incident, Incident) or incident.slug != slug:
            incident = incident_for(request.user, slug, annotate={"version": version_annotation()})
        return view(request, incident)

    wrapped.fused_incident = True  # type: ignore[attr-defined]
    return wrapped


class SessionIncidentMiddleware:
    """For views made by ``fused_incident_view``: ``incident_by_session`` before
    LoginRequiredMiddleware asks for ``request.user`` (which would cost the session and the user
    queries). What it proves sets ``request.user`` and ``request.session_incident``; what it does
    not prove leaves the request as it was, for the login check and incident_for."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if getattr(request, "session_incident", None) is not None:
            # The answer depends on the session cookie, as when SessionMiddleware reads it.
            patch_vary_headers(response, ("Cookie",))
        return response

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., HttpResponse],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> None:
        slug = view_kwargs.get("slug")
        if getattr(view_func, "fused_incident", False) and isinstance(slug, str):
            incident = incident_by_session(request, slug)
            if incident is not None:
                request.session_incident = incident  # type: ignore[attr-defined]
