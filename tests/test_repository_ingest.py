"""A repository given to ``ingest`` is its history (issue #14 B), at real-world shapes."""

from __future__ import annotations

import subprocess
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


def test_thousands_of_events_load_by_copy_and_reloading_adds_nothing(db, incident):
    """Above COPY_MIN_ROWS events go through COPY + INSERT ... ON CONFLICT: every record gets
    its id back, including the ones already stored."""
    import datetime as dt

    from evidence.vocabulary import Lane
    from ingest import loaders
    from ingest.parsers.types import EventRecord

    at = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC)

    def record(n: int) -> EventRecord:
        return EventRecord(
            kind=EventKind.COMMIT,
            lane=Lane.COMMITS,
            at=at + dt.timedelta(minutes=n),
            key=f"{n:040x}",
            title=f"commit {n}\ttab \\ backslash",
            body="line\nnext",
            attrs={"n": n, "nan": float("nan"), "when": at},
        )

    first = [record(n) for n in range(loaders.COPY_MIN_ROWS + 50)]
    ids = loaders.load_events(incident, None, first + first[:3])
    assert len(ids) == len(first)
    more = [record(n) for n in range(100, loaders.COPY_MIN_ROWS + 150)]
    again = loaders.load_events(incident, None, more)
    assert all(again[fp] == ids[fp] for fp in again if fp in ids)
    assert Event.objects.filter(incident=incident).count() == loaders.COPY_MIN_ROWS + 150
    stored = Event.objects.get(incident=incident, key=f"{7:040x}")
    assert stored.title == "commit 7\ttab \\ backslash" and stored.body == "line\nnext"
    assert stored.attrs == {"n": 7, "nan": None, "when": at.isoformat()}


def test_one_commit_changing_two_launch_scripts_is_two_changes_each_with_its_file(db, tmp_path):
    """A prefill and a decode server's scripts both moving --tp 4 -> 8 in one commit: two
    changes, each naming its file (one had been dropped as "already on the timeline");
    ingesting the repository again adds nothing."""
    repo = Repo(tmp_path / "deploy")
    for name in ("run_prefill.sh", "run_decode.sh"):
        repo.write(name, "python3 -m sglang.launch_server --model-path m --tp 4\n")
    repo.commit("first", "2026-11-20T07:30:00-08:00")
    for name in ("run_prefill.sh", "run_decode.sh"):
        repo.write(name, "python3 -m sglang.launch_server --model-path m --tp 8\n")
    repo.commit("tp 8 in both launch scripts", "2026-11-20T09:00:00-08:00")
    for _ in range(2):
        call_command("ingest", str(repo.root), incident="tp", stdout=StringIO(), stderr=StringIO())
    moved = ConfigChange.objects.filter(incident__slug="tp", key="--tp", old_value="4")
    assert sorted(c.where.split(":")[0] for c in moved) == ["run_decode.sh", "run_prefill.sh"]
    artifact = Artifact.objects.get(incident__slug="tp")
    assert not [w for w in artifact.counts.get("warnings", []) if "already on" in w]


def test_migration_0020_keys_existing_changes_as_the_loader_now_does(db, incident):
    """An event keyed before 0020 (no file in its key) gets the key and fingerprint the loader
    gives the same change now, so the same bytes ingested again still add nothing."""
    import datetime as dt
    import importlib

    from django.apps import apps

    from evidence.vocabulary import Scope, Source
    from ingest.loaders import config_change_event, fingerprint
    from ingest.parsers.types import ConfigChangeRecord

    rec = ConfigChangeRecord(
        at=dt.datetime(2026, 11, 20, 17, 0, tzinfo=dt.UTC),
        key="--tp",
        old="4",
        new="8",
        scope=Scope.FLAG,
        source=Source.COMMIT,
        ref="abc123",
        where="run_decode.sh:1",
    )
    now = config_change_event(rec)
    before = now.key.rsplit("\x1f", 1)[0]  # the key without the file, as before 0020
    event = Event.objects.create(
        incident=incident,
        at=rec.at,
        kind=EventKind.CONFIG_CHANGE,
        lane=now.lane,
        title=now.title,
        body="",
        attrs={},
        key=before,
        fingerprint=fingerprint(EventKind.CONFIG_CHANGE, before),
    )
    ConfigChange.objects.create(
        event=event,
        incident=incident,
        key="--tp",
        old_value="4",
        new_value="8",
        scope=Scope.FLAG,
        source=Source.COMMIT,
        ref="abc123",
        where="run_decode.sh:1",
    )
    migration = importlib.import_module("timeline.migrations.0020_config_change_keys_with_where")
    migration.rekey(apps, None)
    event.refresh_from_db()
    assert event.key == now.key
    assert event.fingerprint == fingerprint(now.kind, now.key)


def test_a_shallow_clone_says_its_history_is_cut_and_invents_no_introductions(db, tmp_path):
    """`git clone --depth 1`: the boundary commit's parents are cut off; its settings are the
    history's starting point, not changes made there."""
    origin = _project(tmp_path / "origin")
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{origin.root}", str(shallow)],
        check=True,
        capture_output=True,
    )
    call_command("ingest", str(shallow), incident="cut", stdout=StringIO(), stderr=StringIO())
    assert not ConfigChange.objects.filter(incident__slug="cut").exists()
    artifact = Artifact.objects.get(incident__slug="cut")
    assert any("shallow clone" in w for w in artifact.counts["warnings"]), artifact.counts


def test_what_a_repository_skips_is_said_and_ci_or_test_files_are_not_server_config(
    db, tmp_path, monkeypatch
):
    from ingest.clients import git as git_client

    monkeypatch.setattr(git_client, "MAX_TEXT_BYTES", 64)
    repo = Repo(tmp_path / "deploy")
    repo.write("launch.sh", "export SGLANG_X=1\n")
    repo.write(".github/workflows/ci.yml", "jobs:\n  test:\n    runs-on: ubuntu-latest\n")
    repo.write("tests/fixtures/config.json", '{"hidden_size": 4096}\n')
    repo.commit("first", "2026-11-20T07:30:00-08:00", committed="2026-11-20T08:00:00-08:00")
    repo.write("launch.sh", "export SGLANG_X=2\n# " + "x" * 100 + "\n")
    repo.write(".github/workflows/ci.yml", "jobs:\n  test:\n    runs-on: ubuntu-24.04\n")
    repo.write("tests/fixtures/config.json", '{"hidden_size": 8192}\n')
    repo.commit("second", "2026-11-20T09:00:00-08:00")
    call_command("ingest", str(repo.root), incident="skip", stdout=StringIO(), stderr=StringIO())
    keys = set(ConfigChange.objects.filter(incident__slug="skip").values_list("key", flat=True))
    assert keys == {"SGLANG_X"}  # CI and test fixtures are no server's settings
    artifact = Artifact.objects.get(incident__slug="skip")
    assert any("launch.sh is larger than 64 bytes" in w for w in artifact.counts["warnings"])
    first = Event.objects.get(incident__slug="skip", kind=EventKind.COMMIT, title="first")
    assert first.attrs["authored_at"] == "2026-11-20T15:30:00+00:00"  # kept beside the commit's


def test_git_log_text_forms_people_save_are_read_alike(tmp_path):
    """`git log` written by git itself in the forms people paste: --stat, --name-status, -p,
    --date=rfc and --date=local give the commits, times and files that --numstat gives."""
    import datetime as dt

    from ingest.parsers.gitlog import parse_git_log
    from ingest.parsers.types import ParseContext

    repo = _project(tmp_path / "project")
    repo.git("mv", "launch.sh", "run_server.sh")
    repo.commit("rename the launch script", "2026-11-20T14:00:00-08:00")

    def log(*options: str) -> dict[str, tuple[dt.datetime, list[str]]]:
        text = repo.git("log", *options)
        result = parse_git_log(text.encode(), ParseContext("log.txt", tz=dt.UTC))
        return {
            e.attrs["hash"]: (e.at, sorted(f["path"] for f in e.attrs["files"]))
            for e in result.events
            if e.kind == EventKind.COMMIT
        }

    reference = log("--numstat")
    assert len(reference) == 3
    for options in (
        ["--stat"],
        ["--name-status"],
        ["-p"],
        ["--numstat", "--date=rfc"],
        ["-p", "--stat"],  # two file lists: each file once
        ["-p", "--name-status"],
    ):
        assert log(*options) == reference, options
    # --date=local prints the machine's clock without a zone: read in the incident's zone.
    local = subprocess.run(
        ["git", "log", "--date=local", "--numstat"],
        cwd=repo.root,
        env={**repo.env("2026-11-20T07:00:00-08:00", None), "TZ": "UTC"},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    parsed = parse_git_log(local.encode(), ParseContext("local.txt", tz=dt.UTC))
    times = {e.attrs["hash"]: e.at for e in parsed.events if e.kind == EventKind.COMMIT}
    assert times == {h: at for h, (at, _) in reference.items()}


def _changes(result) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted(
        (c.ref, c.key, c.old, c.new, c.where, c.scope, c.source, c.at)
        for c in result.config_changes
    )


def _patched_repos(tmp_path: Path) -> tuple[Repo, Repo]:
    """The sample deploy and docs repositories, plus the shapes a patch shows partly: a
    setting deep in a YAML file, a doc whose code block is edited far from its top, a config
    file deleted, a flag changed far below its command's first line."""
    from tests.test_git_client import build_deploy_repo, build_docs_repo

    deploy, docs = Repo.__new__(Repo), Repo.__new__(Repo)
    build_deploy_repo(tmp_path / "deploy")
    build_docs_repo(tmp_path / "docs")
    deploy.root, docs.root = tmp_path / "deploy", tmp_path / "docs"
    deep = "server:\n" + "".join(f"  key{k}: {k}\n" for k in range(20))
    deploy.write("serve.yaml", deep)
    deploy.write("old.env", "GONE=1\n")
    deploy.commit("serve.yaml", "2026-11-20T17:00:00-08:00")
    deploy.write("serve.yaml", deep.replace("key15: 15", "key15: 16"))
    deploy.write(
        "run.sh",
        "python -m sglang.launch_server \\\n"
        + "".join(f"  --flag-{k} {k} \\\n" for k in range(10))
        + "  --port 30000\n",
    )
    deploy.git("rm", "-q", "old.env")
    deploy.commit("deep YAML change; run.sh; old.env gone", "2026-11-20T17:10:00-08:00")
    deploy.write("run.sh", (deploy.root / "run.sh").read_text().replace("--flag-8 8", "--flag-8 9"))
    deploy.commit("flag 8", "2026-11-20T17:20:00-08:00")
    doc = (docs.root / "DSV4_DEPLOY.md").read_text()
    docs.write("DSV4_DEPLOY.md", doc + "\n" + "filler\n\n" * 30 + "```bash\nexport LATE=1\n```\n")
    docs.commit("late block", "2026-11-20T17:30:00-08:00")
    docs.write("DSV4_DEPLOY.md", doc + "\n" + "filler\n\n" * 30 + "```bash\nexport LATE=2\n```\n")
    docs.commit("late block edited", "2026-11-20T17:40:00-08:00")
    return deploy, docs


def test_config_changes_from_a_saved_git_log_p_match_the_repositorys(tmp_path):
    """A `git log -p` saved with whole files (--unified=100000) gives exactly the config
    changes the repository reader finds, keys, values, lines and times alike. With less
    context, .env lines are read from any hunk and other files when the patch shows them
    whole; every change the hunks cannot show is said at its commit and file, none read
    wrong."""
    import datetime as dt

    from ingest.clients.git import read_history
    from ingest.parsers.gitcommits import commits_to_result
    from ingest.parsers.gitlog import parse_git_log
    from ingest.parsers.types import ParseContext

    for repo in _patched_repos(tmp_path):
        ctx = ParseContext("log.txt", tz=dt.UTC)
        reference = commits_to_result(read_history(repo.root).commits, repo="r", ctx=ctx)
        assert reference.config_changes
        whole = parse_git_log(
            repo.git(
                "log",
                "-p",
                "--parents",
                "--diff-merges=first-parent",
                "--unified=100000",
                "--pretty=fuller",
            ).encode(),
            ctx,
        )
        # (the merged branch's METRICS_PORT change: at its merge, from the merge's own diff)
        assert _changes(whole) == _changes(reference)
        assert whole.warnings == []

        for context in ("-U3", "-U1", "-U10"):  # git's default, and others people use
            text = repo.git(
                "log", "-p", "--parents", "--diff-merges=first-parent", context, "--pretty=fuller"
            )
            part = parse_git_log(text.encode(), ctx)
            found = set(_changes(part))
            assert found <= set(_changes(reference)), context  # nothing read wrong
            said = "\n".join(part.warnings)
            missed = set(_changes(reference)) - found
            for ref, _key, _old, _new, where, *_ in missed:  # each one said: commit and file
                commit = ref.rpartition("@")[2][:12]
                assert f"commit {commit}: the settings of {where.split(':')[0]} are not read" in (
                    said
                ), (context, ref, where)
            keys = {(m[1], m[2], m[3]) for m in found}
            if repo.root.name == "docs":
                # The CTAS export added to a code block below the doc's top: its fence may open
                # above a small hunk, so it is not read (10 lines of context show the doc
                # whole); the doc's first version is read (a new file).
                ctas = ("SGLANG_SM120_MMA_TARGET_CTAS", None, "512")
                assert (ctas in keys) == (context == "-U10"), context
                assert context == "-U10" or "its hunks start at line" in said
                assert ("MODEL_PATH", None, "deepseek-ai/DeepSeek-V4") in keys
                continue
            # .env lines are read from any hunk; new and deleted files are whole.
            assert ("LOG_LEVEL", "info", "debug") in keys
            assert ("METRICS_PORT", "9400", "9401") in keys  # from the merge's own diff
            assert ("GONE", "1", None) in keys
            assert ("server.key0", None, "0") in keys  # serve.yaml, new
            # A YAML key deep in the file, a flag far below its command: not read, and said.
            assert ("server.key15", "15", "16") in {(m[1], m[2], m[3]) for m in missed}
            # (run.sh is 12 lines: 10 lines of context show it whole, and then it is read)
            flag = ("--flag-8", "8", "9")
            assert flag in (keys if context == "-U10" else {(m[1], m[2], m[3]) for m in missed})
            assert context == "-U10" or (
                "the settings of run.sh are not read: its hunks start at line" in said
                and "a shell setting's meaning depends on lines the patch does not show" in said
            )


def test_a_merged_branchs_settings_land_with_the_merge_or_the_log_says_it_cannot_tell(tmp_path):
    """The deployed line is HEAD's first parents: a setting changed on a branch goes live with
    the merge. A log printed with --parents places it there; git's default layout names no
    parents of ordinary commits, so the change stays at its commit and a warning says why; a
    --first-parent log shows the merge's own patch."""
    import datetime as dt

    from ingest.parsers.gitlog import parse_git_log
    from ingest.parsers.types import ParseContext
    from tests.test_git_client import build_deploy_repo

    h = build_deploy_repo(tmp_path / "deploy")
    repo = Repo.__new__(Repo)
    repo.root = tmp_path / "deploy"
    ctx = ParseContext("log.txt", tz=dt.UTC)

    def port(*options: str) -> tuple[list[tuple[str, str | None, str | None]], list[str]]:
        text = repo.git("log", "-p", "--unified=100000", "--pretty=fuller", *options)
        result = parse_git_log(text.encode(), ctx)
        changes = [(c.ref, c.old, c.new) for c in result.config_changes if c.key == "METRICS_PORT"]
        return changes, result.warnings

    landed = [(h["init"], None, "9400"), (h["merge"], "9400", "9401")]
    assert port("--parents", "--diff-merges=first-parent") == (landed, [])
    assert port("--first-parent") == (landed, [])
    # Without the merges' diffs the branch's own are folded into its merge, and that is said.
    folded, said = port("--parents")
    assert folded == landed
    assert len(said) == 1 and "1 commit(s) of merged branches are placed at the merges" in said[0]
    # Without parents the log cannot say what a merge brought.
    plain, said = port()
    assert plain == [(h["init"], None, "9400"), (h["side"], "9400", "9401")]
    assert len(said) == 1 and "1 merge(s) bring in commits this log also lists" in said[0]
    assert "git log -p --parents --diff-merges=first-parent" in said[0]
    # The merges' diffs without parents: the branch's change would be read twice; said.
    twice, said = port("--diff-merges=first-parent")
    assert len(said) == 1 and "read twice" in said[0]


def test_a_git_log_p_quoting_a_file_in_another_encoding_is_read_and_says_so(tmp_path):
    """Real histories hold files that are not UTF-8 (Flask's CHANGES.rst was Latin-1 until
    2019): a -p log quotes their bytes. The log is read, the lines are counted in a warning,
    and the config files around them are still read. A config file renamed unchanged is no
    change; renamed to a path that is not config (a test fixture), it is said."""
    import datetime as dt

    from ingest.parsers.gitlog import parse_git_log
    from ingest.parsers.types import ParseContext

    repo = Repo(tmp_path / "r")
    repo.write("CHANGES.rst", b"caf\xe9\n")  # Latin-1
    repo.write(".env", "A=1\n")
    repo.write("conf/app.yaml", "x: 1\n")
    repo.commit("first", "2026-11-20T07:00:00-08:00")
    repo.write("CHANGES.rst", b"caf\xe9 au lait\n")
    repo.write(".env", "A=2\n")
    repo.move("conf/app.yaml", "deploy/app.yaml")
    repo.commit("second", "2026-11-20T08:00:00-08:00")
    repo.move("deploy/app.yaml", "tests/app.yaml")
    repo.commit("third", "2026-11-20T09:00:00-08:00")
    text = subprocess.run(
        ["git", "log", "-p", "--parents", "-M"], cwd=repo.root, capture_output=True, check=True
    ).stdout
    result = parse_git_log(text, ParseContext("r.gitlog", tz=dt.UTC))
    assert [(c.key, c.old, c.new) for c in result.config_changes] == [
        ("A", None, "1"),
        ("x", None, "1"),
        ("A", "1", "2"),
    ]
    said = "\n".join(result.warnings)
    # (the first commit's line, then the second's removed and added ones)
    assert "r.gitlog: 3 patch line(s) are not UTF-8, the first at line" in said
    assert "the settings of tests/app.yaml are not read: the patch shows no lines of it" in said
    assert "deploy/app.yaml" not in said  # renamed between config paths: nothing to say


def test_a_python_launcher_in_a_repository_is_read_as_config(db, tmp_path):
    """A deploy repository whose launcher is Python: its env assignment and flags changing
    between commits are config changes, read from the repository and from `git log -p`."""
    import datetime as dt

    from ingest.parsers.gitlog import parse_git_log
    from ingest.parsers.types import ParseContext

    repo = Repo(tmp_path / "pydeploy")
    launcher = (
        "import os, subprocess\n"
        'os.environ["SGLANG_SM120_MMA_TARGET_CTAS"] = "{ctas}"\n'
        'subprocess.Popen(["python", "-m", "sglang.launch_server", "--tp", "{tp}"])\n'
    )
    repo.write("launch_dsv4.py", launcher.format(ctas="256", tp="8"))
    repo.write("src/app.py", 'os.environ["NOT_A_LAUNCHER"] = "1"\n')
    repo.commit("first", "2026-11-20T07:30:00-08:00")
    repo.write("launch_dsv4.py", launcher.format(ctas="512", tp="8"))
    repo.write("src/app.py", 'os.environ["NOT_A_LAUNCHER"] = "2"\n')
    repo.commit("CTAS 512", "2026-11-20T13:12:00-08:00")
    call_command("ingest", str(repo.root), incident="py", stdout=StringIO(), stderr=StringIO())
    changes = ConfigChange.objects.filter(incident__slug="py").order_by("event__at", "key")
    expected = [
        ("--tp", None, "8"),
        ("SGLANG_SM120_MMA_TARGET_CTAS", None, "256"),
        ("SGLANG_SM120_MMA_TARGET_CTAS", "256", "512"),
    ]
    assert [(c.key, c.old_value, c.new_value) for c in changes] == expected
    text = repo.git("log", "-p", "--parents", "--pretty=fuller")  # small: shown whole
    result = parse_git_log(text.encode(), ParseContext("py.gitlog", tz=dt.UTC))
    found = [(c.key, c.old, c.new) for c in result.config_changes]
    assert sorted(found, key=str) == sorted(expected, key=str)


def test_a_git_log_in_a_layout_without_dates_is_refused_with_the_command_that_works(
    incident, tmp_path
):
    """`git log --oneline` and `--graph` are what people paste first; neither can be placed
    on a timeline. The refusal names the layout and the command to save instead."""
    from ingest.services.storage import artifact_register_bytes

    repo = _project(tmp_path / "project")
    for options, layout in (
        (["--oneline"], "--oneline"),
        (["--graph", "--oneline"], "--graph"),
        (["--graph"], "--graph"),
    ):
        text = repo.git("log", *options) + "\n"
        artifact, _ = artifact_register_bytes(
            incident=incident, name=f"log{layout}.txt", data=text.encode()
        )
        assert artifact.status == RunStatus.FAILED
        assert artifact.error.startswith(
            f"log{layout}.txt: this looks like `git log {layout}` output"
        ), artifact.error
        assert "git log -p --parents --diff-merges=first-parent" in artifact.error
