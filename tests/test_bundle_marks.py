"""incident.toml marks reach the incident through the audited mark service, whatever the entry
point (the upload page, the CLI)."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from timeline.models import AuditEntry, Incident

TOML = (
    'title = "Marked bundle"\n'
    'timezone = "America/Los_Angeles"\n'
    "[marks]\n"
    "last_good = 2026-11-20T12:00:00          # naive: the bundle's timezone\n"
    "first_bad = 2026-11-20T15:39:58-08:00\n"
)
LAST_GOOD = dt.datetime(2026, 11, 20, 20, 0, tzinfo=dt.UTC)
FIRST_BAD = dt.datetime(2026, 11, 20, 23, 39, 58, tzinfo=dt.UTC)
RUNS = (
    b'{"ts": "2026-11-20T12:00:00-08:00", "suite": "stability", "case": "c1", '
    b'"status": "pass", "score": 0.95, "threshold": 0.9}\n'
)


def _bundle(root: Path) -> Path:
    (root / "harness").mkdir(parents=True)
    (root / "incident.toml").write_text(TOML, encoding="utf-8")
    (root / "harness" / "stability.jsonl").write_bytes(RUNS)
    return root


def _assert_marked_and_audited(incident: Incident) -> None:
    incident.refresh_from_db()
    assert (incident.last_good_at, incident.first_bad_at) == (LAST_GOOD, FIRST_BAD)
    entries = AuditEntry.objects.filter(incident=incident, action="mark.set")
    recorded = {key: value for entry in entries for key, value in entry.data.items()}
    assert recorded == {
        "last_good": [None, LAST_GOOD.isoformat()],
        "first_bad": [None, FIRST_BAD.isoformat()],
    }


@pytest.mark.django_db
def test_marks_of_an_uploaded_bundle_are_set_and_audited(client, user, incident, tmp_path):
    bundle = _bundle(tmp_path / "marked")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in sorted(bundle.rglob("*")):
            zf.write(path, arcname=str(path.relative_to(tmp_path)))
    buf.seek(0)
    buf.name = "marked.zip"
    client.force_login(user)
    response = client.post(f"/incidents/{incident.slug}/upload/", {"files": [buf]}, follow=True)
    assert response.status_code == 200
    _assert_marked_and_audited(incident)
    entry = AuditEntry.objects.filter(incident=incident, action="mark.set").first()
    assert entry is not None and entry.actor == user


@pytest.mark.django_db
def test_marks_of_a_bundle_ingested_from_the_cli_are_set_and_audited(team, tmp_path):
    bundle = _bundle(tmp_path / "marked")
    call_command(
        "ingest",
        str(bundle),
        incident="marked",
        team=team.name,
        no_analyze=True,
        stdout=StringIO(),
        stderr=StringIO(),
    )
    _assert_marked_and_audited(Incident.objects.get(slug="marked"))


@pytest.mark.django_db
def test_an_operators_mark_wins_over_the_bundles(team, tmp_path):
    bundle = _bundle(tmp_path / "marked")
    call_command(
        "ingest", str(bundle), incident="marked", team=team.name, no_analyze=True, stdout=StringIO()
    )
    incident = Incident.objects.get(slug="marked")
    operator = dt.datetime(2026, 11, 20, 19, 0, tzinfo=dt.UTC)
    Incident.objects.filter(pk=incident.pk).update(last_good_at=operator, first_bad_at=None)
    (bundle / "harness" / "more.jsonl").write_bytes(RUNS.replace(b"c1", b"c2"))
    call_command(
        "ingest", str(bundle), incident="marked", team=team.name, no_analyze=True, stdout=StringIO()
    )
    incident.refresh_from_db()
    assert (incident.last_good_at, incident.first_bad_at) == (operator, FIRST_BAD)


@pytest.mark.django_db
def test_marks_that_contradict_each_other_refuse_the_bundle_whole(team, tmp_path):
    from django.core.management.base import CommandError

    from timeline.models import Artifact

    bundle = _bundle(tmp_path / "marked")
    toml = TOML.replace("last_good = 2026-11-20T12:00:00", "last_good = 2026-11-20T18:00:00")
    (bundle / "incident.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(CommandError, match=r"incident.toml: marks.first_bad: .*before"):
        call_command("ingest", str(bundle), incident="marked", team=team.name, stdout=StringIO())
    assert not Incident.objects.filter(slug="marked").exists()
    assert not Artifact.objects.exists() and not AuditEntry.objects.exists()
