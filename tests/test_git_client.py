"""The git repository client against real repositories built with the git CLI in tmp_path."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from evidence.vocabulary import EventKind, Source
from ingest.clients.git import head, read_history, read_repository
from ingest.clients.git_safety import is_repository, is_repository_root
from ingest.parsers.gitcommits import CommitInfo, FileStat, commits_to_result
from ingest.parsers.types import (
    ParseContext,
)

UTC = dt.UTC


LAUNCH = """\
#!/usr/bin/env bash
# DSV4 serving on 8x B200 (see docs/DSV4_DEPLOY.md)
set -euo pipefail
source "$(dirname "$0")/.env"

export MODEL_PATH=deepseek-ai/DeepSeek-V4
export NCCL_IB_DISABLE=0
export SGLANG_ENABLE_JIT_DEEPGEMM=1
{extra_exports}
exec python3 -m sglang.launch_server \\
  --model-path "${{MODEL_PATH}}" \\
  --tp 8 \\
  --mem-fraction-static {mem} \\
  --chunked-prefill-size {chunk} \\
  --tokenizer-path /models/{tok} \\
  --enable-metrics \\
  --host 0.0.0.0 --port 30000
"""

DOC = """\
# DSV4 deployment

```bash
export MODEL_PATH=deepseek-ai/DeepSeek-V4
{extra}```

Do not set `SGLANG_OPT_FP8_WO_A_GEMM=1` on B200.

## Changelog

- 2026-11-20 07:30 first version
{item}"""

ALERTS = """\
groups:
- name: {group}
  rules:
  - alert: DSV4RunningButIdle
    expr: sglang:num_running_reqs > 0 and sglang:gen_throughput < 1
    for: 2m
    labels:
      severity: page
    annotations:
      summary: running requests but no tokens generated
"""


def _launch(
    *, mem: str = "0.85", chunk: str = "8192", tok: str = "dsv4-tok-v1", ctas: bool = False
) -> str:
    extra = "export SGLANG_SM120_MMA_TARGET_CTAS=512\n" if ctas else ""
    return LAUNCH.format(extra_exports=extra, mem=mem, chunk=chunk, tok=tok)


class Repo:
    """A scratch repository driven through the git CLI with fixed identities and dates."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def env(self, authored: str, committed: str | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_CONFIG_NOSYSTEM="1",
            GIT_AUTHOR_NAME="Dana Ops",
            GIT_AUTHOR_EMAIL="dana@example.com",
            GIT_COMMITTER_NAME="Dana Ops",
            GIT_COMMITTER_EMAIL="dana@example.com",
            GIT_AUTHOR_DATE=authored,
            GIT_COMMITTER_DATE=committed or authored,
        )
        return env

    def git(
        self, *args: str, at: str = "2026-11-20T07:00:00-08:00", committed: str | None = None
    ) -> str:
        out = subprocess.run(
            ["git", "-c", "commit.gpgsign=false", *args],
            cwd=self.root,
            env=self.env(at, committed),
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()

    def write(self, path: str, content: str | bytes) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)

    def move(self, src: str, dst: str) -> None:
        target = self.root / dst
        target.parent.mkdir(parents=True, exist_ok=True)
        (self.root / src).rename(target)

    def commit(
        self, message: str, at: str, *, committed: str | None = None, allow_empty: bool = False
    ) -> str:
        self.git("add", "-A", at=at)
        extra = ["--allow-empty"] if allow_empty else []
        self.git("commit", "-q", *extra, "-m", message, at=at, committed=committed)
        return self.git("rev-parse", "HEAD")


def build_deploy_repo(root: Path) -> dict[str, str]:
    """The sample incident's deploy repository; returns commit hashes by step name."""
    repo = Repo(root)
    h: dict[str, str] = {}
    repo.write("launch.sh", _launch())
    repo.write(".env", "METRICS_PORT=9400\nLOG_LEVEL=info\n")
    repo.write("monitoring/alerts.rules", ALERTS.format(group="dsv4"))
    h["init"] = repo.commit("Add DSV4 launch script and env", "2026-11-20T07:30:00-08:00")
    repo.write(".env", "METRICS_PORT=9400\nLOG_LEVEL=debug\n")
    h["log_level"] = repo.commit(
        "Debug logging for the agentic load test", "2026-11-20T08:40:00-08:00"
    )
    repo.write("launch.sh", _launch(mem="0.88"))
    h["mem"] = repo.commit("Raise --mem-fraction-static to 0.88", "2026-11-20T09:30:00-08:00")
    repo.move("monitoring/alerts.rules", "monitoring/prometheus/alerts.rules")
    repo.write("monitoring/prometheus/alerts.rules", ALERTS.format(group="dsv4-serving"))
    h["rename"] = repo.commit(
        "Move alert rules under monitoring/prometheus", "2026-11-20T11:00:00-08:00"
    )
    repo.write("monitoring/dashboard.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01")
    h["binary"] = repo.commit("Add dashboard screenshot", "2026-11-20T11:05:00-08:00")
    h["empty"] = repo.commit(
        "Trigger redeploy (no changes)", "2026-11-20T12:00:00-08:00", allow_empty=True
    )
    repo.write("launch.sh", _launch(mem="0.88", tok="dsv4-tok-v2"))
    h["tokenizer"] = repo.commit(
        "Switch to tokenizer v2",
        "2026-11-20T12:58:00-08:00",
        committed="2026-11-20T13:05:00-08:00",
    )
    repo.write("launch.sh", _launch(mem="0.88", tok="dsv4-tok-v2", ctas=True))
    h["ctas"] = repo.commit(
        "Enable PDL tuning: SGLANG_SM120_MMA_TARGET_CTAS=512\n\n"
        "Matches the DSV4_DEPLOY.md change from 13:10.\n\n"
        "Benchmarked on one node only:\n  decode +4% at batch 64",
        "2026-11-20T13:12:00-08:00",
    )
    repo.git("checkout", "-q", "-b", "metrics-port")
    repo.write(".env", "METRICS_PORT=9401\nLOG_LEVEL=debug\n")
    h["side"] = repo.commit(
        ".env: METRICS_PORT 9401 (clash with node-exporter)", "2026-11-20T13:20:00-08:00"
    )
    repo.git("checkout", "-q", "main")
    at = "2026-11-20T13:25:00-08:00"
    repo.git("merge", "-q", "--no-ff", "metrics-port", "-m", "Merge branch 'metrics-port'", at=at)
    h["merge"] = repo.git("rev-parse", "HEAD")
    repo.write("launch.sh", _launch(mem="0.88", tok="dsv4-tok-v2", ctas=True, chunk="16384"))
    h["chunk"] = repo.commit(
        "Bigger prefill chunks for long agent contexts", "2026-11-20T13:40:00-08:00"
    )
    repo.write("launch.sh", _launch(mem="0.88", tok="dsv4-tok-v2", ctas=True))
    h["revert"] = repo.commit("Revert chunked prefill to 8192", "2026-11-20T16:30:00-08:00")
    return h


def build_docs_repo(root: Path) -> dict[str, str]:
    """The docs repository: DSV4_DEPLOY.md at 07:30, the CTAS export added at 13:10."""
    repo = Repo(root)
    h: dict[str, str] = {}
    repo.write("DSV4_DEPLOY.md", DOC.format(extra="", item=""))
    h["init"] = repo.commit("Add DSV4 deployment doc", "2026-11-20T07:30:00-08:00")
    repo.write(
        "DSV4_DEPLOY.md",
        DOC.format(
            extra="export SGLANG_SM120_MMA_TARGET_CTAS=512\n",
            item="- 2026-11-20 13:10 set SGLANG_SM120_MMA_TARGET_CTAS=512 (pdl)\n",
        ),
    )
    h["ctas"] = repo.commit("Document SGLANG_SM120_MMA_TARGET_CTAS", "2026-11-20T13:10:00-08:00")
    return h


def _utc(hour: int, minute: int, day: int = 20) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, minute, tzinfo=UTC)


@pytest.fixture(scope="module")
def deploy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("bundle") / "repo"
    return root, build_deploy_repo(root)


@pytest.fixture(scope="module")
def commits(deploy: tuple[Path, dict[str, str]]) -> list[CommitInfo]:
    return read_repository(deploy[0])


def _by_hash(commits: list[CommitInfo]) -> dict[str, CommitInfo]:
    return {c.hash: c for c in commits}


def test_history_is_read_oldest_first_with_every_commit(
    deploy: tuple[Path, dict[str, str]], commits: list[CommitInfo]
) -> None:
    _, h = deploy
    order = ["init", "log_level", "mem", "rename", "binary", "empty", "tokenizer", "ctas"]
    order += ["side", "merge", "chunk", "revert"]
    assert [c.hash for c in commits] == [h[name] for name in order]
    first = commits[0]
    assert (first.author, first.email, first.parents) == ("Dana Ops", "dana@example.com", ())
    assert first.subject == "Add DSV4 launch script and env"
    assert first.committed_at == _utc(15, 30)


def test_commit_and_author_dates_are_kept_apart(
    deploy: tuple[Path, dict[str, str]], commits: list[CommitInfo]
) -> None:
    tokenizer = _by_hash(commits)[deploy[1]["tokenizer"]]
    assert tokenizer.authored_at == _utc(20, 58)
    assert tokenizer.committed_at == _utc(21, 5)


def test_message_body_keeps_blank_lines_and_indentation(
    deploy: tuple[Path, dict[str, str]], commits: list[CommitInfo]
) -> None:
    ctas = _by_hash(commits)[deploy[1]["ctas"]]
    assert ctas.subject == "Enable PDL tuning: SGLANG_SM120_MMA_TARGET_CTAS=512"
    assert ctas.body == (
        "Matches the DSV4_DEPLOY.md change from 13:10.\n\n"
        "Benchmarked on one node only:\n  decode +4% at batch 64"
    )


def test_rename_binary_and_empty_commits_have_the_right_file_stats(
    deploy: tuple[Path, dict[str, str]], commits: list[CommitInfo]
) -> None:
    by_hash, h = _by_hash(commits), deploy[1]
    assert by_hash[h["rename"]].files == (
        FileStat("monitoring/prometheus/alerts.rules", 1, 1, "monitoring/alerts.rules"),
    )
    assert by_hash[h["binary"]].files == (FileStat("monitoring/dashboard.png", None, None),)
    assert by_hash[h["empty"]].files == ()
    assert by_hash[h["empty"]].texts == {}


def test_merge_is_diffed_against_its_first_parent(
    deploy: tuple[Path, dict[str, str]], commits: list[CommitInfo]
) -> None:
    by_hash, h = _by_hash(commits), deploy[1]
    merge = by_hash[h["merge"]]
    assert merge.parents == (h["ctas"], h["side"])
    # Issue 14: what a merge brought is listed without line counts (counting them cost as much
    # as the rest of `git log --numstat` on a history of release merges).
    assert merge.files == (FileStat(".env", None, None),)
    assert merge.texts == {
        ".env": ("METRICS_PORT=9400\nLOG_LEVEL=debug\n", "METRICS_PORT=9401\nLOG_LEVEL=debug\n")
    }
    # The side-branch commit reaches the deployed line only through the merge.
    assert by_hash[h["side"]].texts == {}


def test_config_texts_hold_both_sides_and_none_when_absent(
    deploy: tuple[Path, dict[str, str]], commits: list[CommitInfo]
) -> None:
    by_hash, h = _by_hash(commits), deploy[1]
    init = by_hash[h["init"]]
    assert set(init.texts) == {"launch.sh", ".env"}  # alerts.rules is not a config file
    assert init.texts["launch.sh"] == (None, _launch())
    assert by_hash[h["chunk"]].texts["launch.sh"] == (
        _launch(mem="0.88", tok="dsv4-tok-v2", ctas=True),
        _launch(mem="0.88", tok="dsv4-tok-v2", ctas=True, chunk="16384"),
    )


def test_deploy_history_yields_the_incident_config_changes(
    deploy: tuple[Path, dict[str, str]], commits: list[CommitInfo]
) -> None:
    h = deploy[1]
    result = commits_to_result(commits, repo="repo", ctx=ParseContext(name="repo"))
    assert result.kind == "git_repo"
    assert result.warnings == []
    later = [c for c in result.config_changes if c.ref != h["init"]]
    assert [(c.key, c.old, c.new, c.at, c.ref, c.where) for c in later] == [
        ("LOG_LEVEL", "info", "debug", _utc(16, 40), h["log_level"], ".env:2"),
        ("--mem-fraction-static", "0.85", "0.88", _utc(17, 30), h["mem"], "launch.sh:13"),
        ("--tokenizer-path", "/models/dsv4-tok-v1", "/models/dsv4-tok-v2", _utc(21, 5),
         h["tokenizer"], "launch.sh:15"),
        ("SGLANG_SM120_MMA_TARGET_CTAS", None, "512", _utc(21, 12), h["ctas"], "launch.sh:9"),
        ("METRICS_PORT", "9400", "9401", _utc(21, 25), h["merge"], ".env:1"),
        ("--chunked-prefill-size", "8192", "16384", _utc(21, 40), h["chunk"], "launch.sh:15"),
        ("--chunked-prefill-size", "16384", "8192", _utc(0, 30, day=21), h["revert"],
         "launch.sh:15"),
    ]  # fmt: skip
    assert {c.source for c in result.config_changes} == {Source.COMMIT}
    introduced = {c.key: c.new for c in result.config_changes if c.ref == h["init"]}
    assert introduced["METRICS_PORT"] == "9400"
    assert introduced["--chunked-prefill-size"] == "8192"
    assert all(c.old is None for c in result.config_changes if c.ref == h["init"])


def test_commit_events_describe_each_commit(
    deploy: tuple[Path, dict[str, str]], commits: list[CommitInfo]
) -> None:
    h = deploy[1]
    result = commits_to_result(commits, repo="repo", ctx=ParseContext(name="repo"))
    events = {e.key: e for e in result.events}
    assert all(e.kind == EventKind.COMMIT for e in result.events)
    assert len(result.events) == 12
    merge = events[h["merge"]]
    assert merge.attrs["parents"] == [h["ctas"], h["side"]]
    assert merge.attrs["touches_config"] is True
    assert merge.attrs["files"] == [{"path": ".env", "added": None, "removed": None}]
    assert "Files changed against the first parent (1)" in merge.body
    assert "(binary)" not in merge.body
    binary = events[h["binary"]]
    assert binary.attrs["touches_config"] is False
    assert "(binary)" in binary.body
    assert events[h["side"]].attrs["touches_config"] is True


def test_docs_repository_yields_doc_revisions_and_doc_changes(tmp_path: Path) -> None:
    h = build_docs_repo(tmp_path / "docs")
    commits = read_repository(tmp_path / "docs")
    result = commits_to_result(commits, repo="docs", ctx=ParseContext(name="docs"))
    revisions = [e for e in result.events if e.kind == EventKind.DOC_REVISION]
    assert [e.key for e in revisions] == [
        f"DSV4_DEPLOY.md@{h['init']}",
        f"DSV4_DEPLOY.md@{h['ctas']}",
    ]
    assert revisions[1].at == _utc(21, 10)
    assert revisions[1].attrs["commit"] == h["ctas"]
    keys = {s["key"] for s in revisions[1].attrs["settings"]}
    assert {"MODEL_PATH", "SGLANG_SM120_MMA_TARGET_CTAS"} <= keys
    assert "SGLANG_OPT_FP8_WO_A_GEMM" not in keys  # prose is not a setting
    ctas = [c for c in result.config_changes if c.key == "SGLANG_SM120_MMA_TARGET_CTAS"]
    assert [(c.old, c.new, c.at, c.source, c.ref) for c in ctas] == [
        (None, "512", _utc(21, 10), Source.DOC, f"DSV4_DEPLOY.md@{h['ctas'][:12]}")
    ]


def test_renamed_config_file_reports_only_what_changed(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.write("launch.sh", _launch())
    repo.commit("first", "2026-11-20T07:30:00-08:00")
    repo.move("launch.sh", "scripts/launch.sh")
    repo.write("scripts/launch.sh", _launch(tok="dsv4-tok-v2"))
    moved = repo.commit("move the launch script", "2026-11-20T08:00:00-08:00")
    result = commits_to_result(read_repository(repo.root), repo="r", ctx=ParseContext(name="r"))
    changes = [c for c in result.config_changes if c.ref == moved]
    assert [(c.key, c.old, c.new, c.where) for c in changes] == [
        ("--tokenizer-path", "/models/dsv4-tok-v1", "/models/dsv4-tok-v2", "scripts/launch.sh:15")
    ]


def test_repository_is_only_the_top_of_a_work_tree(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    (repo.root / "sub").mkdir()
    plain = tmp_path / "plain"
    plain.mkdir()
    assert is_repository(repo.root)
    assert not is_repository(repo.root / "sub")
    assert not is_repository(plain)
    assert not is_repository(tmp_path / "missing")


def test_bare_repository_counts_and_head_names_its_commit(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.write(".env", "A=1\n")
    first = repo.commit("first", "2026-11-20T07:30:00-08:00")
    bare = tmp_path / "bare.git"
    repo.git("clone", "-q", "--bare", str(repo.root), str(bare))
    assert is_repository_root(bare)
    assert head(repo.root) == head(bare) == first
    assert [c.hash for c in read_repository(bare)] == [first]
    assert head(Repo(tmp_path / "empty").root) == ""
    with pytest.raises(ValueError):
        head(tmp_path)


def test_reading_a_plain_directory_is_a_clear_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a git repository"):
        read_repository(tmp_path)


def test_repository_without_commits_has_no_history(tmp_path: Path) -> None:
    assert read_repository(Repo(tmp_path / "empty").root) == []


def test_corrupt_repository_raises_runtime_error_with_git_stderr(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.write(".env", "A=1\n")
    head = repo.commit("first", "2026-11-20T07:30:00-08:00")
    # Damage the repository from outside, as a truncated upload would.
    (repo.root / ".git" / "objects" / head[:2] / head[2:]).unlink()
    with pytest.raises(RuntimeError, match=r"git log failed .*(bad object|could not|fatal)"):
        read_repository(repo.root)


def test_max_commits_keeps_the_newest(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    hashes = []
    for n in range(4):
        repo.write(".env", f"N={n}\n")
        hashes.append(repo.commit(f"n={n}", f"2026-11-20T0{n + 1}:00:00-08:00"))
    commits = read_repository(repo.root, max_commits=2)
    assert [c.hash for c in commits] == hashes[2:]
    assert commits[0].texts[".env"] == ("N=1\n", "N=2\n")


def _commit_with_raw_dates(repo: Repo, subject: str, author: str, committer: str) -> str:
    """A commit object written as-is, with ident dates git itself would never write today
    (`git commit` refuses them; old histories hold them)."""
    tree = repo.git("rev-parse", "HEAD^{tree}")
    parent = repo.git("rev-parse", "HEAD")
    body = (
        f"tree {tree}\nparent {parent}\n"
        f"author Bad Clock <bad@example.com> {author}\n"
        f"committer Bad Clock <bad@example.com> {committer}\n\n{subject}\n"
    )
    (repo.root / "commit.txt").write_text(body)
    sha = repo.git("hash-object", "-t", "commit", "-w", "--literally", "commit.txt")
    (repo.root / "commit.txt").unlink()
    repo.git("update-ref", "refs/heads/main", sha)
    return sha


def test_a_malformed_commit_date_is_warned_about_and_read_from_its_timestamp(
    tmp_path: Path,
) -> None:
    """A real history holds `+051800` (git prints `+518:00`): the commit's timestamp still
    says when it was, so it is read from that with a warning, and the rest of the history
    ingests."""
    repo = Repo(tmp_path / "r")
    repo.write(".env", "A=1\n")
    first = repo.commit("first", "2026-11-20T07:30:00-08:00")
    odd = _commit_with_raw_dates(repo, "odd zone", "1262304000 +051800", "1262304000 +051800")
    repo.write(".env", "A=2\n")
    last = repo.commit("after", "2026-11-20T08:30:00-08:00")
    history = read_history(repo.root)
    assert [c.hash for c in history.commits] == [first, odd, last]
    bad = history.commits[1]
    assert bad.authored_at == bad.committed_at == dt.datetime(2010, 1, 1, tzinfo=UTC)
    assert history.warnings == [
        f"commit {odd[:12]}: its author date has a malformed zone offset "
        "('2010-01-22T14:00:00+518:00' as git "
        "prints it); read as 2010-01-01T00:00:00+00:00 from its timestamp",
        f"commit {odd[:12]}: its committer date has a malformed zone offset "
        "('2010-01-22T14:00:00+518:00' as git "
        "prints it); read as 2010-01-01T00:00:00+00:00 from its timestamp",
    ]
    result = commits_to_result(history.commits, repo="r", ctx=ParseContext(name="r"))
    assert [(c.key, c.old, c.new) for c in result.config_changes] == [
        ("A", None, "1"),
        ("A", "1", "2"),
    ]


def test_an_unreadable_commit_date_falls_back_to_the_other_date_then_the_commit_before(
    tmp_path: Path,
) -> None:
    repo = Repo(tmp_path / "r")
    repo.write(".env", "A=1\n")
    repo.commit("first", "2026-11-20T07:30:00-08:00")
    one = _commit_with_raw_dates(repo, "no author date", "x +0000", "1795714200 +0000")
    two = _commit_with_raw_dates(repo, "no date at all", "x +0000", "99999999999999999999 +0000")
    history = read_history(repo.root)
    by_hash = _by_hash(history.commits)
    assert by_hash[one].authored_at == by_hash[one].committed_at == _utc(17, 30, day=26)
    assert by_hash[two].authored_at == by_hash[two].committed_at == _utc(17, 30, day=26)
    assert len(history.warnings) == 3
    assert history.warnings[0].startswith(f"commit {one[:12]}: its author date has an unreadable")
    assert history.warnings[0].endswith("read as its committer date")
    assert history.warnings[2].endswith("read as the time of the commit before it")


def test_merges_keep_their_parents_and_what_they_brought(tmp_path: Path) -> None:
    """Merges are merges, not empty commits: both parents, and the files they brought to the
    first-parent line; a merge off that line lists none (as git log shows it)."""
    repo = Repo(tmp_path / "r")
    repo.write(".env", "A=1\n")
    repo.commit("first", "2026-11-20T07:30:00-08:00")
    repo.git("checkout", "-q", "-b", "side")
    repo.write(".env", "A=2\n")
    repo.commit("side change", "2026-11-20T07:40:00-08:00")
    repo.git("checkout", "-q", "main")
    repo.write("notes.txt", "x\n")
    main_tip = repo.commit("main change", "2026-11-20T07:45:00-08:00")
    repo.git("merge", "-q", "--no-ff", "side", "-m", "Merge side", at="2026-11-20T07:50:00-08:00")
    merge = repo.git("rev-parse", "HEAD")
    commits = _by_hash(read_repository(repo.root))
    assert commits[merge].parents[0] == main_tip
    assert len(commits[merge].parents) == 2
    assert commits[merge].files == (FileStat(".env", None, None),)
    result = commits_to_result(list(commits.values()), repo="r", ctx=ParseContext(name="r"))
    event = next(e for e in result.events if e.key == merge)
    assert "Merge of" in event.body and "_No files changed._" not in event.body
    assert [(c.key, c.new, c.ref) for c in result.config_changes if c.old is not None] == [
        ("A", "2", merge)
    ]


def test_generated_data_under_a_config_name_is_skipped_with_one_warning(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.write("static/manifest.json", "{" + ",".join(f'"k{i}":{i}' for i in range(2_000)) + "}")
    repo.write("pnpm-lock.yaml", "lockfileVersion: '9.0'\n")
    repo.write(".env", "A=1\n")
    repo.commit("first", "2026-11-20T07:30:00-08:00")
    repo.write("static/manifest.json", "{" + ",".join(f'"k{i}":{i}' for i in range(2_001)) + "}")
    repo.write("pnpm-lock.yaml", "lockfileVersion: '9.1'\n")
    repo.commit("second", "2026-11-20T08:30:00-08:00")
    commits = read_repository(repo.root)
    assert all("pnpm-lock.yaml" not in c.texts for c in commits)  # its blobs are never read
    result = commits_to_result(commits, repo="r", ctx=ParseContext(name="r"))
    assert [(c.key, c.new) for c in result.config_changes] == [("A", "1")]
    assert result.warnings == [
        f"commit {commits[0].hash[:12]}: static/manifest.json is generated data, not "
        "configuration (minified JSON); its changes are not read"
    ]


def test_a_git_log_past_its_deadline_is_stopped_with_a_clear_error(tmp_path, monkeypatch):
    repo = Repo(tmp_path / "r")
    repo.write(".env", "A=1\n")
    repo.commit("first", "2026-11-20T07:30:00-08:00")
    real_git = shutil.which("git")
    assert real_git
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(
        f'#!/bin/sh\ncase " $* " in *" --raw "*) exec sleep 30;; esac\nexec "{real_git}" "$@"\n'
    )
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"git log in .* timed out \(deadline reached\)"):
        read_history(repo.root, timeout=2.0)
    assert time.monotonic() - started < 10
