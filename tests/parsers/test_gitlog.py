"""`git log` text parsing and the commits -> records step."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from evidence.vocabulary import EventKind, Lane, Source
from ingest.parsers.gitcommits import CommitInfo, FileStat, commits_to_result
from ingest.parsers.gitlog import looks_like_git_log_text, parse_git_log, parse_git_log_text
from ingest.parsers.types import (
    ParseContext,
    ParseError,
)
from tests.parsers.golden import assert_golden

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "git"
UTC = dt.UTC
H = {
    "init": "354c668d67db30d8ab89c6283b82599fc0422d43",
    "rename": "bcfc180e3774ad3f03f52d8a9a2ff3c369db717e",
    "binary": "d79b88d73eb19fc8da1954c5dafb05f33b518e8d",
    "empty": "8021324c7c32d6d3d71848868bc7d39d94009648",
    "ctas": "12e6e9bc6798ebe81596c713e404c2588eae13bb",
    "side": "394f408603c4029674f98869f8ae90028d96331f",
    "merge": "5436713cc4d93ba8bb857e6c8c23bcdcc8cdf66f",
    "revert": "b610e9391ae19f8c8e72a5c35ebfd8d293eff8e7",
}
A, B, C = "a" * 40, "b" * 40, "c" * 40


def _ctx(name: str = "repo.gitlog") -> ParseContext:
    return ParseContext(name=name)


def _log(*commits: str) -> bytes:
    return "\n\n".join(commits).encode()


def _commit(
    commit_hash: str, subject: str = "change", *, date: str = "2026-11-20T13:12:00-08:00"
) -> str:
    author = "Author: Dana Ops <dana@example.com>"
    return f"commit {commit_hash}\n{author}\nDate: {date}\n\n    {subject}\n"


# --- the sample deploy history ------------------------------------------------------------------


def test_deploy_log_matches_its_golden_file() -> None:
    result = parse_git_log((FIXTURES / "deploy.gitlog").read_bytes(), _ctx("repo/deploy.gitlog"))
    assert_golden(result, FIXTURES / "deploy.gitlog.expected.json")


def test_deploy_log_reads_every_commit_in_file_order() -> None:
    commits = parse_git_log_text((FIXTURES / "deploy.gitlog").read_bytes(), _ctx())
    assert len(commits) == 12
    assert commits[0].hash == H["revert"]
    assert commits[-1].hash == H["init"]
    assert commits[-1].files == (
        FileStat(".env", 2, 0),
        FileStat("launch.sh", 17, 0),
        FileStat("monitoring/alerts.rules", 10, 0),
    )
    assert commits[0].committed_at == dt.datetime(2026, 11, 21, 0, 30, tzinfo=UTC)
    assert commits[0].committed_at == commits[0].authored_at


def test_rename_with_an_empty_brace_side_gives_both_paths() -> None:
    commits = {
        c.hash: c for c in parse_git_log_text((FIXTURES / "deploy.gitlog").read_bytes(), _ctx())
    }
    assert commits[H["rename"]].files == (
        FileStat("monitoring/prometheus/alerts.rules", 1, 1, "monitoring/alerts.rules"),
    )


def test_binary_file_has_no_line_counts() -> None:
    commits = {
        c.hash: c for c in parse_git_log_text((FIXTURES / "deploy.gitlog").read_bytes(), _ctx())
    }
    assert commits[H["binary"]].files == (FileStat("monitoring/dashboard.png", None, None),)


def test_empty_and_merge_commits_have_no_files() -> None:
    commits = {
        c.hash: c for c in parse_git_log_text((FIXTURES / "deploy.gitlog").read_bytes(), _ctx())
    }
    assert commits[H["empty"]].files == ()
    assert commits[H["empty"]].subject == "Trigger redeploy (no changes)"
    assert commits[H["merge"]].files == ()
    assert commits[H["merge"]].subject == "Merge branch 'metrics-port'"


def test_body_keeps_its_blank_lines_and_indentation() -> None:
    commits = {
        c.hash: c for c in parse_git_log_text((FIXTURES / "deploy.gitlog").read_bytes(), _ctx())
    }
    ctas = commits[H["ctas"]]
    assert ctas.subject == "Enable PDL tuning: SGLANG_SM120_MMA_TARGET_CTAS=512"
    assert ctas.body == (
        "Matches the DSV4_DEPLOY.md change from 13:10.\n\n"
        "Benchmarked on one node only:\n  decode +4% at batch 64"
    )
    assert ctas.files == (FileStat("launch.sh", 1, 0),)


def test_default_medium_layout_reads_merge_parents() -> None:
    commits = parse_git_log_text((FIXTURES / "deploy-medium.gitlog").read_bytes(), _ctx())
    assert [c.hash for c in commits][2:] == [H["merge"], H["side"]]
    assert commits[2].parents == ("12e6e9b", "394f408")
    assert commits[2].committed_at == dt.datetime(2026, 11, 20, 21, 25, tzinfo=UTC)


def test_commit_events_come_out_oldest_first_with_attrs() -> None:
    result = parse_git_log((FIXTURES / "deploy.gitlog").read_bytes(), _ctx("bundle/repo.gitlog"))
    assert result.kind == "git_log"
    assert [e.key for e in result.events][0] == H["init"]
    assert [e.key for e in result.events][-1] == H["revert"]
    assert result.config_changes == []  # a log text carries no file contents to diff
    init = result.events[0]
    assert (init.kind, init.lane, init.title) == (
        EventKind.COMMIT,
        Lane.COMMITS,
        "Add DSV4 launch script and env",
    )
    assert init.attrs["repo"] == "repo"
    assert init.attrs["short"] == H["init"][:12]
    assert init.attrs["touches_config"] is True
    assert init.line == 90
    binary = next(e for e in result.events if e.key == H["binary"])
    assert binary.attrs["touches_config"] is False
    assert binary.attrs["files"] == [
        {"path": "monitoring/dashboard.png", "added": None, "removed": None}
    ]


# --- edge cases of the text format ---------------------------------------------------------------


def test_quoted_and_arrow_renames_are_unquoted() -> None:
    data = _commit(A) + (
        '\n0\t0\t"caf\\303\\251 \\"q\\".txt" => "dir/th\\303\\251.txt"\n'
        "3\t1\told/launch.sh => scripts/launch.sh\n"
        "2\t2\tdeploy/{k8s => helm}/values.yaml\n"
        '4\t0\t"tab\\there.env"\n'
    )
    files = parse_git_log_text(data.encode(), _ctx())[0].files
    assert files == (
        FileStat("dir/thé.txt", 0, 0, 'café "q".txt'),
        FileStat("scripts/launch.sh", 3, 1, "old/launch.sh"),
        FileStat("deploy/helm/values.yaml", 2, 2, "deploy/k8s/values.yaml"),
        FileStat("tab\there.env", 4, 0),
    )


def test_trailing_whitespace_stripped_body_still_parses() -> None:
    data = (
        f"commit {A}\nAuthor: Dana Ops <dana@example.com>\nDate: 2026-11-20T13:12:00Z\n\n"
        "    subject line\n\n    para one\n\n    para two\n\n1\t0\t.env\n"
    )
    commit = parse_git_log_text(data.encode(), _ctx())[0]
    assert (commit.subject, commit.body) == ("subject line", "para one\n\npara two")
    assert commit.files == (FileStat(".env", 1, 0),)


def test_commit_with_an_empty_message_is_kept() -> None:
    data = f"commit {A}\nAuthor: Dana Ops <dana@example.com>\nDate: 2026-11-20T13:12:00Z\n\n\n"
    data += _commit(B)
    commits = parse_git_log_text(data.encode(), _ctx())
    assert [(c.hash, c.subject) for c in commits] == [(A, ""), (B, "change")]


def test_crlf_line_endings_and_naive_dates_use_the_context_zone() -> None:
    data = _commit(A, date="2026-11-20 13:12:00 -0800").replace("\n", "\r\n")
    data += "\r\n" + _commit(B, date="2026-11-20T13:12:00")
    la = dt.timezone(dt.timedelta(hours=-8))
    commits = parse_git_log_text(data.encode(), ParseContext(name="x", tz=la))
    assert [c.committed_at for c in commits] == [dt.datetime(2026, 11, 20, 21, 12, tzinfo=UTC)] * 2


def test_log_cut_inside_a_header_names_the_commit() -> None:
    data = _commit(A) + f"\ncommit {B}\nAuthor: Dana Ops <dana@example.com>\n"
    with pytest.raises(ParseError) as err:
        parse_git_log_text(data.encode(), _ctx("cut.gitlog"))
    assert err.value.file == "cut.gitlog"
    assert err.value.line == 7  # the cut commit's own header line
    assert err.value.message == (
        f"the log ends inside the header of commit {B[:12]}: expected a 'Date: <date>' line"
    )


def test_log_cut_inside_a_numstat_line_is_an_error() -> None:
    data = _commit(A) + "\n12\t3"
    with pytest.raises(ParseError) as err:
        parse_git_log_text(data.encode(), _ctx())
    assert err.value.line == 7
    assert "added<TAB>removed<TAB>path" in err.value.message


def test_malformed_commit_line_is_an_error() -> None:
    with pytest.raises(ParseError) as err:
        parse_git_log_text(b"commit 12345\nAuthor: x <y>\n", _ctx())
    assert (err.value.line, "40 hex digit hash" in err.value.message) == (1, True)


def test_malformed_author_and_date_are_errors() -> None:
    bad_author = f"commit {A}\nAuthor: Dana Ops\nDate: 2026-11-20T13:12:00Z\n\n    x\n"
    with pytest.raises(ParseError, match=r":2: expected 'Author: name <email>'"):
        parse_git_log_text(bad_author.encode(), _ctx())
    bad_date = f"commit {A}\nAuthor: D <d@x>\nDate: yesterday\n\n    x\n"
    with pytest.raises(ParseError, match=r":3: expected an ISO 8601 date"):
        parse_git_log_text(bad_date.encode(), _ctx())


def test_unknown_header_is_an_error() -> None:
    data = f"commit {A}\nAuthor: D <d@x>\nWhen: 2026-11-20\n\n    x\n"
    with pytest.raises(ParseError, match=r":3: expected a header line"):
        parse_git_log_text(data.encode(), _ctx())


def test_undecodable_bytes_are_a_parse_error_with_the_line() -> None:
    data = _commit(A).encode() + b"\n1\t0\tcaf\xe9.env\n"
    with pytest.raises(ParseError) as err:
        parse_git_log_text(data, _ctx())
    assert err.value.line == 7
    assert "UTF-8" in err.value.message


def test_looks_like_git_log_text() -> None:
    head = (FIXTURES / "deploy.gitlog").read_bytes()[:400]
    assert looks_like_git_log_text("anything.txt", head)
    assert looks_like_git_log_text("m.gitlog", (FIXTURES / "deploy-medium.gitlog").read_bytes())
    assert not looks_like_git_log_text("notes.md", b"# commit history\n\ncommit often\n")
    assert not looks_like_git_log_text("x.log", b"[2026-11-20 15:39:58] Receive: obj=...\n")


# --- commits -> records ---------------------------------------------------------------------------


def _info(
    commit_hash: str,
    texts: dict[str, tuple[str | None, str | None]],
    *,
    minute: int = 0,
    subject: str = "change",
) -> CommitInfo:
    at = dt.datetime(2026, 11, 20, 21, minute, tzinfo=UTC)
    return CommitInfo(
        hash=commit_hash,
        parents=(),
        author="Dana Ops",
        email="dana@example.com",
        authored_at=at,
        committed_at=at,
        subject=subject,
        body="",
        files=tuple(FileStat(p, 1, 0) for p in texts),
        texts=texts,
    )


def test_config_texts_become_commit_changes_with_where() -> None:
    commit = _info(
        A, {".env": ("METRICS_PORT=9400\nLOG_LEVEL=info\n", "METRICS_PORT=9401\nLOG_LEVEL=info\n")}
    )
    result = commits_to_result([commit], repo="repo", ctx=_ctx())
    assert result.kind == "git_repo"
    [change] = result.config_changes
    assert (change.key, change.old, change.new) == ("METRICS_PORT", "9400", "9401")
    assert (change.source, change.ref, change.where) == (Source.COMMIT, A, ".env:1")
    assert change.at == dt.datetime(2026, 11, 20, 21, 0, tzinfo=UTC)


def test_markdown_doc_yields_a_revision_event_and_doc_changes() -> None:
    before = "# DSV4\n\n```bash\nexport MODEL_PATH=deepseek-ai/DeepSeek-V4\n```\n"
    after = before.replace("```\n", "export SGLANG_SM120_MMA_TARGET_CTAS=512\n```\n", 1)
    result = commits_to_result(
        [_info(B, {"docs/DSV4_DEPLOY.md": (before, after)}, minute=10, subject="Document CTAS")],
        repo="docs",
        ctx=_ctx(),
    )
    commit_event, doc_event = result.events
    assert commit_event.kind == EventKind.COMMIT
    assert (doc_event.kind, doc_event.lane) == (EventKind.DOC_REVISION, Lane.DOCS)
    assert doc_event.key == f"docs/DSV4_DEPLOY.md@{B}"
    assert doc_event.attrs["path"] == "docs/DSV4_DEPLOY.md"
    assert doc_event.attrs["commit"] == B
    assert [s["key"] for s in doc_event.attrs["settings"]] == [
        "MODEL_PATH",
        "SGLANG_SM120_MMA_TARGET_CTAS",
    ]
    [change] = result.config_changes
    assert (change.key, change.old, change.new, change.source) == (
        "SGLANG_SM120_MMA_TARGET_CTAS",
        None,
        "512",
        Source.DOC,
    )
    assert change.ref == f"docs/DSV4_DEPLOY.md@{B[:12]}"


def test_malformed_config_file_is_skipped_with_a_warning_not_fatal() -> None:
    broken = _info(
        A, {"deploy/values.yaml": (None, "server:\n  port: [9400\n"), ".env": (None, "A=1\n")}
    )
    fine = _info(B, {".env": ("A=1\n", "A=2\n")}, minute=5)
    result = commits_to_result([broken, fine], repo="repo", ctx=_ctx())
    assert len(result.warnings) == 1
    assert A[:12] in result.warnings[0]
    assert "deploy/values.yaml" in result.warnings[0]
    assert [(c.key, c.old, c.new, c.ref) for c in result.config_changes] == [
        ("A", None, "1", A),
        ("A", "1", "2", B),
    ]
    assert len(result.events) == 2


def test_deleted_file_removes_its_settings() -> None:
    result = commits_to_result([_info(C, {".env": ("A=1\n", None)})], repo="r", ctx=_ctx())
    assert [(c.key, c.old, c.new) for c in result.config_changes] == [("A", "1", None)]


def test_newest_first_input_is_reordered_oldest_first() -> None:
    older, newer = _info(A, {}, minute=0), _info(B, {}, minute=30)
    result = commits_to_result([newer, older], repo="r", ctx=_ctx())
    assert [e.key for e in result.events] == [A, B]


@pytest.mark.parametrize(
    "shown",
    ["2010-01-22T14:00:00+518:00", "2010-01-22 14:00:00 +51800", "Fri Jan 22 14:00:00 2010 +51800"],
)
def test_a_malformed_zone_offset_is_read_as_git_printed_it_with_a_warning(shown: str) -> None:
    """A commit recorded with `+051800` (real histories hold such dates): git printed the wall
    time with 518 hours of offset, so the moment is recovered, and the log still ingests."""
    data = _commit(A, "odd clock", date=shown) + "\n" + _commit(B, "fine")
    result = parse_git_log(data.encode(), _ctx())
    assert [e.at for e in result.events] == [
        dt.datetime(2010, 1, 1, tzinfo=UTC),
        dt.datetime(2026, 11, 20, 21, 12, tzinfo=UTC),
    ]
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith(f"{_ctx().name}:3: the date {shown!r} has a malformed")
