"""A small, bounded run of bench/load_ingest_and_read.py: concurrent uploads of different bundles
while 20 clients read timelines, on loopback, against the live server and a real worker.

Asserts what must hold under load (no request fails, nothing is lost: the rows equal the sum of
the parts); timings are printed by the bench script, never asserted here."""

from __future__ import annotations

import pytest

from bench.load_ingest_and_read import (
    actual_rows,
    bundle_files,
    expected_rows,
    run_load,
    wait_ingested,
    zipped,
)
from timeline.services import incident_create

BUNDLES, SERIES, STEPS, RUNS = 4, 5, 200, 10


@pytest.mark.worker
def test_concurrent_uploads_and_timeline_reads_lose_nothing(
    celery_worker, live_server, client, user, team
):
    incidents = [incident_create(team=team, title=f"load {i}", user=user) for i in range(2)]
    client.force_login(user)
    session = client.cookies["sessionid"].value
    bundles = [bundle_files(i, SERIES, STEPS, RUNS) for i in range(BUNDLES)]
    uploads = [
        (incidents[i % 2].slug, f"bundle-{i}.zip", zipped(files)) for i, files in enumerate(bundles)
    ]
    stats, _ = run_load(
        base=live_server.url,
        session=session,
        uploads=uploads,
        read_slugs=[i.slug for i in incidents],
        readers=20,
        reads_per_reader=3,
        deadline_s=240,
    )
    assert stats.errors == {}
    assert len(stats.latencies["upload"]) == BUNDLES
    assert len(stats.latencies["timeline page"]) == 20 * 3
    assert len(stats.latencies["timeline.json"]) == 20 * 3

    ids = [i.pk for i in incidents]
    wait_ingested(ids, expected_artifacts=2 * BUNDLES, timeout=240)
    expected = expected_rows(bundles)
    assert expected == {
        "events": BUNDLES * RUNS,
        "samples": BUNDLES * SERIES * STEPS,
        "series": BUNDLES * SERIES,
    }
    actual = actual_rows(ids)
    assert actual["failed"] == []
    assert {k: actual[k] for k in expected} == expected
