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

    # The same bytes again write nothing to the events or the series (the command's new
    # analysis request logs a version of its own, through the analyses' triggers: 0019).
    state = list(Series.objects.filter(incident=incident).values_list("sample_count", "last_ts"))
    events = Event.objects.filter(incident=incident).count()
    with connection.cursor() as cur:
        cur.execute(
            "SELECT n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_xact_user_tables "
            "WHERE relname IN ('timeline_event', 'timeline_series') ORDER BY relname"
        )
        writes = cur.fetchall()
    ingest_folder(folder, "changes", team)
    assert (
        list(Series.objects.filter(incident=incident).values_list("sample_count", "last_ts"))
        == state
    )
    assert Event.objects.filter(incident=incident).count() == events
    with connection.cursor() as cur:
        cur.execute(
            "SELECT n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_xact_user_tables "
            "WHERE relname IN ('timeline_event', 'timeline_series') ORDER BY relname"
        )
        assert cur.fetchall() == writes

    lines += [f"q {i}.0 {1795190400000 + i * 1000}" for i in range(50, 80)]
    (folder / "metrics" / "b.prom").write_text("\n".join(lines) + "\n")
    ingest_folder(folder, "changes", team)
    assert incident_version(incident) != first
    assert IncidentChange.objects.filter(incident_id=incident.pk).count() > len(logged)
    with connection.cursor() as cur:  # (the counters above do see this process's writes)
        cur.execute(
            "SELECT n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_xact_user_tables "
            "WHERE relname IN ('timeline_event', 'timeline_series') ORDER BY relname"
        )
        assert cur.fetchall() != writes


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


def test_every_write_the_page_shows_is_a_new_version_and_bookkeeping_is_not(
    incident: Incident, custom: Incident, user: Any
) -> None:
    """Migration 0019: the small tables log what the page draws (an analysis's status and end,
    notes, hypotheses and their evidence and status changes, files and their status, remote
    series, the incident's own marks), and only that."""
    from timeline.choices import HypothesisStatus, RunStatus, Stance
    from timeline.models import (
        Analysis,
        Artifact,
        DataSource,
        Evidence,
        Hypothesis,
        HypothesisStatusChange,
        Note,
        RemoteSeries,
    )

    seen = [incident_version(incident)]
    other = incident_version(custom)

    def changed() -> None:
        now = incident_version(incident)
        assert now not in seen, f"write {len(seen)} left the version as it was"
        seen.append(now)

    def unchanged() -> None:
        assert incident_version(incident) == seen[-1]

    analysis = Analysis.objects.create(incident=incident, version=99)
    changed()
    Analysis.objects.filter(pk=analysis.pk).update(heartbeat_at=T0, claimed_by="w1")
    unchanged()  # a worker's heartbeat: nothing on the page
    Analysis.objects.filter(pk=analysis.pk).update(status=RunStatus.RUNNING)
    changed()
    Analysis.objects.filter(pk=analysis.pk).update(finished_at=T0)
    changed()

    note = Note.objects.create(incident=incident, at=T0, body="first look", author=user)
    changed()
    Note.objects.filter(pk=note.pk).update(body="first look, edited")
    changed()

    hypothesis = Hypothesis.objects.create(incident=incident, title="the CTAS setting")
    changed()
    hypothesis.body = "512 since the last deploy"
    hypothesis.save()  # updated_at moves
    changed()
    event = Event.objects.create(
        incident=incident,
        at=T0,
        kind=EventKind.LOG_ERROR,
        lane=Lane.SERVER,
        title="e",
        body="",
        attrs={},
        key="",
        fingerprint="ev-1",
    )
    changed()
    Evidence.objects.create(hypothesis=hypothesis, event=event, stance=Stance.SUPPORTS)
    changed()
    HypothesisStatusChange.objects.create(
        hypothesis=hypothesis, old_status="", new_status=HypothesisStatus.SUPPORTED
    )
    changed()

    artifact = Artifact.objects.create(incident=incident, name="x.log", sha256="0" * 64)
    changed()
    Artifact.objects.filter(pk=artifact.pk).update(progress=0.5, heartbeat_at=T0)
    unchanged()  # an ingest's progress: nothing on the page
    Artifact.objects.filter(pk=artifact.pk).update(status=RunStatus.DONE)
    changed()

    source = DataSource.objects.create(team=incident.team, name="prom", url="http://p:9090")
    remote = RemoteSeries.objects.create(incident=incident, source=source, query="up")
    changed()
    remote.delete()
    changed()

    incident.first_bad_at = T0
    incident.save()  # an operator's mark: updated_at moves
    changed()
    Incident.objects.filter(pk=incident.pk).update(analysis_version=7)
    changed()

    note.delete()
    changed()
    hypothesis.delete()  # its evidence and status changes with it
    changed()
    assert incident_version(custom) == other  # nothing of it moved another incident's
