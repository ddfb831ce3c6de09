"""The incident's version from the change log the database keeps (migration 0018): every write
to an incident's events or series changes it, whatever wrote it (ORM, bulk insert, raw SQL,
update, delete), a write that changes nothing does not, one statement logs one row however many
rows it wrote, and folding the log changes the version once and never back."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from django.db import connection

from evidence.vocabulary import EventKind, Lane
from tests.conftest import ingest_folder
from timeline.models import Event, Incident, IncidentChange, Series
from timeline.versions import changes_compact, incident_version

T0 = dt.datetime(2026, 11, 20, 8, 0, tzinfo=dt.UTC)


def _event(incident: Incident, i: int) -> Event:
    return Event(
        incident=incident,
        at=T0 + dt.timedelta(seconds=i),
        kind=EventKind.LOG_ERROR,
        lane=Lane.SERVER,
        title=f"error {i}",
        body="",
        attrs={},
        key="",
        fingerprint=f"fp-{i}",
    )


def _log_rows(incident: Incident) -> int:
    return IncidentChange.objects.filter(incident_id=incident.pk).count()


def test_every_kind_of_write_to_events_is_a_new_version(
    incident: Incident, custom: Incident
) -> None:
    seen = {incident_version(incident)}
    other = incident_version(custom)

    rows = _log_rows(incident)
    Event.objects.bulk_create([_event(incident, i) for i in range(2_000)])
    # One statement, one row of the log (its transition table, not a row per event).
    assert _log_rows(incident) == rows + 1
    seen.add(incident_version(incident))

    Event.objects.filter(incident=incident, fingerprint="fp-7").update(title="edited")
    seen.add(incident_version(incident))

    Event.objects.filter(incident=incident, fingerprint="fp-8").delete()
    seen.add(incident_version(incident))

    with connection.cursor() as cur:  # a write no service made
        cur.execute("UPDATE timeline_event SET body = 'x' WHERE incident_id = %s", [incident.pk])
    seen.add(incident_version(incident))
    assert len(seen) == 5

    # An update that matches nothing logs nothing; another incident's version never moved.
    now = incident_version(incident)
    Event.objects.filter(incident=incident, fingerprint="no such").update(title="x")
    assert incident_version(incident) == now
    assert incident_version(custom) == other


def test_samples_loaded_into_a_series_are_a_new_version_the_same_bytes_again_are_not(
    team: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "m"
    (folder / "metrics").mkdir(parents=True)
    lines = ["# TYPE q gauge"] + [f"q {i}.0 {1795190400000 + i * 1000}" for i in range(50)]
    (folder / "metrics" / "a.prom").write_text("\n".join(lines) + "\n")
    incident = ingest_folder(folder, "changes", team)
    first = incident_version(incident)
    logged = list(IncidentChange.objects.filter(incident_id=incident.pk).values_list("id"))
    assert Series.objects.filter(incident=incident).count() == 1 and logged

    # The same bytes again add nothing to the series and log nothing (the command's new
    # analysis request is a new version of its own, through the analyses' part).
    ingest_folder(folder, "changes", team)
    assert list(IncidentChange.objects.filter(incident_id=incident.pk).values_list("id")) == logged

    lines += [f"q {i}.0 {1795190400000 + i * 1000}" for i in range(50, 80)]
    (folder / "metrics" / "b.prom").write_text("\n".join(lines) + "\n")
    ingest_folder(folder, "changes", team)
    assert incident_version(incident) != first
    assert IncidentChange.objects.filter(incident_id=incident.pk).count() > len(logged)


def test_folding_the_log_changes_the_version_once_and_drops_deleted_incidents(
    incident: Incident, team: Any
) -> None:
    for i in range(3):
        Event.objects.bulk_create([_event(incident, i)])
    assert _log_rows(incident) >= 3
    before = incident_version(incident)

    gone = Incident.objects.create(team=team, slug="gone", title="gone")
    Event.objects.bulk_create([_event(gone, 1)])
    gone_id = gone.pk
    gone.delete()  # its events' deletion is logged after the incident row is gone... or before
    assert IncidentChange.objects.filter(incident_id=gone_id).exists()

    assert changes_compact() >= 3
    assert _log_rows(incident) == 1
    assert not IncidentChange.objects.filter(incident_id=gone_id).exists()
    folded = incident_version(incident)
    assert folded != before
    # Nothing left to fold: no row removed, the version stays.
    assert changes_compact() == 0
    assert incident_version(incident) == folded
