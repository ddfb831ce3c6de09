"""Hostile requests (issue 15.5): the push API answers a JSON 400 naming the item and field for
NUL characters, lone surrogates, times the timeline cannot show and nesting past any sense; a
NUL in a page's parameter is a 400, never a 500. A fuzz pass pushes many hostile bodies: every
answer is a 2xx or a JSON 4xx, and nothing a refused push held is stored.
"""

from __future__ import annotations

import json
import random

import pytest

from ingest.push import token_create
from tests.reliability.helpers import row_counts

URL = "/api/v1/incidents/{slug}/{kind}"
FUZZ_BODIES = 300
EVENT = {"at": "2026-11-20T20:00:00Z", "title": "ok", "kind": "note", "lane": "server"}
CHANGE = {"key": "--tp", "old": "4", "new": "8", "at": "2026-11-20T20:00:00Z"}
RUN = {
    "ts": "2026-11-20T12:00:00Z",
    "suite": "stability",
    "case": "long",
    "status": "pass",
    "score": 0.9,
    "threshold": 0.8,
}


@pytest.fixture
def token(team) -> str:
    return token_create(team=team, name="ci")


def _post(client, slug: str, kind: str, body: bytes | str, token: str):
    return client.post(
        URL.format(slug=slug, kind=kind),
        data=body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def _deep(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


# (kind, items field, the second item, where the error must point, words it must carry)
HOSTILE_ITEMS = [
    ("events", "events", {**EVENT, "title": "a\x00b"}, "events[1].title", "NUL"),
    ("events", "events", {**EVENT, "body": "lone \ud800"}, "events[1].body", "lone surrogate"),
    ("events", "events", {**EVENT, "attrs": {"k\x00": 1}}, "events[1].attrs", "NUL"),
    ("events", "events", {**EVENT, "at": "0001-01-01T00:00:00Z"}, "events[1].at", "years"),
    ("events", "events", {**EVENT, "at": "0001-01-01T00:00:00+05:00"}, "events[1].at", "years"),
    ("events", "events", {**EVENT, "at": "9999-12-31T23:59:59-05:00"}, "events[1].at", "years"),
    ("events", "events", {**EVENT, "ends_at": "9999-12-31T00:00:00Z"}, "events[1].ends_at", ""),
    ("events", "events", {**EVENT, "attrs": {"x": _deep(40)}}, "events[1].attrs", "deeper"),
    ("events", "events", {**EVENT, "key": "k\x00"}, "events[1].key", "NUL"),
    ("config-changes", "changes", {**CHANGE, "new": "8\x00"}, "changes[1].new", "NUL"),
    ("config-changes", "changes", {**CHANGE, "key": "\udfff"}, "changes[1].key", "surrogate"),
    ("config-changes", "changes", {**CHANGE, "at": "0001-01-01T00:00Z"}, "changes[1].at", ""),
    ("config-changes", "changes", {**CHANGE, "key": "K" * 301}, "changes[1].key", "at most"),
    ("harness-runs", "runs", {**RUN, "suite": "s\x00"}, "runs[1].suite", "NUL"),
    ("harness-runs", "runs", {**RUN, "ts": "0001-01-01T00:00:00+05:00"}, "runs[1]", "ts"),
    ("harness-runs", "runs", {**RUN, "ts": "1850-01-01T00:00:00Z"}, "runs[1].at", "years"),
    ("harness-runs", "runs", {**RUN, "extra": _deep(50)}, "runs[1].extra", "deeper"),
]


@pytest.mark.attack("push API: hostile item")
@pytest.mark.parametrize(("kind", "field", "item", "where", "words"), HOSTILE_ITEMS)
def test_a_hostile_item_is_a_json_400_naming_it(
    client, incident, token, kind, field, item, where, words
):
    good = {"events": EVENT, "changes": CHANGE, "runs": RUN}[field]
    before = row_counts(incident)
    body = json.dumps({field: [good, item]})  # lone surrogates go as \\udXXX escapes
    response = _post(client, incident.slug, kind, body, token)
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error.startswith(where), error
    assert words in error
    assert row_counts(incident) == before


@pytest.mark.attack("push API: unreadable body")
@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 32 levels"),
        ('{"events": [{"attrs": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}]}", "deeper"),
        ('{"events": [{"n": ' + "9" * 5000 + "}]}", "more than 4300 digits"),
        (b'{"events": [{"title": "\xff\xfe"}]}', "not UTF-8"),
        ('{"events": [', "not valid JSON"),
        ("\x00", "not valid JSON"),
    ],
)
def test_a_body_no_json_reader_takes_is_a_json_400(client, incident, token, body, words):
    response = _post(client, incident.slug, "events", body, token)
    assert response.status_code == 400, response.content
    assert words in response.json()["error"]


@pytest.mark.attack("NUL in a page request")
@pytest.mark.parametrize(
    "path",
    [
        "/?q=%00",
        "/incidents/{slug}/events/?q=a%00b",
        "/incidents/{slug}/events/?lane=server%00",
        "/incidents/{slug}/events/?kind=%00",
        "/incidents/{slug}/timeline.json?series=up%00",
        "/incidents/{slug}/timeline.json?%00=1",
        "/incidents/{slug}/events/%00/",
    ],
)
def test_a_nul_in_a_page_request_is_a_400(client, incident, user, path):
    client.force_login(user)
    response = client.get(path.format(slug=incident.slug))
    assert response.status_code in (400, 404), response.status_code  # %00 in a path: no route
    if response.status_code == 400:
        assert response["Content-Type"].startswith("text/plain")
        assert b"NUL" in response.content


@pytest.mark.attack("NUL in an API parameter or login", count=2)
def test_a_nul_in_an_api_parameter_or_a_login_form_is_a_400(client, incident, token):
    response = client.get(
        f"/api/v1/incidents/{incident.slug}/analysis?x=%00",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 400
    assert "NUL" in response.json()["error"]
    response = client.post("/login/", {"username": "alice\x00", "password": "x"})
    assert response.status_code == 400


def _fuzz_value(rng: random.Random, depth: int = 0) -> object:
    pick = rng.randrange(12)
    if pick == 0:
        return "".join(
            rng.choice(["\x00", "\ud800", "\udfff", "<b>", "é", "x", "'", "\\"]) for _ in range(5)
        )
    if pick == 1:
        return rng.choice(["0001-01-01T00:00:00Z", "9999-12-31T23:59:59-14:00", "0000-00-00"])
    if pick == 2:
        return rng.choice([10**30, -(2**63) - 1, 1e308, float("nan"), True, None])
    if pick == 3 and depth < 60:
        return [_fuzz_value(rng, depth + 1)]
    if pick == 4 and depth < 60:
        return {rng.choice(["at", "title", "k\x00", "\ud800"]): _fuzz_value(rng, depth + 1)}
    if pick == 5:
        return "2026-11-20T20:00:00Z"
    return rng.choice(["ok", "note", "server", "--tp", "pass", "x" * 600, ""])


def _fuzz_item(rng: random.Random, template: dict) -> dict:
    item = dict(template)
    for _ in range(rng.randrange(1, 4)):
        key = rng.choice([*template, "attrs", "body", "ends_at", "extra"])
        item[key] = _fuzz_value(rng)
    return item


@pytest.mark.attack("push API: fuzzed body", count=FUZZ_BODIES)
def test_fuzz_every_hostile_push_is_a_2xx_or_a_json_4xx(client, incident, token):
    rng = random.Random(1515)
    kinds = [("events", "events", EVENT), ("config-changes", "changes", CHANGE)]
    kinds.append(("harness-runs", "runs", RUN))
    answers: dict[int, int] = {}
    for _ in range(FUZZ_BODIES):
        kind, field, template = rng.choice(kinds)
        items = [_fuzz_item(rng, template) for _ in range(rng.randrange(1, 4))]
        body = json.dumps({field: items}, allow_nan=True)
        if rng.random() < 0.1:  # a body cut short, or raw bytes spliced in
            body = body[: rng.randrange(len(body))] + rng.choice(["", "\x00", "\\ud800", "]]"])
        before = row_counts(incident)
        response = _post(client, incident.slug, kind, body, token)
        answers[response.status_code] = answers.get(response.status_code, 0) + 1
        assert response.status_code < 500, (body[:300], response.content[:300])
        assert response["Content-Type"] == "application/json", body[:300]
        if response.status_code >= 400:
            assert "error" in response.json()
            assert row_counts(incident) == before
    assert answers.get(400, 0) >= 100 and answers.get(201, 0) >= 5, answers
