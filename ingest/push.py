"""Push ingest: events, config changes and harness runs posted by a harness or CI job.

Each push is one artifact (sha256 of its body, so posting the same body twice adds nothing),
validated in full here, then loaded in one transaction like a file
(ingest.services.orchestration.records_ingest).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
from typing import Any

from django.utils import timezone

from evidence.vocabulary import EventKind, Lane, Scope, Source
from ingest import checks
from ingest.parsers import harness, jsontext
from ingest.parsers.types import (
    ConfigChangeRecord,
    EventRecord,
    ParseContext,
    ParseError,
    ParseResult,
)
from ingest.services import orchestration
from timeline.models import ApiToken, Artifact, Incident, Team

MAX_ITEMS = 10_000
PUSH_KINDS = ("events", "config-changes", "harness-runs")


class PushError(ValueError):
    """The pushed body is not what the endpoint expects; nothing was written."""


def token_create(*, team: Team, name: str, user: Any = None) -> str:
    """A new token for the team; only its digest is stored, so this is the one time it is seen."""
    token = "itl_" + secrets.token_urlsafe(32)
    ApiToken.objects.create(
        team=team,
        name=name[:100],
        digest=_digest(token),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    return token


def token_team(raw: str) -> Team | None:
    """The team a bearer token belongs to, or None."""
    if not raw:
        return None
    token = ApiToken.objects.select_related("team").filter(digest=_digest(raw)).first()
    if token is None:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.team


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _time(value: Any, where: str) -> dt.datetime:
    if not isinstance(value, str):
        raise PushError(f"{where}: expected an ISO 8601 time with a zone, got {value!r}")
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise PushError(f"{where}: expected an ISO 8601 time with a zone, got {value!r}") from None
    if parsed.tzinfo is None:
        raise PushError(f"{where}: {value!r} has no zone (add Z or an offset)")
    try:
        at = parsed.astimezone(dt.UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 is before the year 1 in UTC
        at = dt.datetime.min.replace(tzinfo=dt.UTC)
    problem = checks.time_problem(at)
    if problem:
        raise PushError(f"{where}: {value!r} is outside the years the timeline shows; {problem}")
    return at


def _str(item: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = item.get(key)
    if value is None:
        if required:
            raise PushError(f"{where}: missing {key!r}")
        return None
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise PushError(f"{where}: {key!r} must be a string, got {type(value).__name__}")
    return str(value)


def _items(body: Any, field: str) -> list[dict[str, Any]]:
    if not isinstance(body, dict) or not isinstance(body.get(field), list):
        raise PushError(f'expected a JSON object {{"{field}": [...]}}')
    items = body[field]
    if not items:
        raise PushError(f"{field!r} is empty")
    if len(items) > MAX_ITEMS:
        raise PushError(f"at most {MAX_ITEMS} {field} per push, got {len(items)}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise PushError(f"{field}[{i}]: expected an object")
        found = checks.json_problem(item)
        if found is not None:  # NUL, lone surrogates, nesting: named before anything is built
            raise PushError(f"{field}[{i}]{found[0]}: {found[1]}")
    return list(items)


def _events(body: Any) -> list[EventRecord]:
    out = []
    allowed_kinds = set(EventKind) - {EventKind.CONFIG_CHANGE}
    for i, item in enumerate(_items(body, "events")):
        where = f"events[{i}]"
        kind = _str(item, "kind", where, required=False) or EventKind.NOTE
        if kind not in allowed_kinds:
            raise PushError(
                f"{where}: kind {kind!r} is not one of {sorted(map(str, allowed_kinds))}"
            )
        lane = _str(item, "lane", where, required=False) or Lane.SERVER
        if lane not in set(Lane):
            raise PushError(f"{where}: lane {lane!r} is not one of {sorted(map(str, Lane))}")
        at = _time(item.get("at"), f"{where}.at")
        ends_at = _time(item["ends_at"], f"{where}.ends_at") if item.get("ends_at") else None
        if ends_at is not None and ends_at < at:
            raise PushError(f"{where}: ends_at is before at")
        attrs = item.get("attrs", {})
        if not isinstance(attrs, dict):
            raise PushError(f"{where}: attrs must be an object")
        title = _str(item, "title", where) or ""
        key = _str(item, "key", where, required=False) or f"{at.isoformat()}\x1f{title}"
        out.append(
            EventRecord(
                kind=EventKind(kind),
                lane=Lane(lane),
                at=at,
                ends_at=ends_at,
                key=f"api\x1f{key}",
                title=title[:500],
                body=_str(item, "body", where, required=False) or "",
                attrs=attrs,
            )
        )
    return out


def _changes(body: Any) -> list[ConfigChangeRecord]:
    out = []
    scopes = set(Scope)
    for i, item in enumerate(_items(body, "changes")):
        where = f"changes[{i}]"
        key = _str(item, "key", where) or ""
        old = _str(item, "old", where, required=False)
        new = _str(item, "new", where, required=False)
        if old is None and new is None:
            raise PushError(f"{where}: give 'old', 'new' or both")
        scope = _str(item, "scope", where, required=False) or (
            Scope.FLAG if key.startswith("--") else Scope.ENV
        )
        if scope not in scopes:
            raise PushError(f"{where}: scope {scope!r} is not one of {sorted(map(str, scopes))}")
        out.append(
            ConfigChangeRecord(
                key=key,
                old=old,
                new=new,
                at=_time(item.get("at"), f"{where}.at"),
                scope=Scope(scope),
                source=Source.API,
                ref=_str(item, "ref", where, required=False) or "push",
                where=_str(item, "where", where, required=False) or "",
                note=_str(item, "note", where, required=False) or "",
            )
        )
    return out


def _harness(body: Any, name: str) -> list[EventRecord]:
    """Harness runs use the JSON Lines format's own parser, so both paths validate alike."""
    lines = "\n".join(json.dumps(item) for item in _items(body, "runs")).encode()
    try:
        return harness.parse_harness_jsonl(lines, ParseContext(name=name)).events
    except ParseError as exc:
        item = f"runs[{exc.line - 1}]" if exc.line else "runs"
        raise PushError(f"{item}: {exc.message}") from None


def _payload(body: bytes) -> Any:
    """The body as JSON: never a RecursionError, a decoding error or a lone surrogate's
    encoding error out of here, only a PushError naming the line."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        raise PushError(f"body line {line}: not UTF-8 (byte {exc.start}); expected JSON") from None
    try:
        return jsontext.loads(text, "body")
    except json.JSONDecodeError as exc:
        raise PushError(f"body line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except ParseError as exc:
        raise PushError(f"body line {exc.line}: {exc.message}") from None


def push_ingest(*, incident: Incident, kind: str, body: bytes, user: Any = None) -> Artifact:
    """Validate and load one push; returns its artifact (an existing one for a repeated body)."""
    if kind not in PUSH_KINDS:
        raise PushError(f"unknown push kind {kind!r}")
    payload = _payload(body)
    name = f"api:{kind}"
    result = ParseResult(kind=f"api_{kind.replace('-', '_')}")
    if kind == "events":
        result.events = _events(payload)
    elif kind == "config-changes":
        result.config_changes = _changes(payload)
    else:
        result.events = _harness(payload, name)
    problem = next(checks.result_problems(result), None)
    if problem is not None:  # what the items became still breaks a rule of what is stored
        item = problem.record.replace("config_changes", "changes")
        if kind == "harness-runs":
            item = item.replace("events", "runs")
        raise PushError(f"{item}.{problem.field}: {problem.message}")
    return orchestration.records_ingest(
        incident=incident,
        name=name,
        digest=hashlib.sha256(kind.encode() + b"\0" + body).hexdigest(),
        size=len(body),
        result=result,
        user=user,
    )
