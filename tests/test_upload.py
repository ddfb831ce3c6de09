"""Uploading evidence from the incident page: several files, a real worker, per-file status."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from tests.conftest import screenshot, wait_for
from timeline.choices import RunStatus
from timeline.models import Artifact, Event


@pytest.mark.browser
@pytest.mark.worker
def test_uploading_several_files_ingests_them_on_the_worker(
    celery_worker, logged_in_page, live_server, incident, sample_bundle
):
    page = logged_in_page
    page.goto(f"{live_server.url}/incidents/{incident.slug}/upload/")
    files = [
        sample_bundle / "harness" / "stability.jsonl",
        sample_bundle / "logs" / "sglang_server.log",
        sample_bundle / "metrics" / "dcgm.json",
    ]
    page.set_input_files("#files", [str(f) for f in files])
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("text=3 file(s) queued for ingest.")
    wait_for(
        lambda: Artifact.objects.filter(incident=incident, status=RunStatus.DONE).count() == 3,
        timeout=120,
    )
    # The status table polls while work runs and settles on every file done.
    page.wait_for_function(
        "() => document.querySelectorAll('#artifact-table .status-done').length === 3",
        timeout=30_000,
    )
    text = page.locator("#artifact-table").inner_text()
    assert "sglang_log" in text and "harness_jsonl" in text and "prometheus_query_range" in text
    screenshot(page, "upload-done")
    assert Event.objects.filter(incident=incident, kind="request").exists()


@pytest.mark.django_db
def test_an_uploaded_archive_is_unpacked_and_unrecognised_files_are_reported(
    client, user, incident, sample_bundle, tmp_path: Path
):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.add(sample_bundle / "harness" / "stability.jsonl", arcname="b/harness/stability.jsonl")
        data = b"just some words, not any known format\n"
        info = tarfile.TarInfo("b/notes/random.bin")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    buf.seek(0)
    buf.name = "bundle.tar.gz"
    client.force_login(user)
    response = client.post(f"/incidents/{incident.slug}/upload/", {"files": [buf]}, follow=True)
    assert response.status_code == 200
    names = dict(Artifact.objects.filter(incident=incident).values_list("name", "status"))
    assert names["harness/stability.jsonl"] == RunStatus.PENDING
    assert names["notes/random.bin"] == RunStatus.FAILED
    error = Artifact.objects.get(incident=incident, name="notes/random.bin").error
    assert "not recognised" in error


@pytest.mark.django_db
def test_a_big_upload_is_stored_from_disk_in_chunks(client, user, incident, settings, tmp_path):
    from django.core.files.uploadedfile import TemporaryUploadedFile

    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024  # anything bigger is spooled to a temp file
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    seen = []
    original = TemporaryUploadedFile.temporary_file_path

    def spy(self):  # records that the view read the upload from disk
        seen.append(self.name)
        return original(self)

    TemporaryUploadedFile.temporary_file_path = spy
    try:
        body = b"".join(
            b'{"ts": "2026-11-20T12:%02d:00-08:00", "suite": "stability", "case": "c%d", '
            b'"status": "pass", "score": 0.95, "threshold": 0.9}\n' % (i % 60, i)
            for i in range(500)
        )
        upload = io.BytesIO(body)
        upload.name = "stability.jsonl"
        client.force_login(user)
        client.post(f"/incidents/{incident.slug}/upload/", {"files": [upload]})
    finally:
        TemporaryUploadedFile.temporary_file_path = original
    assert seen == ["stability.jsonl"]
    artifact = Artifact.objects.get(incident=incident)
    assert (artifact.kind, artifact.size) == ("harness_jsonl", len(body))
    import hashlib

    assert artifact.sha256 == hashlib.sha256(body).hexdigest()
    stored = Path(settings.UPLOAD_ROOT).resolve() / artifact.path
    assert stored.read_bytes() == body
    assert not list(stored.parent.glob(".*.part"))


UNDATED = Path(__file__).resolve().parent / "fixtures" / "real" / "sglang_undated"


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("issue1612_time_of_day_only.log", "the time of day alone before them ([16:43:29 TP0])"),
        ("issue19712_no_time.log", "no time before them"),
        (
            "pr11854_custom_logging_format.log",
            "a layout of their own before them (2025-10-20 03:02:22 INFO 31223 [DP3 TP3 EP3 "
            "scheduler_metrics_mixin.py:222])",
        ),
    ],
)
def test_an_sglang_log_without_dates_is_refused_saying_so(incident, name, says) -> None:
    """Real pastes (fixtures README) of SGLang records that carry no date cannot be placed on
    a timeline: the refusal says what the lines hold and what the reader takes, instead of
    "not recognised"."""
    from ingest.services.storage import artifact_register_bytes

    artifact, _ = artifact_register_bytes(
        incident=incident, name=name, data=(UNDATED / name).read_bytes()
    )
    assert artifact.status == RunStatus.FAILED
    assert artifact.error.startswith(f"{name}: these look like SGLang server log records with ")
    assert says in artifact.error
    assert "[YYYY-MM-DD HH:MM:SS]" in artifact.error
    assert not Event.objects.filter(incident=incident).exists()
