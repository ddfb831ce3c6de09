"""A repository given to ``ingest`` is its history (issue #14 B), at real-world shapes."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

from django.core.management import call_command

from evidence.vocabulary import EventKind
from ingest.sniff import GIT_REPO
from tests.test_git_client import Repo, _commit_with_raw_dates
from timeline.choices import RunStatus
from timeline.models import Artifact, ConfigChange, Event


def _project(root: Path) -> Repo:
    """A small project: sources, tests, a lock file and a launch script, in two commits."""
    repo = Repo(root)
    repo.write("README.md", "# Project\n\nNothing to deploy here.\n")
    repo.write("src/app.py", "print('hello')\n")
    repo.write("tests/test_app.py", "def test_it():\n    pass\n")
    repo.write(".gitignore", "*.pyc\n")
    repo.write("package-lock.json", '{"lockfileVersion": 3, "packages": {"": {"name": "x"}}}\n')
    repo.write("launch.sh", "export SGLANG_SM120_MMA_TARGET_CTAS=256\n")
    repo.commit("first", "2026-11-20T07:30:00-08:00")
    repo.write("launch.sh", "export SGLANG_SM120_MMA_TARGET_CTAS=512\n")
    repo.write("package-lock.json", '{"lockfileVersion": 3, "packages": {"": {"name": "y"}}}\n')
    repo.commit("CTAS 512", "2026-11-20T13:12:00-08:00")
    return repo


def test_a_repository_path_ingests_its_history_only(db, tmp_path):
    """Before: every file of the work tree was registered too, and `ingest` exited 1 with
    "N of N+1 files failed"."""
    repo = _project(tmp_path / "project")
    out = StringIO()
    call_command("ingest", str(repo.root), incident="repo", stdout=out, stderr=StringIO())
    artifacts = list(Artifact.objects.filter(incident__slug="repo"))
    assert [(a.kind, a.status) for a in artifacts] == [(GIT_REPO, RunStatus.DONE)]
    assert "1 files, 1 new" in out.getvalue()
    assert Event.objects.filter(kind=EventKind.COMMIT).count() == 2
    changes = ConfigChange.objects.order_by("event__at")
    assert [(c.key, c.old_value, c.new_value) for c in changes] == [
        ("SGLANG_SM120_MMA_TARGET_CTAS", None, "256"),
        ("SGLANG_SM120_MMA_TARGET_CTAS", "256", "512"),
    ]  # the lock file is not configuration


def test_a_repository_inside_a_bundle_is_still_one_artifact_beside_the_files(db, tmp_path):
    _project(tmp_path / "bundle" / "repo")
    (tmp_path / "bundle" / "notes").mkdir()
    (tmp_path / "bundle" / "notes" / "DSV4.md").write_text("# DSV4\n\n```bash\nexport A=1\n```\n")
    call_command(
        "ingest",
        str(tmp_path / "bundle"),
        incident="bundle",
        at="2026-11-20T12:00:00-08:00",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    names = sorted(Artifact.objects.values_list("name", "status"))
    assert names == [("notes/DSV4.md", RunStatus.DONE), ("repo", RunStatus.DONE)]


def test_a_repository_with_a_malformed_commit_date_ingests_with_a_warning(db, tmp_path):
    repo = _project(tmp_path / "project")
    odd = _commit_with_raw_dates(repo, "odd zone", "1262304000 +051800", "1262304000 +051800")
    call_command("ingest", str(repo.root), incident="odd", stdout=StringIO(), stderr=StringIO())
    artifact = Artifact.objects.get(incident__slug="odd")
    assert artifact.status == RunStatus.DONE
    assert Event.objects.filter(kind=EventKind.COMMIT).count() == 3
    warnings = artifact.counts["warnings"]
    expected = f"commit {odd[:12]}: its author date has a malformed"
    assert any(w.startswith(expected) for w in warnings)
