"""The bad-input corpus (tests/fixtures/bad/) through the real ingest path.

Every bad file ends with a clear error naming the file (and the line where one applies) and
writes nothing; valid oddities (NaN/Inf, unterminated fences, huge tables) load. Large inputs
(200 MB, zip bombs) are generated into tmp_path here, never committed.
"""

from __future__ import annotations

import io
import random
import shutil
import tarfile
import tracemalloc
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from ingest.services import IngestError, bundles, loading
from tests.reliability.helpers import row_counts, stored_samples
from timeline.choices import RunStatus
from timeline.models import Artifact

BAD = Path(__file__).resolve().parent.parent / "fixtures" / "bad"
GOOD_METRICS = BAD.parent / "metrics" / "two_scrapes.prom"

# file -> (line the error names, words the message must carry)
PARSE_ERRORS: dict[str, tuple[int, str]] = {
    "truncated_label.prom": (5, "expected '='"),
    "truncated_value.prom": (4, "truncated line: expected a value"),
    "bad_escape.prom": (3, "bad escape '\\t'"),
    "bad_number.prom": (3, "bad number"),
    "duplicate_sample.prom": (4, "duplicate sample"),
    "backwards.prom": (4, "timestamp going backwards"),
    "backwards_openmetrics.om": (3, "timestamp going backwards"),
    "junit_truncated.xml": (8, "malformed XML"),
    "junit_mismatched.xml": (5, "mismatched tag"),
    "query_range_truncated.json": (3, "expected JSON"),
    "results_truncated.json": (7, "invalid JSON"),
    "stability_bad_line.jsonl": (3, "expected one JSON object per line"),
    "cut_mid_commit.gitlog": (18, "ends inside the header of commit"),
}
# Errors where no line applies (a JSON path is named instead).
PATH_ERRORS: dict[str, str] = {
    "query_range_bad_point.json": "result[0].values[1]: bad number",
}
EXTENSIONS = ("prom", "om", "txt", "json", "jsonl", "xml", "csv", "log", "md", "gitlog", "toml")


@pytest.fixture
def baseline(incident):
    """The incident with one good file loaded, so 'nothing written' compares non-zero counts."""
    bundles.path_register(incident=incident, path=GOOD_METRICS)
    artifact = Artifact.objects.get(incident=incident)
    assert loading.artifact_ingest(artifact_id=artifact.pk).status == RunStatus.DONE
    counts = row_counts(incident)
    assert counts["samples"] > 0
    return incident, counts


def _ingest_file(incident, path: Path) -> Artifact:
    outcome = bundles.path_register(incident=incident, path=path)
    (artifact,) = outcome.artifacts
    if artifact.status == RunStatus.PENDING:
        artifact = loading.artifact_ingest(artifact_id=artifact.pk)
    return artifact


def _garbage(size: int = 4096, seed: int = 8) -> bytes:
    return random.Random(seed).randbytes(size)


def test_every_corpus_file_is_covered():
    named = set(PARSE_ERRORS) | set(PATH_ERRORS) | {"nan_inf.prom", "DSV4_UNTERMINATED.md"}
    assert {p.name for p in BAD.iterdir()} == named


@pytest.mark.parametrize("name", sorted(PARSE_ERRORS))
def test_bad_file_fails_naming_file_and_line_and_writes_nothing(baseline, name):
    incident, before = baseline
    artifact = _ingest_file(incident, BAD / name)
    line, words = PARSE_ERRORS[name]
    assert artifact.status == RunStatus.FAILED
    assert artifact.error.startswith(f"{name}:{line}: "), artifact.error
    assert words in artifact.error
    assert row_counts(incident) == before


@pytest.mark.parametrize("name", sorted(PATH_ERRORS))
def test_bad_json_point_names_the_json_path(baseline, name):
    incident, before = baseline
    artifact = _ingest_file(incident, BAD / name)
    assert artifact.status == RunStatus.FAILED
    assert artifact.error.startswith(f"{name}: {PATH_ERRORS[name]}"), artifact.error
    assert row_counts(incident) == before


def test_nan_and_inf_are_valid_values_and_load(incident):
    artifact = _ingest_file(incident, BAD / "nan_inf.prom")
    assert artifact.status == RunStatus.DONE, artifact.error
    ((_, stored),) = stored_samples(incident).values()
    values = stored.tolist()
    assert len(values) == 5
    assert values[0] == 88.5 and values[4] == 0
    assert values[1] != values[1]  # NaN survives the binary COPY as NaN
    assert values[2] == float("inf") and values[3] == float("-inf")


def test_unterminated_fence_runs_to_the_end_and_the_doc_loads(incident):
    artifact = _ingest_file(incident, BAD / "DSV4_UNTERMINATED.md")
    assert artifact.status == RunStatus.DONE, artifact.error
    change = incident.config_changes.get()
    assert (change.key, change.old_value, change.new_value) == (
        "SGLANG_SM120_MMA_TARGET_CTAS",
        None,
        "512",
    )


def test_huge_markdown_table_loads_in_one_piece(incident, tmp_path):
    rows = "".join(f"| `SGLANG_K{i}` | `{i}` | {'why ' * 10}|\n" for i in range(20_000))
    doc = tmp_path / "DSV4_HUGE.md"
    doc.write_text(
        "# DSV4\n\n## Changelog\n\n- 2026-11-20 13:10 set SGLANG_SM120_MMA_TARGET_CTAS=512\n\n"
        "## Settings reference\n\n| Variable | Value | Why |\n|---|---|---|\n" + rows
    )
    assert doc.stat().st_size > 1_000_000
    artifact = _ingest_file(incident, doc)
    assert artifact.status == RunStatus.DONE, artifact.error
    assert incident.config_changes.filter(key="SGLANG_SM120_MMA_TARGET_CTAS").exists()


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_binary_garbage_with_any_extension_is_refused_clearly(baseline, tmp_path, ext):
    incident, before = baseline
    path = tmp_path / f"garbage.{ext}"
    path.write_bytes(_garbage())
    artifact = _ingest_file(incident, path)
    assert artifact.status == RunStatus.FAILED
    assert artifact.error.startswith(f"garbage.{ext}:"), artifact.error
    assert "binary data" in artifact.error or "UTF-8" in artifact.error
    assert row_counts(incident) == before


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_empty_file_is_refused_clearly(baseline, tmp_path, ext):
    incident, before = baseline
    path = tmp_path / f"empty.{ext}"
    path.write_bytes(b"")
    artifact = _ingest_file(incident, path)
    assert artifact.status == RunStatus.FAILED
    assert artifact.error == f"empty.{ext}: the file is empty; nothing to ingest"
    assert row_counts(incident) == before


@pytest.mark.parametrize("ext", ["zip", "tar.gz"])
def test_garbage_archive_is_refused_and_registers_nothing(baseline, tmp_path, ext):
    incident, before = baseline
    path = tmp_path / f"bundle.{ext}"
    path.write_bytes(_garbage())
    with pytest.raises(IngestError, match=rf"bundle\.{ext}: not a readable archive"):
        bundles.path_register(incident=incident, path=path)
    assert Artifact.objects.filter(incident=incident).count() == 1
    assert row_counts(incident) == before


def test_oversized_file_is_refused_before_it_is_read(baseline, settings, tmp_path):
    incident, before = baseline
    settings.UPLOAD_MAX_BYTES = 100 * 1024 * 1024
    big = tmp_path / "metrics.prom"
    with open(big, "wb") as f:  # a real 200 MB file (sparse: no 200 MB written to disk)
        f.truncate(200 * 1024 * 1024)
    tracemalloc.start()
    try:
        with pytest.raises(IngestError) as err:
            bundles.path_register(incident=incident, path=big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(err.value) == (
        f"metrics.prom: {200 * 1024 * 1024} bytes is over the limit of {100 * 1024 * 1024} bytes"
    )
    assert peak < 10 * 1024 * 1024  # refused by its size, never read into memory
    assert Artifact.objects.filter(incident=incident).count() == 1
    assert row_counts(incident) == before


def test_one_oversized_file_in_a_bundle_registers_nothing(baseline, settings, tmp_path):
    incident, before = baseline
    settings.UPLOAD_MAX_BYTES = 64 * 1024
    bundle = tmp_path / "bundle"
    (bundle / "metrics").mkdir(parents=True)
    shutil.copy(BAD / "nan_inf.prom", bundle / "metrics" / "a_small.prom")
    (bundle / "metrics" / "b_big.prom").write_bytes(b"# big\n" * 20_000)
    with pytest.raises(IngestError, match=r"b_big\.prom: \d+ bytes is over the limit"):
        bundles.path_register(incident=incident, path=bundle)
    assert Artifact.objects.filter(incident=incident).count() == 1
    assert row_counts(incident) == before


def test_oversized_upload_is_refused_with_the_limit_and_stores_nothing(
    client, user, baseline, settings
):
    incident, before = baseline
    settings.UPLOAD_MAX_BYTES = 1024
    client.force_login(user)
    upload = io.BytesIO(b"x 1 1795218000000\n" * 200)
    upload.name = "big.prom"
    response = client.post(
        reverse("upload", args=[incident.slug]), {"files": [upload]}, follow=True
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "big.prom: 3600 bytes is over the limit of 1024 bytes; nothing was stored." in html
    assert Artifact.objects.filter(incident=incident).count() == 1
    assert row_counts(incident) == before


def _zip_with(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize(
    "member", ["../escape.prom", "docs/../../escape.prom", "/abs/escape.prom", "C:/escape.prom"]
)
def test_zip_member_outside_its_folder_is_refused(baseline, tmp_path, settings, member):
    incident, before = baseline
    archive = _zip_with(
        tmp_path / "bundle.zip",
        {"metrics/ok.prom": (BAD / "nan_inf.prom").read_bytes(), member: b"x 1 1\n"},
    )
    with pytest.raises(IngestError, match="would be written outside its folder"):
        bundles.path_register(incident=incident, path=archive)
    uploads = Path(settings.UPLOAD_ROOT)
    assert not list(tmp_path.rglob("escape.prom"))
    assert not list(uploads.rglob("*.part"))  # the half-extracted folder is gone
    assert not list(uploads.rglob("ok.prom"))
    assert Artifact.objects.filter(incident=incident).count() == 1
    assert row_counts(incident) == before


def test_tar_with_a_symlink_is_refused(baseline, tmp_path):
    incident, before = baseline
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        link = tarfile.TarInfo("metrics/passwd.prom")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tf.addfile(link)
    with pytest.raises(IngestError, match="links and devices are refused"):
        bundles.path_register(incident=incident, path=archive)
    assert row_counts(incident) == before


def test_zip_bomb_stops_at_the_expansion_limit_and_keeps_nothing(baseline, tmp_path, settings):
    incident, before = baseline
    settings.ARCHIVE_MAX_EXPANDED_BYTES = 16 * 1024 * 1024
    archive = tmp_path / "bomb.zip"
    zeros = bytes(1 << 20)
    with (
        zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf,
        zf.open("metrics/a.prom", "w") as out,
    ):
        for _ in range(256):  # 256 MiB of zeros, about 250 KiB compressed
            out.write(zeros)
    assert archive.stat().st_size < 1024 * 1024
    with pytest.raises(IngestError, match="archive expands past the limit of 16777216"):
        bundles.path_register(incident=incident, path=archive)
    uploads = Path(settings.UPLOAD_ROOT)
    kept = sum(p.stat().st_size for p in uploads.rglob("*") if p.is_file())
    assert kept < 1024 * 1024  # the partial extraction was removed
    assert row_counts(incident) == before


def test_zip_with_too_many_members_is_refused(baseline, tmp_path, settings):
    incident, before = baseline
    settings.ARCHIVE_MAX_MEMBERS = 50
    archive = _zip_with(tmp_path / "many.zip", {f"logs/{i}.txt": b"" for i in range(200)})
    with pytest.raises(IngestError, match="more than 50 members"):
        bundles.path_register(incident=incident, path=archive)
    assert row_counts(incident) == before


def test_bad_bundle_through_the_command_fails_clearly_and_the_process_carries_on(
    baseline, tmp_path, capsys
):
    """The CLI: a CommandError naming each bad file, then a good bundle still loads."""
    incident, before = baseline
    bundle = tmp_path / "bad-bundle"
    (bundle / "metrics").mkdir(parents=True)
    for name in ("backwards.prom", "bad_escape.prom"):
        shutil.copy(BAD / name, bundle / "metrics" / name)
    out = StringIO()
    with pytest.raises(CommandError, match="2 of 2 files failed"):
        call_command("ingest", str(bundle), incident=incident.slug, stdout=out, stderr=StringIO())
    assert "metrics/backwards.prom:4: timestamp going backwards" in out.getvalue()
    assert "metrics/bad_escape.prom:3: bad escape" in out.getvalue()
    assert row_counts(incident) == before

    good = tmp_path / "good-bundle"
    (good / "metrics").mkdir(parents=True)
    shutil.copy(BAD / "nan_inf.prom", good / "metrics" / "nan_inf.prom")
    call_command("ingest", str(good), incident=incident.slug, stdout=StringIO(), stderr=StringIO())
    assert row_counts(incident)["samples"] == before["samples"] + 5


def test_bad_uploads_show_their_errors_and_the_page_still_renders(client, user, baseline):
    incident, before = baseline
    client.force_login(user)
    files = []
    for name in ("backwards.prom", "junit_truncated.xml"):
        f = io.BytesIO((BAD / name).read_bytes())
        f.name = name
        files.append(f)
    garbage = io.BytesIO(_garbage())
    garbage.name = "evil.zip"
    files.append(garbage)
    response = client.post(reverse("upload", args=[incident.slug]), {"files": files}, follow=True)
    assert response.status_code == 200
    assert "evil.zip: not a readable archive" in response.content.decode()
    # The stored files are ingested (here synchronously, as the worker would) and fail clearly.
    for artifact in Artifact.objects.filter(incident=incident, status=RunStatus.PENDING):
        loading.artifact_ingest(artifact_id=artifact.pk)
    html = client.get(reverse("upload", args=[incident.slug])).content.decode()
    assert "backwards.prom:4: timestamp going backwards" in html
    assert "junit_truncated.xml:8: malformed XML" in html
    assert row_counts(incident) == before
