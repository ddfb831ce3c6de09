"""Uploaded git repositories stay inside their upload folder (issue #15, point 1).

A bundle can carry a repository whose ``.git`` reaches some other repository on the server: a
gitfile (``.git`` holding ``gitdir: /elsewhere/.git``), ``objects/info/alternates``, a
``commondir`` file, or symbolic links. Each is refused before git runs, with a message naming the
file, and nothing of the other repository is stored.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from ingest.clients import git as git_client
from ingest.services import bundles, loading
from ingest.sniff import GIT_REPO
from tests.test_git_client import Repo
from timeline.choices import RunStatus
from timeline.models import Artifact, ConfigChange, Event

SECRET_SUBJECT = "Rotate the payments database password"
SECRET_VALUE = "hunter2-prod"


@pytest.fixture
def other_repo(tmp_path: Path) -> tuple[Path, str]:
    """Somebody else's repository on the same server, outside every upload folder."""
    repo = Repo(tmp_path / "elsewhere" / "payments")
    repo.write(".env", f"DB_PASSWORD={SECRET_VALUE}\n")
    head = repo.commit(SECRET_SUBJECT, "2026-11-20T07:30:00-08:00")
    return repo.root, head


def _zip(members: dict[str, bytes]) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    buf.seek(0)
    buf.name = "bundle.zip"
    return buf


def _tar(members: dict[str, bytes]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    buf.seek(0)
    buf.name = "bundle.tar.gz"
    return buf


def _ok_metrics() -> bytes:
    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    return (fixtures / "bad" / "nan_inf.prom").read_bytes()


def _upload_and_ingest(client, user, incident, buf: io.BytesIO) -> str:
    """Upload through the page, then load whatever got registered as the worker would."""
    client.force_login(user)
    response = client.post(f"/incidents/{incident.slug}/upload/", {"files": [buf]}, follow=True)
    assert response.status_code == 200
    for artifact in Artifact.objects.filter(incident=incident, status=RunStatus.PENDING):
        loading.artifact_ingest(artifact_id=artifact.pk)
    return response.content.decode()


def _assert_nothing_of(other: tuple[Path, str], incident) -> None:
    root, head = other
    assert not Artifact.objects.filter(incident=incident, kind=GIT_REPO).exists()
    texts = " ".join(
        f"{title} {body} {attrs}"
        for title, body, attrs in Event.objects.filter(incident=incident).values_list(
            "title", "body", "attrs"
        )
    )
    assert SECRET_SUBJECT not in texts and head[:12] not in texts
    values = ConfigChange.objects.filter(incident=incident).values_list("new_value", flat=True)
    assert SECRET_VALUE not in list(values)


def _git_dir_members(prefix: str, **files: bytes) -> dict[str, bytes]:
    """A hand-made ``.git`` folder (zip members) with the given extra files."""
    members = {
        f"{prefix}/.git/HEAD": b"ref: refs/heads/main\n",
        f"{prefix}/.git/config": b"[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
        f"{prefix}/.git/objects/": b"",
        f"{prefix}/.git/refs/heads/": b"",
    }
    members.update({f"{prefix}/.git/{name}": data for name, data in files.items()})
    return members


@pytest.mark.attack("git repository reaching outside its upload")
@pytest.mark.parametrize("archive", [_zip, _tar], ids=["zip", "tar.gz"])
def test_an_uploaded_gitfile_is_refused_and_the_repository_it_names_is_not_read(
    client, user, incident, other_repo, archive
):
    root, _ = other_repo
    buf = archive(
        {
            "bundle/metrics/ok.prom": _ok_metrics(),
            "bundle/repo/.git": f"gitdir: {root / '.git'}\n".encode(),
        }
    )
    page = _upload_and_ingest(client, user, incident, buf)
    assert "bundle/repo/.git" in page and "gitfile" in page
    assert str(root) not in page  # the message never echoes where it pointed
    assert not Artifact.objects.filter(incident=incident).exists()
    _assert_nothing_of(other_repo, incident)


@pytest.mark.attack("git repository reaching outside its upload")
@pytest.mark.parametrize("how", ["alternates", "commondir"])
def test_an_uploaded_repository_borrowing_another_ones_objects_is_refused(
    client, user, incident, other_repo, how
):
    root, head = other_repo
    if how == "alternates":
        members = _git_dir_members(
            "bundle/repo",
            **{
                "objects/info/alternates": f"{root / '.git' / 'objects'}\n".encode(),
                "refs/heads/main": f"{head}\n".encode(),
            },
        )
    else:
        members = _git_dir_members("bundle/repo", commondir=f"{root / '.git'}\n".encode())
    page = _upload_and_ingest(client, user, incident, _zip(members))
    expected = "objects/info/alternates" if how == "alternates" else ".git/commondir"
    assert expected in page, page[:3000]
    assert str(root) not in page
    assert not Artifact.objects.filter(incident=incident).exists()
    _assert_nothing_of(other_repo, incident)


def _symlinked_git(bundle: Path, other: Path) -> None:
    (bundle / "repo").mkdir(parents=True)
    (bundle / "repo" / ".git").symlink_to(other / ".git")


def _symlinks_inside_git(bundle: Path, other: Path) -> None:
    git_dir = bundle / "repo" / ".git"
    git_dir.mkdir(parents=True)
    (git_dir / "HEAD").write_text("ref: refs/heads/main\n")
    (git_dir / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
    (git_dir / "objects").symlink_to(other / ".git" / "objects")
    (git_dir / "refs").symlink_to(other / ".git" / "refs")


@pytest.mark.attack("git repository reaching outside its upload")
@pytest.mark.parametrize("build", [_symlinked_git, _symlinks_inside_git])
def test_a_repository_whose_git_links_out_of_its_folder_is_refused(db, tmp_path, other_repo, build):
    """Archives cannot carry links (the upload refuses them); a bundle folder on disk can."""
    root, _ = other_repo
    bundle = tmp_path / "bundle"
    build(bundle, root)
    (bundle / "metrics").mkdir()
    (bundle / "metrics" / "ok.prom").write_bytes(_ok_metrics())
    with pytest.raises(CommandError, match=r"repo/\.git.* (symbolic link|links)") as caught:
        call_command("ingest", str(bundle), incident="x", stdout=StringIO(), stderr=StringIO())
    assert str(root) not in str(caught.value)
    assert not Artifact.objects.exists()
    assert not Event.objects.exists()


@pytest.mark.attack("git repository reaching outside its upload")
def test_a_registered_repository_is_checked_again_before_it_is_read(
    db, tmp_path, incident, other_repo
):
    """Every git entry point checks: a repository turned into a gitfile after registering
    fails to load with the reason, and loads nothing."""
    repo = Repo(tmp_path / "bundle" / "repo")
    repo.write(".env", "A=1\n")
    repo.commit("ours", "2026-11-20T07:30:00-08:00")
    bundles.path_register(incident=incident, path=tmp_path / "bundle")
    artifact = Artifact.objects.get(incident=incident, kind=GIT_REPO)
    shutil.rmtree(repo.root / ".git")
    (repo.root / ".git").write_text(f"gitdir: {other_repo[0] / '.git'}\n")
    loaded = loading.artifact_ingest(artifact_id=artifact.pk)
    assert loaded.status == RunStatus.FAILED
    assert "repo/.git" in loaded.error and "gitfile" in loaded.error
    assert str(other_repo[0]) not in loaded.error
    assert not Event.objects.filter(incident=incident).exists()


def test_git_runs_pinned_to_the_repository_with_no_outside_config(tmp_path, monkeypatch):
    """What the git processes see: GIT_DIR/GIT_WORK_TREE pinned, no system or global config, a
    HOME where nothing can exist, no hooks, safe.directory naming only this repository, and
    nothing inherited."""
    repo = Repo(tmp_path / "repo")
    repo.write(".env", "A=1\n")
    repo.commit("first", "2026-11-20T07:30:00-08:00")
    real_git = shutil.which("git")
    assert real_git
    seen = tmp_path / "seen"
    seen.mkdir()
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(
        "#!/bin/sh\n"
        f'env | grep -E "^(GIT_|HOME=|XDG_CONFIG_HOME=)" | sort > "{seen}/env.$$"\n'
        f'printf "%s\\n" "$@" > "{seen}/args.$$"\n'
        f'exec "{real_git}" "$@"\n'
    )
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", str(elsewhere / "objects"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='/tmp/hooks'")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(elsewhere / "gitconfig"))
    assert [c.subject for c in git_client.read_repository(repo.root)] == ["first"]
    envs = sorted(seen.glob("env.*"))
    assert envs, "git never ran through the shim"
    top = repo.root.resolve()
    for env_file in envs:
        env = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
        args = (seen / env_file.name.replace("env.", "args.")).read_text().splitlines()
        assert env["GIT_DIR"] == str(top / ".git")
        assert env["GIT_WORK_TREE"] == str(top)
        assert env["GIT_CEILING_DIRECTORIES"] == str(top.parent)
        assert env["GIT_CONFIG_NOSYSTEM"] == "1"
        assert env["GIT_CONFIG_GLOBAL"] == os.devnull
        assert "GIT_ALTERNATE_OBJECT_DIRECTORIES" not in env
        assert "GIT_CONFIG_PARAMETERS" not in env
        assert env["HOME"] == env["XDG_CONFIG_HOME"]
        assert not os.path.lexists(env["HOME"])  # no ~/.gitconfig, ~/.config/git/attributes
        assert "core.hooksPath=/dev/null" in args
        assert [a for a in args if a.startswith("safe.directory=")] == [f"safe.directory={top}"]


def test_a_self_contained_upload_of_a_real_repository_still_loads(client, user, incident, tmp_path):
    repo = Repo(tmp_path / "src" / "deploy")
    repo.write("launch.sh", "export SGLANG_SM120_MMA_TARGET_CTAS=512\n")
    repo.commit("Enable CTAS=512", "2026-11-20T13:12:00-08:00")
    archive = shutil.make_archive(str(tmp_path / "bundle"), "zip", tmp_path / "src")
    buf = io.BytesIO(Path(archive).read_bytes())
    buf.name = "bundle.zip"
    _upload_and_ingest(client, user, incident, buf)
    artifact = Artifact.objects.get(incident=incident, kind=GIT_REPO)
    assert artifact.status == RunStatus.DONE, artifact.error
    assert Event.objects.filter(incident=incident, title__contains="Enable CTAS=512").exists()


def _lazy_repo(tmp_path: Path, marker: Path, *, config_in_include: bool) -> Path:
    """A repository made to look like a partial clone: a blob missing from its objects, a
    promisor remote, and a core.sshCommand that would leave ``marker`` if git ever ran it to
    fetch the blob. With ``config_in_include`` the remote sits in a file the config includes,
    past the containment check's reading: only git's own refusal to fetch stands then."""
    repo = Repo(tmp_path / "bundle" / "repo")
    repo.write(".env", "A=1\n")
    repo.commit("first", "2026-11-20T07:30:00-08:00")
    blob = repo.git("rev-parse", "HEAD:.env").strip()
    (repo.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    remote = (
        '[remote "origin"]\n\turl = ssh://example.invalid/x.git\n\tpromisor = true\n'
        "\tpartialclonefilter = blob:none\n"
    )
    config = repo.root / ".git" / "config"
    hostile = f'[core]\n\tsshCommand = "touch {marker}; false"\n'
    if config_in_include:
        (repo.root / ".git" / "more.cfg").write_text(remote)
        config.write_text(config.read_text() + hostile + "[include]\n\tpath = more.cfg\n")
    else:
        config.write_text(config.read_text() + hostile + remote)
    return repo.root.parent


@pytest.mark.attack("git repository reaching outside its upload")
@pytest.mark.parametrize("config_in_include", [False, True], ids=["config", "included-config"])
def test_a_partial_clone_never_fetches_and_never_runs_its_ssh_command(
    db, tmp_path, config_in_include
):
    """A partial clone's missing objects would be fetched from its remote as git reads them,
    through the repository's own core.sshCommand: a command of the uploader's choosing. It is
    refused before git runs; where the check cannot see the remote, git refuses the fetch."""
    marker = tmp_path / "ssh-command-ran"
    bundle = _lazy_repo(tmp_path, marker, config_in_include=config_in_include)
    with pytest.raises(CommandError) as caught:
        call_command("ingest", str(bundle), incident="x", stdout=StringIO(), stderr=StringIO())
    if not config_in_include:
        assert "partial clone" in str(caught.value)
    assert not marker.exists()
    assert not Event.objects.exists()
