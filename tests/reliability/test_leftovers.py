"""Issue 15, point 2: nothing of a refused upload stays on disk, and a sweep removes files no
artifact points to.

The uploads go through the real upload page (and the ``ingest`` command); what is left is read
from the real upload folder. The sweep runs as the management command against a folder built
here: referenced files, a repository kept from an archive, orphans old and fresh, and links
pointing out of the folder.
"""

from __future__ import annotations

import io
import os
import subprocess
import time
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from ingest.services import bundles
from tests.reliability import figures
from timeline.models import Artifact, Incident

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HOUR = 3600


def _files_under(root: Path) -> list[str]:
    """Every file and link left under the upload folder (empty folders aside)."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _good_members() -> dict[str, bytes]:
    return {
        "bundle/docs/DSV4_DEPLOY.md": (FIXTURES / "docs" / "DSV4_DEPLOY.md").read_bytes(),
        "bundle/metrics/two_scrapes.prom": (FIXTURES / "metrics" / "two_scrapes.prom").read_bytes(),
        "bundle/logs/sglang_wedge.log": (FIXTURES / "logs" / "sglang_wedge.log").read_bytes(),
        "bundle/git/deploy.gitlog": (FIXTURES / "git" / "deploy.gitlog").read_bytes(),
    }


def _oversized_member(settings) -> dict[str, bytes]:
    """A member over UPLOAD_MAX_BYTES, registered after the good ones (names are walked in
    order): they are stored by then. Zeros compress well: a small zip, a big folder."""
    settings.UPLOAD_MAX_BYTES = 4 * 1024 * 1024
    return {"bundle/zz_server.log": b"\0" * (8 * 1024 * 1024)}


def _inverted_marks(settings) -> dict[str, bytes]:
    """Marks refused after every file is registered (last good after first bad)."""
    toml = (
        b'title = "wedge"\n[marks]\n'
        b"last_good = 2026-11-20T16:00:00Z\nfirst_bad = 2026-11-20T15:00:00Z\n"
    )
    return {"bundle/incident.toml": toml}


REFUSALS = {
    "oversized_member": (_oversized_member, "is over the limit of 4194304 bytes"),
    "inverted_marks": (_inverted_marks, "marks.first_bad"),
}


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
def test_a_refused_archive_upload_leaves_nothing_on_disk(client, user, incident, settings, refusal):
    make, message = REFUSALS[refusal]
    data = _zip({**_good_members(), **make(settings)})
    upload = io.BytesIO(data)
    upload.name = "bundle.zip"
    client.force_login(user)
    page = client.post(f"/incidents/{incident.slug}/upload/", {"files": [upload]}, follow=True)
    assert page.status_code == 200
    assert message in page.content.decode()
    assert not Artifact.objects.filter(incident=incident).exists()  # the rows rolled back
    assert _files_under(Path(settings.UPLOAD_ROOT)) == []  # and so did the files
    figures.record(f"archive upload refused ({refusal}), nothing left on disk", survived=True)


def test_a_refused_bundle_through_the_command_leaves_nothing_on_disk(db, team, settings, tmp_path):
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(_zip({**_good_members(), **_oversized_member(settings)}))
    with pytest.raises(CommandError, match="over the limit"):
        call_command("ingest", str(archive), incident="wedge", team=team.name, stdout=StringIO())
    assert not Incident.objects.filter(slug="wedge").exists()
    assert _files_under(Path(settings.UPLOAD_ROOT)) == []


def test_an_accepted_archive_keeps_only_its_stored_files(client, user, incident, settings):
    """The extracted folder is a step: once registered, only the stored files remain (no
    second copy of every member, as the old bundles/<sha256> folders were)."""
    upload = io.BytesIO(_zip(_good_members()))
    upload.name = "bundle.zip"
    client.force_login(user)
    client.post(f"/incidents/{incident.slug}/upload/", {"files": [upload]}, follow=True)
    stored = sorted(Artifact.objects.filter(incident=incident).values_list("path", flat=True))
    assert len(stored) == 4
    assert _files_under(Path(settings.UPLOAD_ROOT)) == stored


# --- the sweep -----------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-11-20T12:00:00Z"}
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )


def _age(path: Path, seconds: float) -> None:
    """Make ``path`` (and all in it) look written ``seconds`` ago; links are not followed."""
    when = time.time() - seconds
    for p in [path, *(path.rglob("*") if path.is_dir() and not path.is_symlink() else [])]:
        os.utime(p, (when, when), follow_symlinks=False)


@pytest.fixture
def upload_folder(db, incident, settings, tmp_path):
    """A folder as months of use leave it: referenced files, a kept repository, orphans."""
    root = Path(settings.UPLOAD_ROOT)
    bundles.path_register(incident=incident, path=FIXTURES / "docs" / "DSV4_DEPLOY.md")
    referenced = Path(settings.UPLOAD_ROOT) / Artifact.objects.get(incident=incident).path
    repo = tmp_path / "src" / "deploy"
    repo.mkdir(parents=True)
    (repo / "launch.sh").write_text("export SGLANG_SM120_MMA_TARGET_CTAS=512\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "Enable CTAS=512")
    archive = tmp_path / "repo.zip"
    archive.write_bytes(
        _zip(
            {
                str(p.relative_to(tmp_path / "src")): p.read_bytes()
                for p in repo.rglob("*")
                if p.is_file()
            }
        )
    )
    bundles.path_register(incident=incident, path=archive)
    kept_repo = Path(Artifact.objects.get(incident=incident, kind="git_repo").path)
    assert kept_repo.is_relative_to(root.resolve()) and (kept_repo / ".git").is_dir()

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not the sweep's to remove")
    slug = root / incident.slug
    orphans = {
        "old_copy": slug / ("ab" * 32),
        "old_stage": root / ".tmp-deadbeef",
        "old_bundle": slug / "bundles" / ("cd" * 32),
        "repo_sibling": kept_repo.parent / "notes.txt",
        "link_to_file": slug / "link-out",
        "link_to_folder": slug / "folder-out",
    }
    orphans["old_copy"].write_bytes(b"x" * 1000)
    (orphans["old_stage"] / "tree" / "logs").mkdir(parents=True)
    (orphans["old_stage"] / "tree" / "logs" / "a.log").write_bytes(b"y" * 5000)
    (orphans["old_bundle"] / "metrics").mkdir(parents=True)
    (orphans["old_bundle"] / "metrics" / "m.prom").write_bytes(b"z" * 3000)
    orphans["repo_sibling"].write_text("left over from the archive")
    orphans["link_to_file"].symlink_to(outside / "secret.txt")
    orphans["link_to_folder"].symlink_to(outside)
    fresh = slug / ("ef" * 32)
    fresh.write_bytes(b"an upload on its way")
    for path in orphans.values():
        _age(path, 2 * HOUR)
    _age(referenced, 5 * HOUR)
    _age(kept_repo, 5 * HOUR)
    return root, referenced, kept_repo, orphans, fresh, outside


def test_the_sweep_removes_orphans_and_keeps_referenced_and_fresh_files(upload_folder):
    root, referenced, kept_repo, orphans, fresh, outside = upload_folder
    repo_files = sorted(p for p in kept_repo.rglob("*"))
    out = StringIO()
    call_command("uploads_sweep", "--dry-run", stdout=out)
    assert "6 orphan(s) would be removed" in out.getvalue()
    assert all(os.path.lexists(p) for p in orphans.values())  # a dry run changes nothing

    out = StringIO()
    call_command("uploads_sweep", stdout=out)
    assert (
        "6 orphan(s) removed" in out.getvalue() and "1 recent one(s) left alone" in out.getvalue()
    )
    for name, path in orphans.items():
        assert not os.path.lexists(path), name
    assert referenced.read_bytes() == (FIXTURES / "docs" / "DSV4_DEPLOY.md").read_bytes()
    assert sorted(p for p in kept_repo.rglob("*")) == repo_files  # the repository whole
    assert fresh.exists()  # younger than the grace period: maybe an upload in flight
    assert (outside / "secret.txt").read_text() == "not the sweep's to remove"  # never followed
    assert not any(p.name.startswith(".tmp-") for p in root.iterdir())
    figures.record("orphan uploads swept (6 removed, 3 kept)", survived=True)
