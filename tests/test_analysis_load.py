"""load_inputs on requests and harness runs: the attrs read as the engine reads them, whatever
their JSON type, the same in a transaction (one connection) and outside one (the two big
queries on connections of their own)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import transaction

from timeline.analysis import load_inputs
from timeline.correlation.types import HarnessRun, HarnessRuns, Request, Requests
from timeline.models import Event

T0 = dt.datetime(2026, 11, 20, 22, 0, tzinfo=dt.UTC)


def _event(incident, n: int, kind: str, attrs: dict, *, ends: int | None = None, at: int = 0):
    return Event.objects.create(
        incident=incident,
        at=T0 + dt.timedelta(seconds=at, microseconds=n),
        ends_at=None if ends is None else T0 + dt.timedelta(seconds=ends),
        kind=kind,
        lane="requests" if kind == "request" else "harness",
        title=f"{kind} {n}",
        key=f"{kind}-key-{n}",
        fingerprint=f"{n:064x}",
        attrs=attrs,
    )


def _store(incident):
    rids = [{"rid": "a1"}, {"rid": 12}, {}, {"rid": None}, {"rid": "two\nlines"}, {"rid": True}]
    requests = [
        _event(incident, n, "request", attrs, ends=None if n % 2 else 60, at=10 - n)
        for n, attrs in enumerate(rids)
    ]
    runs = [
        {"suite": "s", "case": "c", "status": "pass", "score": 0.93},
        {"suite": "s", "case": "c", "status": "fail", "score": 3},
        {"case": "c", "status": 7, "score": True},
        {"suite": "s", "case": "c", "status": "pass", "score": "high"},
        {"suite": "s", "case": "c\nd", "status": "skipped"},
    ]
    harness = [_event(incident, 100 + n, "harness_run", a, at=n) for n, a in enumerate(runs)]
    return requests, harness


def _expected(requests, harness):
    rid = ["a1", "12", requests[2].key, "None", "two\nlines", "True"]
    want_requests = tuple(
        Request(ref=e.pk, rid=rid[n], received_at=e.at, finished_at=e.ends_at)
        for n, e in sorted(enumerate(requests), key=lambda p: (p[1].at, p[1].pk))
    )
    fields = [
        ("s", "c", "pass", 0.93),
        ("s", "c", "fail", 3.0),
        ("", "c", "7", 1.0),
        ("s", "c", "pass", None),
        ("s", "c\nd", "skipped", None),
    ]
    want_harness = tuple(
        HarnessRun(ref=e.pk, at=e.at, suite=f[0], case=f[1], status=f[2], score=f[3])
        for e, f in zip(harness, fields, strict=True)
    )
    return want_requests, want_harness


@pytest.mark.django_db(transaction=True)
def test_requests_and_harness_runs_read_as_columns_inside_and_outside_a_transaction(incident):
    requests, harness = _store(incident)
    want_requests, want_harness = _expected(requests, harness)

    outside = load_inputs(incident)  # the two aggregates on connections of their own
    with transaction.atomic():
        inside = load_inputs(incident)  # the same queries on this one

    for got in (outside, inside):
        assert isinstance(got.requests, Requests) and isinstance(got.harness, HarnessRuns)
        assert got.requests == want_requests
        assert tuple(got.requests) == want_requests
        assert got.harness == want_harness
        assert [r.score for r in got.harness] == [0.93, 3.0, 1.0, None, None]
    assert outside == inside


@pytest.mark.django_db(transaction=True)
def test_an_incident_with_no_requests_or_harness_runs_loads_empty_columns(incident):
    got = load_inputs(incident)

    assert len(got.requests) == 0 and not got.requests
    assert len(got.harness) == 0 and not got.harness
    assert got.requests == () and got.harness == ()
