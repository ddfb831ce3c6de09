"""timeline.json under many viewers (issue 17): the body is shared through Redis under the
incident's version, its key is the ETag (a body-less 304 for a viewer who has it), and anything
new in the incident is a new version, never a stale figure. Also: the default panels of an
incident whose metrics are all custom are drawn by timeline.json and the export, not only by
the page."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django.urls import reverse

from timeline import charts, shared_cache
from timeline.figure_data import timeline_figure_data
from timeline.services.notes import note_add
from timeline.versions import incident_version


def _get(client: Any, slug: str, **headers: str) -> Any:
    return client.get(reverse("timeline_data", args=[slug]), headers=headers)


def test_a_viewer_with_the_figure_gets_a_304_and_a_change_makes_a_new_one(
    client: Any, user: Any, custom: Any
) -> None:
    client.force_login(user)
    first = _get(client, custom.slug)
    assert first.status_code == 200 and first["Cache-Control"] == "private, no-cache"
    etag = first["ETag"]
    again = _get(client, custom.slug, if_none_match=etag)
    assert again.status_code == 304 and not again.content
    # The same window for another viewer comes from the shared cache, byte for byte.
    assert _get(client, custom.slug).content == first.content
    before = incident_version(custom)
    note_add(
        incident=custom, user=user, at=dt.datetime(2026, 11, 20, 8, 1, tzinfo=dt.UTC), body="x"
    )
    assert incident_version(custom) != before
    after = _get(client, custom.slug, if_none_match=etag)
    assert after.status_code == 200 and after["ETag"] != etag
    notes = [t for t in json.loads(after.content)["figure"]["data"] if t.get("name") == "Notes"]
    assert notes and len(notes[0]["x"]) == 1


def test_a_cached_body_is_stored_under_the_version_not_shown_to_another_incident(
    client: Any, user: Any, custom: Any, incident: Any
) -> None:
    client.force_login(user)
    a = _get(client, custom.slug)
    b = _get(client, incident.slug)
    assert a["ETag"] != b["ETag"] and a.content != b.content


def test_redis_down_for_the_cache_costs_a_rebuild_not_a_page(
    client: Any, user: Any, custom: Any, monkeypatch: Any, settings: Any
) -> None:
    client.force_login(user)  # (sessions are in the database: they need no Redis)
    # A Redis that refuses connections, for the bytes cache and for Django's cache: reads
    # miss and writes are dropped, the figure is built and served.
    monkeypatch.setattr(shared_cache, "_client", lambda: _Unreachable())
    settings.CACHES = {
        "default": {
            **settings.CACHES["default"],
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"socket_connect_timeout": 0.5},
        }
    }
    response = _get(client, custom.slug)
    assert response.status_code == 200 and response.content.startswith(b'{"figure"')
    lines = [t for t in json.loads(response.content)["figure"]["data"] if t.get("mode") == "lines"]
    assert len(lines) == 2


class _Unreachable:
    def __getattr__(self, name: str) -> Any:
        import redis

        def fail(*args: Any, **kwargs: Any) -> Any:
            raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

        return fail


def test_custom_metrics_are_the_default_panels_of_the_data_and_the_export(
    client: Any, user: Any, custom: Any
) -> None:
    client.force_login(user)
    figure = json.loads(_get(client, custom.slug).content)["figure"]
    lines = [t for t in figure["data"] if t.get("mode") == "lines"]
    assert len(lines) == 2  # both custom metrics, one series each
    assert all(len(charts.from_typed_array(t["y"])) == 600 for t in lines)
    exported = timeline_figure_data(custom).data
    assert [p.title for p in exported.panels] == [
        "vllm:custom_kv_blocks_used",
        "vllm:custom_spec_accept_rate",
    ]


def test_an_edited_note_is_a_new_version_and_a_new_figure(
    client: Any, user: Any, custom: Any
) -> None:
    from timeline.services.notes import note_update

    client.force_login(user)
    at = dt.datetime(2026, 11, 20, 8, 1, tzinfo=dt.UTC)
    note = note_add(incident=custom, user=user, at=at, body="before")
    first = _get(client, custom.slug)
    note_update(note=note, user=user, at=at, body="after the edit")
    second = _get(client, custom.slug, if_none_match=first["ETag"])
    assert second.status_code == 200
    assert b"after the edit" in second.content and b"before" not in second.content
