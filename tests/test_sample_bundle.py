"""The DSV4 wedge sample bundle: deterministic, complete, and in the real formats."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ingest.samples.dsv4_wedge import EXPECTED, write_bundle

UTC = dt.UTC
PST = dt.timezone(dt.timedelta(hours=-8))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(tmp_path_factory.mktemp("seed7") / "dsv4-wedge")


@pytest.fixture(scope="module")
def bundle_again(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(tmp_path_factory.mktemp("seed7-again") / "dsv4-wedge", seed=7)


@pytest.fixture(scope="module")
def bundle_other_seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(tmp_path_factory.mktemp("seed8") / "dsv4-wedge", seed=8)


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def _local(hms: str) -> dt.datetime:
    h, m, s = (int(x) for x in (hms + ":00")[:8].split(":"))
    return dt.datetime(2026, 11, 20, h, m, s, tzinfo=PST).astimezone(UTC)


def _log_lines(bundle: Path) -> list[str]:
    return (bundle / "logs" / "sglang_server.log").read_text("utf-8").splitlines()


_RECEIVE = re.compile(
    r"^\[(?P<ts>[\d-]+ [\d:]+)\] Receive: obj=GenerateReqInput\(rid='(?P<rid>\w+)'"
)
_FINISH = re.compile(r"^\[(?P<ts>[\d-]+ [\d:]+)\] Finish: obj=GenerateReqInput\(rid='(?P<rid>\w+)'")


def _prom_blocks(bundle: Path) -> list[str]:
    """The exposition file split into scrape blocks (each starts at num_running_reqs' HELP)."""
    text = (bundle / "metrics" / "sglang.prom").read_text("utf-8")
    marker = "# HELP sglang:num_running_reqs "
    return [marker + block for block in text.split(marker)[1:]]


def _gauge(bundle: Path, name: str) -> dict[dt.datetime, float]:
    out = {}
    prefix = f"{name}{{"
    for line in (bundle / "metrics" / "sglang.prom").read_text("utf-8").splitlines():
        if line.startswith(prefix):
            _, value, ts = line.rsplit(" ", 2)
            out[dt.datetime.fromtimestamp(int(ts) / 1000, UTC)] = float(value)
    return out


# --- determinism ------------------------------------------------------------------------------


def test_the_same_seed_writes_identical_files(bundle: Path, bundle_again: Path) -> None:
    first, second = _files(bundle), _files(bundle_again)
    assert first.keys() == second.keys()
    for name in first:
        assert first[name] == second[name], name


def test_the_same_seed_gives_the_same_commit_hashes(bundle: Path, bundle_again: Path) -> None:
    for repo in ("docs", "repo"):
        head = _git(bundle / repo, "rev-parse", "HEAD").strip()
        assert re.fullmatch(r"[0-9a-f]{40}", head)
        assert head == _git(bundle_again / repo, "rev-parse", "HEAD").strip()


def test_a_different_seed_changes_the_metrics(bundle: Path, bundle_other_seed: Path) -> None:
    for name in ("metrics/sglang.prom", "metrics/dcgm.json", "logs/sglang_server.log"):
        assert (bundle / name).read_bytes() != (bundle_other_seed / name).read_bytes(), name
    # The story itself does not depend on the seed.
    assert len(_prom_blocks(bundle_other_seed)) == EXPECTED["prom_scrapes"]


# --- layout and refusal --------------------------------------------------------------------------


def test_the_bundle_has_exactly_the_expected_files(bundle: Path) -> None:
    assert sorted(_files(bundle)) == sorted(EXPECTED["files"])
    assert (bundle / "docs" / ".git").is_dir()
    assert (bundle / "repo" / ".git").is_dir()


def test_the_bundle_is_a_few_megabytes(bundle: Path) -> None:
    total = sum(len(data) for data in _files(bundle).values())
    assert 1_000_000 < total < 12_000_000
    assert (bundle / "logs" / "sglang_server.log").stat().st_size < 8_000_000


def test_a_non_empty_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("keep me\n")
    with pytest.raises(FileExistsError, match="not empty"):
        write_bundle(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_file_in_place_of_the_directory_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "bundle"
    target.write_text("")
    with pytest.raises(NotADirectoryError):
        write_bundle(target)


def test_an_existing_empty_directory_is_used(tmp_path: Path) -> None:
    assert write_bundle(tmp_path, seed=1) == tmp_path
    assert (tmp_path / "incident.toml").is_file()


def test_expected_times_are_aware_utc() -> None:
    moments = [EXPECTED["first_bad"], EXPECTED["last_good"], EXPECTED["culprit"]["at"]]
    moments += [at for at, _ in EXPECTED["docs_commits"]]
    moments += list(EXPECTED["dropped_received_at"])
    assert all(m.utcoffset() == dt.timedelta(0) for m in moments)
    assert EXPECTED["first_bad"] == dt.datetime(2026, 11, 20, 23, 39, 58, tzinfo=UTC)


# --- incident.toml and the two git repositories ------------------------------------------------


def test_incident_toml_names_the_timezone_and_sets_no_marks(bundle: Path) -> None:
    data = tomllib.loads((bundle / "incident.toml").read_text("utf-8"))
    assert data == {"title": EXPECTED["title"], "timezone": "America/Los_Angeles"}


def _history(repo: Path) -> list[tuple[dt.datetime, dt.datetime, str]]:
    out = _git(repo, "log", "--reverse", "--format=%aI%x09%cI%x09%s")
    rows = []
    for line in out.splitlines():
        author, committer, subject = line.split("\t")
        rows.append(
            (
                dt.datetime.fromisoformat(author).astimezone(UTC),
                dt.datetime.fromisoformat(committer).astimezone(UTC),
                subject,
            )
        )
    return rows


def test_the_docs_history_has_the_story_commits(bundle: Path) -> None:
    history = _history(bundle / "docs")
    assert [(a, s) for a, _, s in history] == list(EXPECTED["docs_commits"])
    assert [a for a, _, _ in history] == [_local(t) for t in ("07:30", "09:30", "11:20", "13:10")]
    assert all(a == c for a, c, _ in history)


def test_the_deploy_history_has_the_story_commits(bundle: Path) -> None:
    history = _history(bundle / "repo")
    assert [(a, s) for a, _, s in history] == list(EXPECTED["repo_commits"])
    times = {a for a, _, _ in history}
    for hms in ("08:40", "09:30", "13:05", "13:12", "13:25", "13:40", "16:30"):
        assert _local(hms) in times, hms


def test_the_culprit_is_introduced_by_the_13_10_doc_commit(bundle: Path) -> None:
    key = EXPECTED["culprit"]["key"]
    docs = _git(bundle / "docs", "log", "--reverse", f"-S{key}", "--format=%aI").split()
    assert [dt.datetime.fromisoformat(t).astimezone(UTC) for t in docs] == [_local("13:10")]
    repo = _git(bundle / "repo", "log", "--reverse", f"-S{key}", "--format=%aI").split()
    assert [dt.datetime.fromisoformat(t).astimezone(UTC) for t in repo] == [_local("13:12")]
    diff = _git(bundle / "docs", "show", "--format=", "HEAD")
    assert f"+export {key}=512" in diff
    assert f"+- 2026-11-20 13:10 set {key}=512 (pdl)" in diff


def test_the_doc_carries_the_prose_traps_and_a_dated_changelog(bundle: Path) -> None:
    doc = (bundle / "docs" / "DSV4_DEPLOY.md").read_text("utf-8")
    assert "Do not set `SGLANG_OPT_FP8_WO_A_GEMM=1`" in doc
    assert "```bash\nexport MODEL_PATH=deepseek-ai/DeepSeek-V4\n" in doc
    assert '--model-path "${MODEL_PATH}" \\\n' in doc
    assert "| Variable | Value |" in doc
    changelog = doc.split("## Changelog\n", 1)[1]
    items = [line for line in changelog.splitlines() if line.startswith("- ")]
    assert len(items) == 3
    assert all(re.match(r"- 2026-11-20 \d\d:\d\d ", item) for item in items)


def test_the_deploy_repo_ends_reverted_with_the_culprit_still_set(bundle: Path) -> None:
    launch = bundle / "repo" / "launch.sh"
    text = launch.read_text("utf-8")
    assert "--chunked-prefill-size 8192 \\\n" in text
    assert "export SGLANG_SM120_MMA_TARGET_CTAS=512\n" in text
    assert launch.stat().st_mode & 0o111
    assert "100755 blob" in _git(bundle / "repo", "ls-tree", "HEAD", "launch.sh")
    env = (bundle / "repo" / ".env").read_text("utf-8")
    assert "METRICS_PORT=9401\n" in env and "LOG_LEVEL=debug\n" in env


def test_the_revert_commit_names_the_commit_it_reverts(bundle: Path) -> None:
    revert_body = _git(bundle / "repo", "log", "-1", "--format=%b", "HEAD~1")
    reverted = re.search(r"This reverts commit ([0-9a-f]{40})\.", revert_body)
    assert reverted is not None
    subject = _git(bundle / "repo", "log", "-1", "--format=%s", reverted.group(1)).strip()
    assert subject == "launch: --chunked-prefill-size 16384 for long agent contexts"


# --- the server log -------------------------------------------------------------------------------


def test_the_log_has_exactly_the_expected_never_finished_requests(bundle: Path) -> None:
    received: dict[str, str] = {}
    finished: set[str] = set()
    for line in _log_lines(bundle):
        if m := _RECEIVE.match(line):
            received[m["rid"]] = m["ts"]
        elif m := _FINISH.match(line):
            finished.add(m["rid"])
    assert finished <= received.keys()
    never = sorted(ts for rid, ts in received.items() if rid not in finished)
    assert len(never) == EXPECTED["dropped_requests"] == 16
    at = [
        dt.datetime.strptime(ts, "%Y-%m-%d %H:%M:%S").replace(tzinfo=PST).astimezone(UTC)
        for ts in never
    ]
    assert tuple(at) == EXPECTED["dropped_received_at"]
    assert at[0] == EXPECTED["first_bad"]
    # Nothing received earlier is left unfinished: the first dropped request is the first bad.
    assert min(received.values()) < "2026-11-20 08:01:00"


def test_every_finish_is_followed_by_an_access_line(bundle: Path) -> None:
    lines = _log_lines(bundle)
    finishes = [i for i, line in enumerate(lines) if _FINISH.match(line)]
    assert len(finishes) > 500
    for i in finishes:
        assert '"POST /v1/chat/completions HTTP/1.1" 200 OK' in lines[i + 1]


def test_every_log_line_starts_with_a_zoneless_local_timestamp(bundle: Path) -> None:
    stamp = re.compile(r"^\[2026-11-20 \d\d:\d\d:\d\d( TP0)?\] ")
    lines = _log_lines(bundle)
    assert all(stamp.match(line) for line in lines)
    stamps = [line[1:20] for line in lines]
    assert stamps == sorted(stamps)


def test_traceback_only_appears_inside_prompt_payload(bundle: Path) -> None:
    with_traceback = [line for line in _log_lines(bundle) if "Traceback" in line]
    assert with_traceback
    assert all(_RECEIVE.match(line) for line in with_traceback)


def test_decode_lines_in_the_wedge_show_two_running_and_no_throughput(bundle: Path) -> None:
    decode = re.compile(
        r"^\[2026-11-20 (?P<t>[\d:]+) TP0\] Decode batch\. #running-req: (?P<run>\d+),"
        r".* gen throughput \(token/s\): (?P<tput>[\d.]+), #queue-req: (?P<q>\d+),$"
    )
    wedged, normal = [], []
    for line in _log_lines(bundle):
        if m := decode.match(line):
            if "15:41:00" <= m["t"] < "16:10:00" or m["t"] >= "16:56:00":
                wedged.append(m)
            elif "08:00:00" <= m["t"] < "15:38:00":
                normal.append(m)
    assert len(wedged) > 100
    assert all(m["run"] == "2" and m["tput"] == "0.00" for m in wedged)
    assert int(wedged[-1]["q"]) > int(wedged[0]["q"])
    assert all(6 <= int(m["run"]) <= 14 and float(m["tput"]) > 500 for m in normal)


def test_the_log_records_the_16_10_restart(bundle: Path) -> None:
    lines = _log_lines(bundle)
    ready = [line for line in lines if "The server is fired up and ready to roll!" in line]
    assert [line[12:17] for line in ready] == ["07:58", "16:10"]
    assert any("16:10:" in line and "Scheduler restarted" in line for line in lines)


# --- metrics --------------------------------------------------------------------------------------


def test_an_exposition_sample_parses_with_prometheus_client(bundle: Path) -> None:
    blocks = _prom_blocks(bundle)
    assert len(blocks) == EXPECTED["prom_scrapes"]
    families = list(text_string_to_metric_families("".join(blocks[:3])))
    kinds = {f.name: f.type for f in families}
    assert kinds == {
        "sglang:num_running_reqs": "gauge",
        "sglang:num_queue_reqs": "gauge",
        "sglang:gen_throughput": "gauge",
        "sglang:token_usage": "gauge",
        "sglang:e2e_request_latency_seconds": "histogram",
    }
    first = EXPECTED["metrics_start"].timestamp()
    stamps = sorted({s.timestamp for f in families for s in f.samples})
    assert [float(t) for t in stamps] == [first, first + 15, first + 30]
    for family in families:
        for sample in family.samples:
            assert sample.labels["model_name"] == "dsv4"
            assert sample.labels["tp_rank"] == "0"


def test_histogram_buckets_are_cumulative(bundle: Path) -> None:
    block = _prom_blocks(bundle)[1000]
    (histogram,) = [f for f in text_string_to_metric_families(block) if f.type == "histogram"]
    buckets = [s for s in histogram.samples if s.name.endswith("_bucket")]
    assert buckets[-1].labels["le"] == "+Inf"
    counts = [s.value for s in buckets]
    assert counts == sorted(counts)
    count = next(s.value for s in histogram.samples if s.name.endswith("_count"))
    assert counts[-1] == count > 0


def test_the_metrics_follow_the_story(bundle: Path) -> None:
    running = _gauge(bundle, "sglang:num_running_reqs")
    tput = _gauge(bundle, "sglang:gen_throughput")
    queue = _gauge(bundle, "sglang:num_queue_reqs")
    assert min(running) == EXPECTED["metrics_start"]
    assert max(running) == EXPECTED["metrics_end"]
    for at, value in running.items():
        for start, end in EXPECTED["wedges"]:
            if start <= at < end:
                assert value == 2.0 and tput[at] == 0.0, at
        if _local("08:00") <= at < _local("15:38"):
            assert 6 <= value <= 14 and 600 <= tput[at] <= 1400, at
    assert queue[_local("16:09:45")] > queue[_local("15:41:00")]
    # The exporter was down for the restart; load is back right after.
    assert _local("16:10:15") not in running
    assert 6 <= running[_local("16:12")] <= 14


def test_the_query_range_response_has_eight_gpu_series(bundle: Path) -> None:
    data = json.loads((bundle / "metrics" / "dcgm.json").read_text("utf-8"))
    assert data["status"] == "success"
    assert data["data"]["resultType"] == "matrix"
    series = data["data"]["result"]
    assert len(series) == EXPECTED["dcgm_series"] == 8
    assert sorted(s["metric"]["gpu"] for s in series) == [str(g) for g in range(8)]
    wedge_start, wedge_end = EXPECTED["wedges"][0]
    for s in series:
        assert s["metric"]["__name__"] == "DCGM_FI_DEV_GPU_UTIL"
        assert s["metric"]["Hostname"] == "dsv4-node-1"
        assert len(s["values"]) == EXPECTED["dcgm_points"]
        for ts, value in s["values"]:
            assert isinstance(ts, float) and isinstance(value, str)
            at = dt.datetime.fromtimestamp(ts, UTC)
            if wedge_start <= at < wedge_end:
                assert float(value) <= 1
            elif at < _local("15:38"):
                assert 60 <= float(value) <= 95
        steps = {b[0] - a[0] for a, b in zip(s["values"], s["values"][1:], strict=False)}
        assert steps == {15.0}


# --- harness and dumps ----------------------------------------------------------------------------


def test_the_stability_harness_is_green_all_day(bundle: Path) -> None:
    lines = (bundle / "harness" / "stability.jsonl").read_text("utf-8").splitlines()
    runs = [json.loads(line) for line in lines]
    assert len(runs) == EXPECTED["harness_runs"] * len(EXPECTED["harness_cases"])
    assert {r["suite"] for r in runs} == {"stability"}
    assert {r["case"] for r in runs} == set(EXPECTED["harness_cases"])
    assert all(r["status"] == "pass" and r["score"] >= r["threshold"] for r in runs)
    times = [dt.datetime.fromisoformat(r["ts"]) for r in runs]
    assert times[0] > EXPECTED["metrics_start"] and times[-1] > _local("18:00")
    assert len({r["run_id"] for r in runs}) == 21


def test_the_junit_files_pass_and_carry_timestamps(bundle: Path) -> None:
    for name in EXPECTED["junit_files"]:
        suite = ET.parse(bundle / name).getroot().find("testsuite")
        assert suite is not None
        assert suite.get("failures") == "0" and suite.get("errors") == "0"
        stamp = dt.datetime.fromisoformat(suite.get("timestamp", ""))
        assert stamp.utcoffset() == dt.timedelta(hours=-8)
        assert name.endswith(stamp.strftime("%Y-%m-%dT%H-%M-00.xml"))
        cases = suite.findall("testcase")
        assert len(cases) == 4
        assert all(c.find("failure") is None and c.find("error") is None for c in cases)


def test_the_lm_eval_results_file_has_acc_and_an_epoch_date(bundle: Path) -> None:
    data = json.loads((bundle / EXPECTED["lm_eval_file"]).read_text("utf-8"))
    assert all(0.6 < task["acc,none"] < 0.95 for task in data["results"].values())
    assert isinstance(data["date"], float)
    assert dt.datetime.fromtimestamp(data["date"], UTC) == EXPECTED["lm_eval_at"]
    assert data["config"]["model"] == "local-completions"


def test_the_pyspy_dump_shows_the_scheduler_threads(bundle: Path) -> None:
    (name,) = [n for n in EXPECTED["dumps"] if "pyspy" in n]
    text = (bundle / name).read_text("utf-8")
    assert text.startswith("Process ") and "\nPython v3.11" in text
    threads = re.findall(r'^Thread 0x[0-9A-F]+ \((idle|active)\): "([^"]+)"$', text, re.M)
    assert ("active", "MainThread") in threads and len(threads) == 4
    assert "event_loop_overlap (sglang/srt/managers/scheduler.py:" in text
    assert "    synchronize (torch/cuda/streams.py:" in text
    assert "    recv_pyobj (zmq/sugar/socket.py:" in text


def test_the_goroutine_dump_is_dominated_by_roundtrip_waits(bundle: Path) -> None:
    (name,) = [n for n in EXPECTED["dumps"] if "goroutines" in n]
    text = (bundle / name).read_text("utf-8")
    blocks = text.split("\n\n")
    headers = [b.split("\n", 1) for b in blocks if b.startswith("goroutine ")]
    assert 380 <= len(headers) <= 420
    roundtrip = [
        head for head, body in headers if body.startswith("net/http.(*persistConn).roundTrip(")
    ]
    assert len(roundtrip) == EXPECTED["goroutines_roundtrip"]
    six = [h for h in roundtrip if h.endswith("[select, 6 minutes]:")]
    assert len(six) > 0.9 * len(roundtrip)
    ids = [int(h.split()[1]) for h, _ in headers]
    assert len(ids) == len(set(ids))


def test_dump_capture_times_are_in_the_file_names() -> None:
    for name, at in EXPECTED["dumps"].items():
        local = at.astimezone(PST).strftime("%Y-%m-%dT%H-%M-%S")
        assert name.endswith(f"_{local}.txt")
    assert EXPECTED["dumps"]["dumps/pyspy-scheduler_2026-11-20T15-45-00.txt"] == _local("15:45")
