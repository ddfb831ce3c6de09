"""The DSV4 wedge sample incident: a deterministic evidence bundle in the real input formats.

One day, 2026-11-20, on a server whose logs are in America/Los_Angeles time (PST, UTC-8).
Config changes land through the morning and early afternoon; from 15:39:58 requests are
received and never finished while the scheduler keeps logging with two running requests and
zero throughput; a co-restart at 16:10 clears it; the wedge recurs at 16:55. The culprit is
``SGLANG_SM120_MMA_TARGET_CTAS=512``, introduced at 13:10 (doc) and 13:12 (deploy commit).

:func:`write_bundle` writes the bundle; :data:`EXPECTED` holds the facts an analysis of it must
find. Everything random comes from ``random.Random(seed)``, and the two git repositories are
committed with fixed names, emails and dates, so the same seed yields the same bytes and the
same commit hashes. This module does I/O (files, the ``git`` CLI); it is not a pure parser.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr
from zoneinfo import ZoneInfo

UTC = dt.UTC
TZ_NAME = "America/Los_Angeles"
LOCAL = ZoneInfo(TZ_NAME)
DAY = dt.date(2026, 11, 20)
TITLE = "DSV4 decode wedge under agentic load"

CULPRIT_KEY = "SGLANG_SM120_MMA_TARGET_CTAS"
CULPRIT_VALUE = "512"
MODEL_LABELS = 'model_name="dsv4",tp_rank="0"'
N_GPUS = 8
HOSTNAME = "dsv4-node-1"


def _sec(hms: str) -> int:
    """Seconds since local midnight for "HH:MM" or "HH:MM:SS"."""
    parts = [int(p) for p in hms.split(":")]
    while len(parts) < 3:
        parts.append(0)
    return parts[0] * 3600 + parts[1] * 60 + parts[2]


def _local(sec: float) -> dt.datetime:
    midnight = dt.datetime(DAY.year, DAY.month, DAY.day, tzinfo=LOCAL)
    return midnight + dt.timedelta(seconds=sec)


def _utc(hms: str) -> dt.datetime:
    return _local(_sec(hms)).astimezone(UTC)


def _epoch(sec: float) -> float:
    return _local(sec).timestamp()


def _stamp(sec: int) -> str:
    """The SGLang log timestamp: local wall time, no zone."""
    return _local(sec).strftime("%Y-%m-%d %H:%M:%S")


# --- the story's clock ------------------------------------------------------------------------

STEP = 15  # seconds between scrapes
METRICS_START = _sec("08:00")
METRICS_END = _sec("18:00")  # inclusive: the last scrape
DOWN = (_sec("16:10:00"), _sec("16:10:45"))  # co-restart: the sglang exporter is unreachable
# Half-open scrape windows where running is stuck at 2 and throughput is 0.
WEDGES = ((_sec("15:40:15"), _sec("16:10:00")), (_sec("16:55:00"), METRICS_END + 1))
# The batch drains to one or two requests just before each wedge.
LULLS = ((_sec("15:38:30"), _sec("15:40:15")), (_sec("16:53:30"), _sec("16:55:00")))
# Requests received and never finished, per wedge. The first two of each are the ones stuck
# running; the rest queue behind them. Fixed times (not from the rng) so EXPECTED holds for
# every seed.
DROPPED = (
    tuple(
        _sec(t)
        for t in (
            "15:39:58",
            "15:40:03",
            "15:42:41",
            "15:45:12",
            "15:49:37",
            "15:53:05",
            "15:58:44",
            "16:04:19",
        )
    ),
    tuple(
        _sec(t)
        for t in (
            "16:54:52",
            "16:54:57",
            "16:57:30",
            "17:03:12",
            "17:11:45",
            "17:20:02",
            "17:31:26",
            "17:44:50",
        )
    ),
)
# The decode line after the second stuck request still shows a little throughput.
ONSET_DECODE = ((_sec("15:40:04"), 88.31), (_sec("16:54:59"), 71.64))
LOG_WEDGE_END = (_sec("16:10:00"), METRICS_END + 1)
# Normal requests are received and finished inside these windows.
REQUEST_WINDOWS = ((_sec("08:00:00"), _sec("15:39:55")), (_sec("16:11:00"), _sec("16:54:50")))
LOG_START = _sec("07:58:10")
RESTART = _sec("16:10:00")
HARNESS_RUNS = tuple(range(_sec("08:00"), METRICS_END + 1, 1800))
HARNESS_CASES = (
    ("long_context_recall", 0.90),
    ("tool_call_json_validity", 0.95),
    ("multi_turn_consistency", 0.85),
    ("gsm8k_subset", 0.90),
)
JUNIT_RUNS = (_sec("10:00"), _sec("14:00"))
LM_EVAL_AT = _sec("08:05") + 0.318
PYSPY_AT = _sec("15:45")
GOROUTINES_AT = _sec("15:46")
GOROUTINES_LLM = (331, 9)  # stuck in the LLM client: 6 minutes, 5 minutes
GOROUTINES_TOOLS = 44  # stuck in the tool client: 6 minutes


def _fname_time(sec: int) -> str:
    return _local(sec).strftime("%Y-%m-%dT%H-%M-%S")


PYSPY_FILE = f"dumps/pyspy-scheduler_{_fname_time(PYSPY_AT)}.txt"
GOROUTINES_FILE = f"dumps/goroutines-agent_{_fname_time(GOROUTINES_AT)}.txt"
JUNIT_FILES = tuple(f"harness/junit-stability-{_fname_time(t)}.xml" for t in JUNIT_RUNS)
LM_EVAL_FILE = f"harness/results_{_fname_time(int(LM_EVAL_AT))}.json"


# --- the two git histories -------------------------------------------------------------------

PRIYA = ("Priya Raman", "priya.raman@example.com")
TOMAS = ("Tomás Ortega", "tomas.ortega@example.com")
JUN = ("Jun Park", "jun.park@example.com")


@dataclass(frozen=True)
class _Commit:
    at: str  # local "HH:MM"
    author: tuple[str, str]
    subject: str
    files: dict[str, str]
    body: str = ""
    reverts: str = ""  # subject of the commit this one reverts; its hash goes into the body


@dataclass(frozen=True)
class _Launch:
    mem: str = "0.85"
    chunked: str = "8192"
    tokenizer: str = "/models/dsv4-tok-v1"
    ctas: bool = False


def _launch_sh(s: _Launch) -> str:
    ctas = ""
    if s.ctas:
        ctas = (
            "# PDL on sm120: size the MMA grid for all SMs (see DSV4_DEPLOY.md, 2026-11-20 13:10)\n"
            f"export {CULPRIT_KEY}={CULPRIT_VALUE}\n"
        )
    return (
        "#!/usr/bin/env bash\n"
        "# Launch DSV4 on dsv4-node-1. Keep in step with docs/DSV4_DEPLOY.md.\n"
        "set -euo pipefail\n"
        "\n"
        "export MODEL_PATH=deepseek-ai/DeepSeek-V4\n"
        "export SGLANG_ENABLE_JIT_DEEPGEMM=1\n"
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        "export NCCL_IB_DISABLE=0\n"
        f"{ctas}"
        "\n"
        "exec python3 -m sglang.launch_server \\\n"
        '  --model-path "${MODEL_PATH}" \\\n'
        "  --tp 8 \\\n"
        f"  --mem-fraction-static {s.mem} \\\n"
        f"  --chunked-prefill-size {s.chunked} \\\n"
        f"  --tokenizer-path {s.tokenizer} \\\n"
        "  --enable-metrics \\\n"
        "  --host 0.0.0.0 \\\n"
        "  --port 30000\n"
    )


def _dotenv(port: str = "9400", level: str = "info") -> str:
    return (
        "# dsv4-node-1 sidecar settings (read by the metrics sidecar, not by sglang)\n"
        f"METRICS_PORT={port}\n"
        f"LOG_LEVEL={level}\n"
    )


def _readme(stage: int) -> str:
    text = (
        "# dsv4-deploy\n"
        "\n"
        "Launch script and sidecar settings for DeepSeek-V4 on `dsv4-node-1`.\n"
        "The deployment doc (`DSV4_DEPLOY.md` in the docs repository) is the reference;\n"
        "change both together.\n"
    )
    if stage >= 1:
        text += (
            "\n"
            "## Rolling back\n"
            "\n"
            "Revert the commit, then co-restart the server and the agent harness:\n"
            "`systemctl restart sglang-dsv4 agentd`. A server restart alone leaves the agents'\n"
            "connections hanging.\n"
        )
    if stage >= 2:
        text += "\nOn-call runbook: https://wiki.example.com/inference/dsv4-runbook\n"
    if stage >= 3:
        text += (
            "\nOpen investigation (2026-11-20): decode wedges at 15:40 and 16:55 with requests\n"
            "dropped; the 16:30 chunked-prefill revert did not help.\n"
        )
    return text


def _deploy_doc(*, mem: str, ctas: bool, smoke_clarified: bool, changelog: list[str]) -> str:
    ctas_export = ""
    ctas_row = ""
    if ctas:
        ctas_export = (
            f"# PDL on sm120: size the MMA grid for all SMs\nexport {CULPRIT_KEY}={CULPRIT_VALUE}\n"
        )
        ctas_row = f"| `{CULPRIT_KEY}` | {CULPRIT_VALUE} | MMA grid size for PDL on sm120 |\n"
    if smoke_clarified:
        smoke = (
            "After the server logs `The server is fired up and ready to roll!`, send one chat\n"
            "request through the OpenAI-compatible endpoint and check that it finishes within a\n"
            "few seconds. A request that is received but never finishes is the symptom to page\n"
            "on, even when the GPUs look healthy.\n"
        )
    else:
        smoke = "Send one request once the server is up and check it comes back.\n"
    items = "".join(f"- {item}\n" for item in changelog)
    return (
        "# DSV4 deployment on dsv4-node-1\n"
        "\n"
        'This page is the reference for how DeepSeek-V4 ("DSV4") is served on `dsv4-node-1`\n'
        "(8x RTX PRO 6000 Blackwell, sm120) for the agentic pool. The deploy repository's\n"
        "`launch.sh` follows it: change both together and add a line to the changelog below.\n"
        "\n"
        "## Environment\n"
        "\n"
        "Set these before launching; `MODEL_PATH` is read by the launch command.\n"
        "\n"
        "```bash\n"
        "export MODEL_PATH=deepseek-ai/DeepSeek-V4\n"
        "export SGLANG_ENABLE_JIT_DEEPGEMM=1\n"
        "export CUDA_DEVICE_MAX_CONNECTIONS=1  # keeps kernel launch order for overlap scheduling\n"
        "export NCCL_IB_DISABLE=0\n"
        f"{ctas_export}"
        'if [ "${GPU_ARCH:-sm120}" = "sm100" ]; then\n'
        "  export SGLANG_ENABLE_FLASHINFER_ALLREDUCE_FUSION=1\n"
        "fi\n"
        "```\n"
        "\n"
        "Do not set `SGLANG_OPT_FP8_WO_A_GEMM=1` on this node: the FP8 weight-only GEMM path is\n"
        "not validated on sm120 and produced garbage tokens in the October trial. The scheduler\n"
        "runs with the default `SGLANG_ENABLE_OVERLAP_SCHEDULE=true`; leave it alone.\n"
        "\n"
        "| Variable | Value | Why |\n"
        "|---|---|---|\n"
        "| `SGLANG_ENABLE_JIT_DEEPGEMM` | 1 | JIT-compiled DeepGEMM kernels |\n"
        "| `CUDA_DEVICE_MAX_CONNECTIONS` | 1 | launch order for overlap scheduling |\n"
        "| `NCCL_IB_DISABLE` | 0 | keep InfiniBand for the TP all-reduce |\n"
        f"{ctas_row}"
        "\n"
        "## Launch\n"
        "\n"
        "```bash\n"
        "python3 -m sglang.launch_server \\\n"
        '  --model-path "${MODEL_PATH}" \\\n'
        "  --tp 8 \\\n"
        f"  --mem-fraction-static {mem} \\\n"
        "  --chunked-prefill-size 8192 \\\n"
        "  --tokenizer-path /models/dsv4-tok-v1 \\\n"
        "  --enable-metrics \\\n"
        "  --host 0.0.0.0 \\\n"
        "  --port 30000\n"
        "```\n"
        "\n"
        "`--enable-metrics` exposes Prometheus metrics on `:30000/metrics`; the DCGM exporter\n"
        "runs beside it. Do not add `--disable-radix-cache`: agent turns share long prefixes.\n"
        "\n"
        "## Smoke test\n"
        "\n"
        f"{smoke}"
        "\n"
        "```python\n"
        "import openai\n"
        "\n"
        'client = openai.OpenAI(base_url="http://dsv4-node-1:30000/v1", api_key="none")\n'
        "client.chat.completions.create(\n"
        '    model="dsv4", messages=[{"role": "user", "content": "ping"}]\n'
        ")\n"
        "```\n"
        "\n"
        "## Monitoring\n"
        "\n"
        "| Signal | Where |\n"
        "|---|---|\n"
        "| running / queued requests | `sglang:num_running_reqs`, `sglang:num_queue_reqs` |\n"
        "| GPU utilisation | `DCGM_FI_DEV_GPU_UTIL` |\n"
        "\n"
        "## Changelog\n"
        "\n"
        f"{items}"
    )


_CL_INITIAL = "2026-11-20 07:30 initial deployment doc for dsv4-node-1 (TP8, agentic pool)"
_CL_MEM = "2026-11-20 09:30 raise --mem-fraction-static 0.85 -> 0.88 for KV headroom"
_CL_CTAS = f"2026-11-20 13:10 set {CULPRIT_KEY}={CULPRIT_VALUE} (pdl)"

DOC = "DSV4_DEPLOY.md"

DOCS_COMMITS = (
    _Commit(
        "07:30",
        PRIYA,
        "Add the DSV4 deployment doc for dsv4-node-1",
        {DOC: _deploy_doc(mem="0.85", ctas=False, smoke_clarified=False, changelog=[_CL_INITIAL])},
    ),
    _Commit(
        "09:30",
        PRIYA,
        "DSV4: raise --mem-fraction-static to 0.88",
        {
            DOC: _deploy_doc(
                mem="0.88", ctas=False, smoke_clarified=False, changelog=[_CL_INITIAL, _CL_MEM]
            )
        },
        body="More KV cache headroom for long agent contexts; no other change.",
    ),
    _Commit(
        "11:20",
        PRIYA,
        "DSV4: clarify the smoke test",
        {
            DOC: _deploy_doc(
                mem="0.88", ctas=False, smoke_clarified=True, changelog=[_CL_INITIAL, _CL_MEM]
            )
        },
    ),
    _Commit(
        "13:10",
        TOMAS,
        f"DSV4: set {CULPRIT_KEY}={CULPRIT_VALUE} (pdl)",
        {
            DOC: _deploy_doc(
                mem="0.88",
                ctas=True,
                smoke_clarified=True,
                changelog=[_CL_INITIAL, _CL_MEM, _CL_CTAS],
            )
        },
        body="PDL-friendly MMA tiling on sm120: +6% decode tok/s on the 8k agentic trace.",
    ),
)

_CHUNKED_SUBJECT = "launch: --chunked-prefill-size 16384 for long agent contexts"

REPO_COMMITS = (
    _Commit(
        "07:30",
        JUN,
        "Initial DSV4 launch script and sidecar env",
        {"launch.sh": _launch_sh(_Launch()), ".env": _dotenv(), "README.md": _readme(0)},
    ),
    _Commit(
        "08:40",
        JUN,
        ".env: LOG_LEVEL=debug while we chase slow tool calls",
        {".env": _dotenv(level="debug")},
    ),
    _Commit(
        "09:30",
        PRIYA,
        "launch: --mem-fraction-static 0.88",
        {"launch.sh": _launch_sh(_Launch(mem="0.88"))},
    ),
    _Commit("11:05", JUN, "README: how to roll back", {"README.md": _readme(1)}),
    _Commit(
        "13:05",
        JUN,
        "launch: switch the tokenizer to dsv4-tok-v2",
        {"launch.sh": _launch_sh(_Launch(mem="0.88", tokenizer="/models/dsv4-tok-v2"))},
        body="v2 fixes the tool-call special tokens; same vocabulary.",
    ),
    _Commit(
        "13:12",
        TOMAS,
        f"launch: export {CULPRIT_KEY}={CULPRIT_VALUE} (pdl, per DSV4_DEPLOY.md)",
        {"launch.sh": _launch_sh(_Launch(mem="0.88", tokenizer="/models/dsv4-tok-v2", ctas=True))},
    ),
    _Commit(
        "13:25",
        JUN,
        ".env: move the metrics sidecar to 9401",
        {".env": _dotenv(port="9401", level="debug")},
    ),
    _Commit(
        "13:40",
        JUN,
        _CHUNKED_SUBJECT,
        {
            "launch.sh": _launch_sh(
                _Launch(mem="0.88", tokenizer="/models/dsv4-tok-v2", ctas=True, chunked="16384")
            )
        },
    ),
    _Commit("14:50", PRIYA, "README: link the on-call runbook", {"README.md": _readme(2)}),
    _Commit(
        "16:30",
        JUN,
        f'Revert "{_CHUNKED_SUBJECT}"',
        {
            "launch.sh": _launch_sh(
                _Launch(mem="0.88", tokenizer="/models/dsv4-tok-v2", ctas=True, chunked="8192")
            )
        },
        reverts=_CHUNKED_SUBJECT,
    ),
    _Commit("17:15", PRIYA, "README: note the open wedge investigation", {"README.md": _readme(3)}),
)


# --- what an analysis must find ----------------------------------------------------------------


def _change(
    key: str, old: str | None, new: str | None, at: str, scope: str, sources: tuple[str, ...]
) -> dict[str, Any]:
    return {"key": key, "old": old, "new": new, "at": _utc(at), "scope": scope, "sources": sources}


_BUNDLE_FILES = (
    "incident.toml",
    f"docs/{DOC}",
    "repo/launch.sh",
    "repo/.env",
    "repo/README.md",
    "metrics/sglang.prom",
    "metrics/dcgm.json",
    "logs/sglang_server.log",
    "harness/stability.jsonl",
    *JUNIT_FILES,
    LM_EVAL_FILE,
    PYSPY_FILE,
    GOROUTINES_FILE,
)

EXPECTED: dict[str, Any] = {
    "title": TITLE,
    "date": DAY.isoformat(),
    "timezone": TZ_NAME,
    "first_bad": _utc("15:39:58"),
    "last_good": _utc("09:30"),  # the state that carried load without a symptom until 13:05
    "last_good_until": _utc("13:05"),
    "culprit": _change(CULPRIT_KEY, None, CULPRIT_VALUE, "13:10", "env", ("doc", "commit")),
    "culprit_doc_at": _utc("13:10"),
    "culprit_commit_at": _utc("13:12"),
    # Every change after the initial 07:30 state (which introduces every key), with the sources
    # that record it. The doc and the deploy repo are diffed separately; the doc lags the
    # deploy repo on the tokenizer and chunked-prefill flags, which is not a change.
    "config_changes": (
        _change("LOG_LEVEL", "info", "debug", "08:40", "env", ("commit",)),
        _change("--mem-fraction-static", "0.85", "0.88", "09:30", "flag", ("doc", "commit")),
        _change(
            "--tokenizer-path",
            "/models/dsv4-tok-v1",
            "/models/dsv4-tok-v2",
            "13:05",
            "flag",
            ("commit",),
        ),
        _change(CULPRIT_KEY, None, CULPRIT_VALUE, "13:10", "env", ("doc", "commit")),
        _change("METRICS_PORT", "9400", "9401", "13:25", "env", ("commit",)),
        _change("--chunked-prefill-size", "8192", "16384", "13:40", "flag", ("commit",)),
        _change("--chunked-prefill-size", "16384", "8192", "16:30", "flag", ("commit",)),
    ),
    "excluded_before_last_good": ("LOG_LEVEL", "--mem-fraction-static"),
    "suspect_keys": (CULPRIT_KEY, "--tokenizer-path", "METRICS_PORT", "--chunked-prefill-size"),
    "revert": _change("--chunked-prefill-size", "16384", "8192", "16:30", "flag", ("commit",)),
    "docs_commits": tuple((_utc(c.at), c.subject) for c in DOCS_COMMITS),
    "repo_commits": tuple((_utc(c.at), c.subject) for c in REPO_COMMITS),
    "dropped_requests": sum(len(d) for d in DROPPED),
    "dropped_received_at": tuple(_local(t).astimezone(UTC) for d in DROPPED for t in d),
    # Metric wedges: running stuck at 2 with zero throughput (the second lasts to the end).
    "wedges": ((_utc("15:40:15"), _utc("16:10:00")), (_utc("16:55:00"), _utc("18:00:00"))),
    "restart_at": _local(RESTART).astimezone(UTC),
    "metrics_start": _local(METRICS_START).astimezone(UTC),
    "metrics_end": _local(METRICS_END).astimezone(UTC),
    "scrape_interval": dt.timedelta(seconds=STEP),
    # One scrape every 15 s, minus the three the exporter missed during the restart.
    "prom_scrapes": len(range(METRICS_START, METRICS_END + 1, STEP))
    - len(range(DOWN[0], DOWN[1], STEP)),
    "dcgm_series": N_GPUS,
    "dcgm_points": len(range(METRICS_START, METRICS_END + 1, STEP)),
    "harness_runs": len(HARNESS_RUNS),
    "harness_cases": tuple(name for name, _ in HARNESS_CASES),
    "junit_files": JUNIT_FILES,
    "lm_eval_file": LM_EVAL_FILE,
    "lm_eval_at": _local(LM_EVAL_AT).astimezone(UTC),
    "dumps": {
        PYSPY_FILE: _local(PYSPY_AT).astimezone(UTC),
        GOROUTINES_FILE: _local(GOROUTINES_AT).astimezone(UTC),
    },
    "goroutines_roundtrip": sum(GOROUTINES_LLM) + GOROUTINES_TOOLS,
    "files": _BUNDLE_FILES,
}


# --- writing -----------------------------------------------------------------------------------


def write_bundle(out_dir: Path, *, seed: int = 7) -> Path:
    """Write the DSV4 wedge bundle into ``out_dir`` (created if missing) and return it.

    Refuses a non-empty directory. Needs the ``git`` CLI. The same seed gives the same bytes in
    every file outside ``.git/`` and the same commit hashes.
    """
    out_dir = Path(out_dir)
    if out_dir.exists():
        if not out_dir.is_dir():
            raise NotADirectoryError(f"{out_dir} is not a directory")
        if any(out_dir.iterdir()):
            raise FileExistsError(f"{out_dir} is not empty; the sample bundle needs an empty one")
    out_dir.mkdir(parents=True, exist_ok=True)

    rng = random.Random(seed)  # noqa: S311 -- reproducible sample data, not secrets
    _write(
        out_dir / "incident.toml",
        "# The DSV4 wedge sample incident (ingest.samples.dsv4_wedge).\n"
        f'title = "{TITLE}"\n'
        f'timezone = "{TZ_NAME}"  # SGLang logs carry no zone\n',
    )
    _write_repo(out_dir / "docs", DOCS_COMMITS, home=out_dir)
    _write_repo(out_dir / "repo", REPO_COMMITS, home=out_dir)

    load = _simulate_load(rng)
    _write(out_dir / "metrics" / "sglang.prom", _exposition(load))
    _write(out_dir / "metrics" / "dcgm.json", _query_range(load, rng))
    _write(out_dir / "logs" / "sglang_server.log", _server_log(load, rng))
    for name, text in _harness(rng).items():
        _write(out_dir / name, text)
    _write(out_dir / PYSPY_FILE, _pyspy_dump(rng))
    _write(out_dir / GOROUTINES_FILE, _goroutine_dump(rng))
    return out_dir


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Bytes, not text mode: no platform newline translation.
    path.write_bytes(text.encode("utf-8"))
    path.chmod(mode)


# Every option that could make a commit hash depend on the machine is pinned here.
_GIT_OPTIONS = (
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.fileMode=true",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "i18n.commitEncoding=UTF-8",
    "-c",
    "init.defaultBranch=main",
)


def _git(repo: Path, env: dict[str, str], *args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", *_GIT_OPTIONS, *args],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except FileNotFoundError as exc:
        raise RuntimeError("the git CLI is needed to write the sample bundle") from exc
    if proc.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed in {repo}: {proc.stderr.strip()}")
    return proc.stdout


def _write_repo(repo: Path, commits: Iterable[_Commit], *, home: Path) -> None:
    repo.mkdir(parents=True)
    # A minimal environment: nothing from the caller's git setup (GIT_DIR, user config,
    # hooks, templates) may leak into the history.
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
        "TZ": "UTC",
    }
    _git(repo, env, "init", "-q", "--template=", "--initial-branch=main")
    hashes: dict[str, str] = {}
    for commit in commits:
        for name, text in commit.files.items():
            _write(repo / name, text, 0o755 if name.endswith(".sh") else 0o644)
        when = _utc(commit.at).astimezone(LOCAL).isoformat()
        name, email = commit.author
        commit_env = env | {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": when,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
            "GIT_COMMITTER_DATE": when,
        }
        body = commit.body
        if commit.reverts:
            body = f"This reverts commit {hashes[commit.reverts]}.\n\nDid not clear the wedge."
        message = ["-m", commit.subject] + (["-m", body] if body else [])
        _git(repo, commit_env, "add", "-A")
        _git(repo, commit_env, "commit", "-q", "--no-verify", *message)
        hashes[commit.subject] = _git(repo, commit_env, "rev-parse", "HEAD").strip()


# --- the load model ------------------------------------------------------------------------------

_LATENCY_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0)


@dataclass
class _Load:
    """The server's state at every scrape (seconds since local midnight)."""

    times: list[int] = field(default_factory=list)
    phase: list[str] = field(default_factory=list)  # normal, lull, wedge, down
    running: list[int] = field(default_factory=list)
    queue: list[int] = field(default_factory=list)
    throughput: list[float] = field(default_factory=list)
    usage: list[float] = field(default_factory=list)
    # Cumulative e2e latency histogram: per-bucket counts (not yet cumulative over le), sum.
    buckets: list[list[int]] = field(default_factory=list)
    latency_sum: list[float] = field(default_factory=list)
    gpu: list[list[int]] = field(default_factory=list)  # [gpu][scrape]

    def at(self, sec: int) -> int:
        """Index of the last scrape at or before ``sec``."""
        return max(0, min(len(self.times) - 1, (sec - METRICS_START) // STEP))


def _phase(sec: int) -> str:
    if DOWN[0] <= sec < DOWN[1]:
        return "down"
    if any(a <= sec < b for a, b in WEDGES):
        return "wedge"
    if any(a <= sec < b for a, b in LULLS):
        return "lull"
    return "normal"


def _wedge_queue(sec: int) -> int:
    """Queued requests during a wedge: everything received after the two stuck ones."""
    for drops, end in zip(DROPPED, LOG_WEDGE_END, strict=True):
        if drops[0] <= sec < end:
            return max(0, sum(1 for t in drops if t <= sec) - 2)
    return 0


def _simulate_load(rng: random.Random) -> _Load:
    load = _Load()
    running = 9
    gpu_level = [rng.randint(70, 90) for _ in range(N_GPUS)]
    load.gpu = [[] for _ in range(N_GPUS)]
    counts = [0] * (len(_LATENCY_BUCKETS) + 1)
    total = 0.0
    for sec in range(METRICS_START, METRICS_END + 1, STEP):
        phase = _phase(sec)
        if phase == "normal":
            running = min(14, max(6, running + rng.choice((-1, 0, 0, 1))))
            queue = rng.choice((1, 2, 3)) if running >= 12 and rng.random() < 0.4 else 0
            throughput = min(1400.0, max(600.0, 560 + running * 55 + rng.uniform(-60, 60)))
            usage = 0.25 + running * 0.03 + rng.uniform(-0.02, 0.02)
            done = max(0, round(running * STEP / 25 + rng.uniform(-2, 2)))
        elif phase == "lull":
            running = rng.randint(1, 3)
            queue = 0
            throughput = running * rng.uniform(70, 95)
            usage = 0.38 + rng.uniform(-0.02, 0.02)
            done = rng.randint(1, 3)
        elif phase == "wedge":
            running, queue, throughput, usage, done = 2, _wedge_queue(sec), 0.0, 0.44, 0
        else:  # down: the restart resets the counters; load comes back afterwards
            running, queue, throughput, usage, done = rng.randint(6, 9), 0, 0.0, 0.0, 0
            counts = [0] * len(counts)
            total = 0.0
        for _ in range(done):
            latency = min(300.0, rng.lognormvariate(3.0, 0.6))
            total += latency
            counts[sum(1 for b in _LATENCY_BUCKETS if latency > b)] += 1
        load.times.append(sec)
        load.phase.append(phase)
        load.running.append(running)
        load.queue.append(queue)
        load.throughput.append(round(throughput, 2))
        load.usage.append(round(usage, 4))
        load.buckets.append(list(counts))
        load.latency_sum.append(round(total, 3))
        for g in range(N_GPUS):
            if phase == "normal":
                target = 55 + running * 2.8
                gpu_level[g] = round(0.6 * gpu_level[g] + 0.4 * target + rng.uniform(-4, 4))
                load.gpu[g].append(min(95, max(60, gpu_level[g])))
            elif phase == "lull":
                load.gpu[g].append(rng.randint(25, 45))
            elif phase == "wedge":
                load.gpu[g].append(rng.choice((0, 0, 0, 1)))
            else:
                load.gpu[g].append(rng.randint(0, 3))
    return load


def _num(value: float) -> str:
    return repr(float(value))


_FAMILIES = (
    ("sglang:num_running_reqs", "The number of running requests.", "gauge"),
    ("sglang:num_queue_reqs", "The number of requests in the waiting queue.", "gauge"),
    ("sglang:gen_throughput", "The generation throughput (token/s).", "gauge"),
    ("sglang:token_usage", "The token usage.", "gauge"),
)
_LATENCY = "sglang:e2e_request_latency_seconds"


def _exposition(load: _Load) -> str:
    """Prometheus text exposition: one scrape block per 15 s, millisecond timestamps."""
    lines: list[str] = []
    for i, sec in enumerate(load.times):
        if load.phase[i] == "down":
            continue  # the exporter was unreachable: no scrape at all
        ts = round(_epoch(sec) * 1000)
        values = (load.running[i], load.queue[i], load.throughput[i], load.usage[i])
        for (name, help_text, kind), value in zip(_FAMILIES, values, strict=True):
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            lines.append(f"{name}{{{MODEL_LABELS}}} {_num(value)} {ts}")
        lines.append(f"# HELP {_LATENCY} Histogram of end-to-end request latency in seconds")
        lines.append(f"# TYPE {_LATENCY} histogram")
        cumulative = 0
        for bound, count in zip((*_LATENCY_BUCKETS, float("inf")), load.buckets[i], strict=True):
            cumulative += count
            le = "+Inf" if bound == float("inf") else _num(bound)
            lines.append(f'{_LATENCY}_bucket{{{MODEL_LABELS},le="{le}"}} {_num(cumulative)} {ts}')
        lines.append(f"{_LATENCY}_count{{{MODEL_LABELS}}} {_num(cumulative)} {ts}")
        lines.append(f"{_LATENCY}_sum{{{MODEL_LABELS}}} {_num(load.latency_sum[i])} {ts}")
    return "\n".join(lines) + "\n"


def _query_range(load: _Load, rng: random.Random) -> str:
    """A Prometheus /api/v1/query_range response for DCGM_FI_DEV_GPU_UTIL on all 8 GPUs."""
    result = []
    for g in range(N_GPUS):
        uuid = "GPU-" + "-".join(
            f"{rng.getrandbits(bits):0{bits // 4}x}" for bits in (32, 16, 16, 16, 48)
        )
        metric = {
            "__name__": "DCGM_FI_DEV_GPU_UTIL",
            "DCGM_FI_DRIVER_VERSION": "580.95.05",
            "Hostname": HOSTNAME,
            "UUID": uuid,
            "device": f"nvidia{g}",
            "gpu": str(g),
            "instance": "dcgm-exporter.monitoring:9400",
            "job": "dcgm-exporter",
            "modelName": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            "pci_bus_id": f"00000000:{0x18 + g * 0x10:02X}:00.0",
        }
        values = [[_epoch(sec), str(v)] for sec, v in zip(load.times, load.gpu[g], strict=True)]
        result.append({"metric": metric, "values": values})
    body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    return json.dumps(body, separators=(",", ":")) + "\n"


# --- the server log ------------------------------------------------------------------------------

_REPOS = ("billing-api", "agentd", "ledger", "search-indexer", "web-console")
_FILES = ("tests/test_api.py", "app/handlers.py", "worker/jobs.py", "tests/test_retry.py")


def _prompt(rng: random.Random) -> str:
    """An agent's prompt. Payload only: words like Traceback here are not server errors."""
    repo = rng.choice(_REPOS)
    kind = rng.randrange(6)
    if kind == 0:
        return (
            f"You are a coding agent in the {repo} repository. Tool result from run_tests:\n"
            "Traceback (most recent call last):\n"
            f'  File "{rng.choice(_FILES)}", line {rng.randint(12, 400)}, in test_handler\n'
            "    assert resp.status == 200\n"
            "AssertionError\n"
            "Find the cause and propose a minimal patch."
        )
    if kind == 1:
        return (
            "Summarise this alert for the on-call channel in under 40 words: "
            f"'ERROR: {repo}-worker exited with code 137 (Killed) after "
            f"{rng.randint(2, 90)} restarts'"
        )
    if kind == 2:
        return (
            "Plan the next tool call. Previous observation: grep found "
            f"{rng.randint(1, 9)} matches for 'def handle_request' in {repo}/server/api.py."
        )
    if kind == 3:
        return (
            "The user asks why their kernel fails with "
            '"CUDA error: an illegal memory access was encountered" '
            f"after upgrading to CUDA 12.{rng.randint(4, 9)}. Answer step by step."
        )
    if kind == 4:
        return (
            f"Extract JSON with fields host, severity, message from: "
            f"WARN disk usage {rng.randint(81, 99)}% on /var/lib/docker "
            f"(host build-{rng.randint(1, 40)})"
        )
    return (
        f"Continue the task. The deploy of {repo} finished; call the health endpoint and "
        "report whether the rollout can proceed."
    )


def _rid(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


@dataclass
class _Log:
    lines: list[tuple[int, int, str]] = field(default_factory=list)

    def add(self, sec: int, text: str, tp0: bool = False) -> None:
        tag = " TP0" if tp0 else ""
        self.lines.append((sec, len(self.lines), f"[{_stamp(sec)}{tag}] {text}"))

    def render(self) -> str:
        return "".join(line + "\n" for _, _, line in sorted(self.lines))


def _server_args(*, mem: str, chunked: int, tokenizer: str) -> str:
    return (
        "server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V4', "
        f"tokenizer_path='{tokenizer}', host='0.0.0.0', port=30000, "
        f"mem_fraction_static={mem}, chunked_prefill_size={chunked}, tp_size=8, "
        "enable_metrics=True, log_level='info', disable_radix_cache=False, "
        "disable_overlap_schedule=False)"
    )


def _startup(log: _Log, sec: int, rng: random.Random, args: str, *, restart: bool) -> int:
    """Startup lines from ``sec``; returns the server's process id."""
    pid = rng.randint(30000, 60000)
    avail = rng.uniform(93.0, 95.0)
    steps: list[tuple[int, str, bool]] = [
        (0, args, False),
        (6, f"Load weight begin. avail mem={avail:.2f} GB", True),
        (
            17,
            "Load weight end. type=DeepseekV4ForCausalLM, dtype=torch.bfloat16, "
            f"avail mem={avail - 78.4:.2f} GB, mem usage=78.40 GB.",
            True,
        ),
        (19, "KV Cache is allocated. #tokens: 1843200, KV size: 11.25 GB", True),
        (21, "Capture cuda graph begin. This can take up to several minutes.", True),
        (27, f"Capture cuda graph end. Time elapsed: {rng.uniform(5.5, 6.5):.2f} s", True),
    ]
    if restart:
        steps.append((28, "Scheduler restarted", True))
    steps += [
        (29, f"INFO:     Started server process [{pid}]", False),
        (29, "INFO:     Waiting for application startup.", False),
        (29, "INFO:     Application startup complete.", False),
        (29, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", False),
        (30, 'INFO:     127.0.0.1:40118 - "GET /get_model_info HTTP/1.1" 200 OK', False),
        (32, "The server is fired up and ready to roll!", False),
    ]
    for offset, text, tp0 in steps:
        log.add(sec + offset, text, tp0)
    return pid


def _decode(log: _Log, sec: int, running: int, usage: float, tput: float, queue: int) -> None:
    tokens = running * 7000 + (sec % 997) if running else 0
    if tput == 0.0:
        tokens = 70211 if running == 2 else tokens
    log.add(
        sec,
        f"Decode batch. #running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, "
        f"cuda graph: True, gen throughput (token/s): {tput:.2f}, #queue-req: {queue},",
        tp0=True,
    )


def _request(
    log: _Log, rng: random.Random, sec: int, *, finish_at: int | None, load: _Load
) -> None:
    rid = _rid(rng)
    max_new = rng.choice((1024, 2048, 4096))
    text = _prompt(rng)
    log.add(
        sec,
        f"Receive: obj=GenerateReqInput(rid='{rid}', text={text!r}, "
        f"sampling_params={{'temperature': 0.6, 'top_p': 0.95, 'max_new_tokens': {max_new}}})",
    )
    if finish_at is None:
        return
    i = load.at(sec)
    prompt_tokens = rng.randint(800, 12000)
    cached = rng.choice((0, 1024, 2048, 4096, 8192))
    if cached >= prompt_tokens:
        cached = 0
    log.add(
        sec,
        f"Prefill batch. #new-seq: 1, #new-token: {prompt_tokens - cached}, "
        f"#cached-token: {cached}, token usage: {load.usage[i]:.2f}, "
        f"#running-req: {load.running[i]}, #queue-req: {load.queue[i]},",
        tp0=True,
    )
    # Roughly 30 tokens/s per request, so a short request has a short answer.
    completion = rng.randint(20, max(21, min(max_new // 2, (finish_at - sec) * 30)))
    latency = finish_at - sec + rng.uniform(0.0, 0.99)
    log.add(
        finish_at,
        f"Finish: obj=GenerateReqInput(rid='{rid}'), out={{'meta_info': {{'id': '{rid}', "
        "'finish_reason': {'type': 'stop', 'matched': 1}, "
        f"'prompt_tokens': {prompt_tokens}, 'completion_tokens': {completion}, "
        f"'cached_tokens': {cached}, 'e2e_latency': {latency:.3f}}}}}",
    )
    log.add(
        finish_at,
        f"INFO:     10.20.4.{rng.randint(10, 60)}:{rng.randint(32768, 60999)} - "
        '"POST /v1/chat/completions HTTP/1.1" 200 OK',
    )


def _server_log(load: _Load, rng: random.Random) -> str:
    """SGLang server log lines in local time without zone, 07:58 to 18:00."""
    log = _Log()
    pid = _startup(
        log,
        LOG_START,
        rng,
        _server_args(mem="0.85", chunked=8192, tokenizer="/models/dsv4-tok-v1"),
        restart=False,
    )

    # Normal requests: each received and finished inside its window.
    for start, end in REQUEST_WINDOWS:
        sec = start + rng.randint(3, 20)
        while sec + 5 <= end - 3:
            duration = min(rng.randint(5, 90), end - 3 - sec)
            _request(log, rng, sec, finish_at=sec + duration, load=load)
            sec += rng.randint(20, 40)

    # The dropped requests: the first two get a prefill and run forever, the rest only queue.
    for drops, (onset, onset_tput) in zip(DROPPED, ONSET_DECODE, strict=True):
        for n, sec in enumerate(drops):
            _request(log, rng, sec, finish_at=None, load=load)
            if n < 2:
                new_tokens = (8192, 6144)[n]
                log.add(
                    sec,
                    f"Prefill batch. #new-seq: 1, #new-token: {new_tokens}, "
                    f"#cached-token: {8192 - new_tokens}, token usage: {0.41 + 0.02 * n:.2f}, "
                    "#running-req: 1, #queue-req: 0,",
                    tp0=True,
                )
        _decode(log, onset, 2, 0.44, onset_tput, 0)

    # Decode lines every 15-30 s, from the load model; stuck values inside the wedges.
    sec = _sec("08:00:07")
    while sec <= METRICS_END:
        wedge = next(
            (
                (drops[0], onset, end)
                for drops, (onset, _), end in zip(DROPPED, ONSET_DECODE, LOG_WEDGE_END, strict=True)
                if drops[0] <= sec < end
            ),
            None,
        )
        if wedge is not None:
            if sec > wedge[1]:
                _decode(log, sec, 2, 0.44, 0.0, _wedge_queue(sec))
        elif not RESTART <= sec < REQUEST_WINDOWS[1][0]:
            i = load.at(sec)
            tput = load.throughput[i] * rng.uniform(0.97, 1.03)
            _decode(log, sec, load.running[i], load.usage[i], tput, load.queue[i])
        sec += rng.randint(15, 30)

    log.add(
        _sec("11:47:12"),
        "KV cache pool is full. Retract requests. #retracted_reqs: 1, "
        "#new_token_ratio: 0.7000 -> 0.9000",
        tp0=True,
    )

    # The co-restart at 16:10 (server and agent harness together).
    log.add(RESTART, "INFO:     Shutting down")
    log.add(RESTART, "INFO:     Waiting for application shutdown.")
    log.add(RESTART + 1, "INFO:     Application shutdown complete.")
    log.add(RESTART + 1, f"INFO:     Finished server process [{pid}]")
    _startup(
        log,
        RESTART + 6,
        rng,
        _server_args(mem="0.88", chunked=16384, tokenizer="/models/dsv4-tok-v2"),
        restart=True,
    )
    return log.render()


# --- harness results ------------------------------------------------------------------------------


def _iso_utc(sec: float) -> str:
    moment = _local(sec).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _harness(rng: random.Random) -> dict[str, str]:
    """stability.jsonl (every run), two JUnit files, one lm-evaluation-harness results file."""
    jsonl: list[str] = []
    runs: dict[int, list[tuple[str, float, float, float]]] = {}
    for start in HARNESS_RUNS:
        sec = start + rng.uniform(2.0, 9.0)
        cases = []
        for case, threshold in HARNESS_CASES:
            duration = rng.uniform(6.0, 25.0)
            sec += duration
            score = round(min(1.0, threshold + rng.uniform(0.01, 0.08)), 3)
            cases.append((case, threshold, score, duration))
            record = {
                "ts": _iso_utc(sec),
                "suite": "stability",
                "case": case,
                "status": "pass",
                "score": score,
                "threshold": threshold,
                "run_id": f"stab-{_fname_time(start)}",
                "duration_s": round(duration, 3),
            }
            jsonl.append(json.dumps(record))
        runs[start] = cases
    files = {"harness/stability.jsonl": "\n".join(jsonl) + "\n"}
    for start, name in zip(JUNIT_RUNS, JUNIT_FILES, strict=True):
        files[name] = _junit(start, runs[start], rng)
    files[LM_EVAL_FILE] = _lm_eval(rng)
    return files


def _junit(start: int, cases: list[tuple[str, float, float, float]], rng: random.Random) -> str:
    stamp = _local(start + 3).isoformat(timespec="microseconds")
    stamp = stamp.replace(".000000", f".{rng.randint(0, 999999):06d}")
    total = sum(c[3] for c in cases)
    body = []
    for case, threshold, score, duration in cases:
        body.append(
            f'    <testcase classname="stability.test_dsv4" name="test_{case}" '
            f'time="{duration:.3f}">\n'
            "      <properties>\n"
            f'        <property name="score" value="{score}"/>\n'
            f'        <property name="threshold" value="{threshold}"/>\n'
            "      </properties>\n"
            "    </testcase>\n"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<testsuites name="pytest tests">\n'
        f'  <testsuite name="stability" errors="0" failures="0" skipped="0" tests="{len(cases)}" '
        f"time={quoteattr(f'{total:.3f}')} timestamp={quoteattr(stamp)} "
        'hostname="dsv4-harness-1">\n' + "".join(body) + "  </testsuite>\n</testsuites>\n"
    )


def _lm_eval(rng: random.Random) -> str:
    tasks = {
        "arc_challenge": (0.71, True, 1172),
        "hellaswag": (0.86, True, 10042),
        "winogrande": (0.82, False, 1267),
    }
    results: dict[str, dict[str, Any]] = {}
    for task, (base, has_norm, _) in tasks.items():
        entry: dict[str, Any] = {"alias": task}
        entry["acc,none"] = round(base + rng.uniform(-0.01, 0.01), 4)
        entry["acc_stderr,none"] = round(rng.uniform(0.003, 0.014), 4)
        if has_norm:
            entry["acc_norm,none"] = round(base + 0.02 + rng.uniform(-0.01, 0.01), 4)
            entry["acc_norm_stderr,none"] = round(rng.uniform(0.003, 0.014), 4)
        results[task] = entry
    start = 812345.0 + rng.uniform(0, 1000)
    duration = rng.uniform(1200, 1500)
    doc = {
        "results": results,
        "group_subtasks": {task: [] for task in tasks},
        "versions": {task: 1.0 for task in tasks},
        "n-shot": {task: 0 for task in tasks},
        "higher_is_better": {
            task: {"acc": True, **({"acc_norm": True} if has_norm else {})}
            for task, (_, has_norm, _) in tasks.items()
        },
        "n-samples": {task: {"original": n, "effective": n} for task, (_, _, n) in tasks.items()},
        "config": {
            "model": "local-completions",
            "model_args": (
                "model=deepseek-ai/DeepSeek-V4,base_url=http://dsv4-node-1:30000/v1/completions,"
                "num_concurrent=8,tokenized_requests=False"
            ),
            "batch_size": 1,
            "batch_sizes": [],
            "device": None,
            "use_cache": None,
            "limit": None,
            "bootstrap_iters": 100000,
            "gen_kwargs": None,
            "random_seed": 0,
            "numpy_seed": 1234,
            "torch_seed": 1234,
            "fewshot_seed": 1234,
        },
        "git_hash": "8f3b2c1",
        "date": _epoch(LM_EVAL_AT),
        "transformers_version": "4.57.1",
        "upper_git_hash": None,
        "model_source": "local-completions",
        "model_name": "deepseek-ai/DeepSeek-V4",
        "model_name_sanitized": "deepseek-ai__DeepSeek-V4",
        "start_time": round(start, 6),
        "end_time": round(start + duration, 6),
        "total_evaluation_time_seconds": f"{duration:.6f}",
    }
    return json.dumps(doc, indent=2) + "\n"


# --- stack dumps ------------------------------------------------------------------------------


def _pyspy_dump(rng: random.Random) -> str:
    """``py-spy dump --pid`` of the TP0 scheduler during the first wedge."""

    def tid() -> str:
        return f"0x7F{rng.getrandbits(28):07X}{rng.choice('0123456789ABCDEF')}40"

    pid = rng.randint(41000, 42000)
    threads = (
        (
            "active",
            "MainThread",
            (
                "synchronize (torch/cuda/streams.py:227)",
                "resolve_last_batch_result (sglang/srt/managers/tp_worker_overlap_thread.py:187)",
                "process_batch_result_decode "
                "(sglang/srt/managers/scheduler_output_processor_mixin.py:214)",
                "process_batch_result (sglang/srt/managers/scheduler.py:1893)",
                "event_loop_overlap (sglang/srt/managers/scheduler.py:803)",
                "decorate_context (torch/utils/_contextlib.py:116)",
                "run_scheduler_process (sglang/srt/managers/scheduler.py:2841)",
                "run (multiprocessing/process.py:108)",
                "_bootstrap (multiprocessing/process.py:314)",
                "_main (multiprocessing/spawn.py:135)",
                "spawn_main (multiprocessing/spawn.py:122)",
                "<module> (<string>:1)",
            ),
        ),
        (
            "idle",
            "Thread-2 (watchdog_thread)",
            (
                "watchdog_thread (sglang/srt/managers/scheduler.py:2295)",
                "run (threading.py:982)",
                "_bootstrap_inner (threading.py:1045)",
                "_bootstrap (threading.py:1002)",
            ),
        ),
        (
            "idle",
            "Thread-3 (forward_thread_func)",
            (
                "wait (threading.py:327)",
                "get (queue.py:171)",
                "forward_thread_func_ (sglang/srt/managers/tp_worker_overlap_thread.py:133)",
                "decorate_context (torch/utils/_contextlib.py:116)",
                "forward_thread_func (sglang/srt/managers/tp_worker_overlap_thread.py:120)",
                "run (threading.py:982)",
                "_bootstrap_inner (threading.py:1045)",
                "_bootstrap (threading.py:1002)",
            ),
        ),
        (
            "idle",
            "Thread-4 (_recv_loop)",
            (
                "recv_pyobj (zmq/sugar/socket.py:972)",
                "_recv_loop (sglang/srt/managers/scheduler_input_blocker.py:58)",
                "run (threading.py:982)",
                "_bootstrap_inner (threading.py:1045)",
                "_bootstrap (threading.py:1002)",
            ),
        ),
    )
    out = [f"Process {pid}: sglang::scheduler_TP0", "Python v3.11.11 (/usr/bin/python3.11)", ""]
    for state, name, frames in threads:
        out.append(f'Thread {tid()} ({state}): "{name}"')
        out.extend(f"    {frame}" for frame in frames)
        out.append("")
    return "\n".join(out)


_GO = "/usr/local/go/src"


def _goroutine_dump(rng: random.Random) -> str:
    """A Go SIGQUIT dump of the agent harness: most goroutines wait in persistConn.roundTrip."""

    def ptr() -> str:
        return f"0xc000{rng.getrandbits(24):06x}"

    def client_frames(via: str) -> list[str]:
        t, r, c, ctx = ptr(), ptr(), ptr(), ptr()
        return [
            f"net/http.(*persistConn).roundTrip({ptr()}, {ptr()})",
            f"\t{_GO}/net/http/transport.go:2734 +0x9a5",
            f"net/http.(*Transport).roundTrip({t}, {r})",
            f"\t{_GO}/net/http/transport.go:698 +0xa7a",
            f"net/http.(*Transport).RoundTrip({t}?, {r}?)",
            f"\t{_GO}/net/http/roundtrip.go:30 +0x18",
            f"net/http.send({r}, {{0xb1f0a0, {t}}}, {{0xc0?, 0x4a7c25?, 0x0?}})",
            f"\t{_GO}/net/http/client.go:259 +0x5e4",
            f"net/http.(*Client).send({c}, {r}, {{0x0?, 0x0?, 0x0?}})",
            f"\t{_GO}/net/http/client.go:180 +0x98",
            f"net/http.(*Client).do({c}, {r})",
            f"\t{_GO}/net/http/client.go:728 +0x8dc",
            "net/http.(*Client).Do(...)",
            f"\t{_GO}/net/http/client.go:587",
            *via.format(ctx=ctx, p=ptr(), q=ptr()).split("\n"),
        ]

    llm = (
        "github.com/acme-ai/agentd/internal/llm.(*Client).Chat({p}, {{0xb26f38, {ctx}}}, {q})\n"
        "\t/build/agentd/internal/llm/client.go:142 +0x2f1\n"
        "github.com/acme-ai/agentd/internal/agent.(*Worker).step({p}, {{0xb26f38, {ctx}}})\n"
        "\t/build/agentd/internal/agent/worker.go:211 +0x1a5\n"
        "github.com/acme-ai/agentd/internal/agent.(*Worker).Run({p}, {{0xb26f38, {ctx}}})\n"
        "\t/build/agentd/internal/agent/worker.go:96 +0x112\n"
        "created by github.com/acme-ai/agentd/internal/agent.(*Pool).Start in goroutine 1\n"
        "\t/build/agentd/internal/agent/pool.go:58 +0x8a"
    )
    tools = (
        "github.com/acme-ai/agentd/internal/tools.(*HTTPTool).Call({p}, {{0xb26f38, {ctx}}}, {q})\n"
        "\t/build/agentd/internal/tools/http.go:77 +0x265\n"
        "github.com/acme-ai/agentd/internal/agent.(*Worker).runTool({p}, {{0xb26f38, {ctx}}})\n"
        "\t/build/agentd/internal/agent/worker.go:254 +0x1c7\n"
        "created by github.com/acme-ai/agentd/internal/agent.(*Worker).step in goroutine 212\n"
        "\t/build/agentd/internal/agent/worker.go:230 +0x2f4"
    )
    uptime = (GOROUTINES_AT - _sec("07:50")) // 60
    fixed: list[tuple[int, str, list[str]]] = [
        (
            1,
            f"chan receive, {uptime} minutes",
            [
                "main.main()",
                "\t/build/agentd/cmd/agentd/main.go:88 +0x3c5",
            ],
        ),
        (
            2,
            f"force gc (idle), {uptime} minutes",
            [
                "runtime.gopark(0x0?, 0x0?, 0x0?, 0x0?, 0x0?)",
                f"\t{_GO}/runtime/proc.go:424 +0xce",
                "runtime.goparkunlock(...)",
                f"\t{_GO}/runtime/proc.go:430",
                "runtime.forcegchelper()",
                f"\t{_GO}/runtime/proc.go:337 +0xb3",
                "created by runtime.init.7 in goroutine 1",
                f"\t{_GO}/runtime/proc.go:325 +0x1a",
            ],
        ),
        (
            3,
            "GC sweep wait",
            [
                "runtime.gopark(0x1?, 0x0?, 0x0?, 0x0?, 0x0?)",
                f"\t{_GO}/runtime/proc.go:424 +0xce",
                "runtime.goparkunlock(...)",
                f"\t{_GO}/runtime/proc.go:430",
                f"runtime.bgsweep({ptr()})",
                f"\t{_GO}/runtime/mgcsweep.go:317 +0xdf",
                "created by runtime.gcenable in goroutine 1",
                f"\t{_GO}/runtime/mgc.go:203 +0x66",
            ],
        ),
        (
            4,
            "GC scavenge wait",
            [
                "runtime.gopark(0x10000?, 0xb0e6c8?, 0x0?, 0x0?, 0x0?)",
                f"\t{_GO}/runtime/proc.go:424 +0xce",
                "runtime.goparkunlock(...)",
                f"\t{_GO}/runtime/proc.go:430",
                f"runtime.(*scavengerState).park({ptr()})",
                f"\t{_GO}/runtime/mgcscavenge.go:425 +0x49",
                f"runtime.bgscavenge({ptr()})",
                f"\t{_GO}/runtime/mgcscavenge.go:658 +0x59",
                "created by runtime.gcenable in goroutine 1",
                f"\t{_GO}/runtime/mgc.go:204 +0xa5",
            ],
        ),
        (
            5,
            f"finalizer wait, {uptime} minutes",
            [
                "runtime.gopark(0x0?, 0x0?, 0x0?, 0x0?, 0x0?)",
                f"\t{_GO}/runtime/proc.go:424 +0xce",
                "runtime.runfinq()",
                f"\t{_GO}/runtime/mfinal.go:193 +0x107",
                "created by runtime.createfing in goroutine 1",
                f"\t{_GO}/runtime/mfinal.go:163 +0x3d",
            ],
        ),
        (
            6,
            f"syscall, {uptime} minutes",
            [
                "os/signal.signal_recv()",
                f"\t{_GO}/runtime/sigqueue.go:152 +0x29",
                "os/signal.loop()",
                f"\t{_GO}/os/signal/signal_unix.go:23 +0x13",
                "created by os/signal.Notify.func1.1 in goroutine 1",
                f"\t{_GO}/os/signal/signal.go:151 +0x1f",
            ],
        ),
        (
            18,
            f"IO wait, {uptime} minutes",
            [
                f"internal/poll.runtime_pollWait({ptr()}, 0x72)",
                f"\t{_GO}/runtime/netpoll.go:351 +0x85",
                f"internal/poll.(*pollDesc).wait({ptr()}?, 0x0?, 0x0)",
                f"\t{_GO}/internal/poll/fd_poll_runtime.go:84 +0x27",
                "internal/poll.(*pollDesc).waitRead(...)",
                f"\t{_GO}/internal/poll/fd_poll_runtime.go:89",
                f"internal/poll.(*FD).Accept({ptr()})",
                f"\t{_GO}/internal/poll/fd_unix.go:620 +0x295",
                f"net.(*netFD).accept({ptr()})",
                f"\t{_GO}/net/fd_unix.go:172 +0x29",
                f"net.(*TCPListener).accept({ptr()})",
                f"\t{_GO}/net/tcpsock_posix.go:159 +0x1e",
                f"net.(*TCPListener).Accept({ptr()})",
                f"\t{_GO}/net/tcpsock.go:372 +0x30",
                f"net/http.(*Server).Serve({ptr()}, {{0xb25e70, {ptr()}}})",
                f"\t{_GO}/net/http/server.go:3330 +0x30c",
                "main.main.func2()",
                "\t/build/agentd/cmd/agentd/main.go:71 +0x1c",
                "created by main.main in goroutine 1",
                "\t/build/agentd/cmd/agentd/main.go:70 +0x2f2",
            ],
        ),
        (
            19,
            "select",
            [
                f"github.com/acme-ai/agentd/internal/metrics.(*Reporter).loop({ptr()})",
                "\t/build/agentd/internal/metrics/reporter.go:64 +0x145",
                "created by github.com/acme-ai/agentd/internal/metrics.Start in goroutine 1",
                "\t/build/agentd/internal/metrics/reporter.go:41 +0x1b8",
            ],
        ),
    ]
    n_stuck = sum(GOROUTINES_LLM) + GOROUTINES_TOOLS
    ids = sorted(rng.sample(range(40, 30000), n_stuck + 16))
    kinds = (
        ["llm6"] * GOROUTINES_LLM[0]
        + ["llm5"] * GOROUTINES_LLM[1]
        + ["tool6"] * GOROUTINES_TOOLS
        + ["read"] * 8
        + ["write"] * 8
    )
    rng.shuffle(kinds)
    goroutines = list(fixed)
    for gid, kind in zip(ids, kinds, strict=True):
        if kind.startswith("llm"):
            goroutines.append((gid, f"select, {kind[-1]} minutes", client_frames(llm)))
        elif kind == "tool6":
            goroutines.append((gid, "select, 6 minutes", client_frames(tools)))
        elif kind == "read":
            goroutines.append(
                (
                    gid,
                    "IO wait",
                    [
                        f"internal/poll.runtime_pollWait({ptr()}, 0x72)",
                        f"\t{_GO}/runtime/netpoll.go:351 +0x85",
                        f"net.(*conn).Read({ptr()}, {{{ptr()}, 0x1000, 0x1000}})",
                        f"\t{_GO}/net/net.go:194 +0x45",
                        f"net/http.(*persistConn).Read({ptr()}, {{{ptr()}?, 0x0?, 0x0?}})",
                        f"\t{_GO}/net/http/transport.go:2122 +0x47",
                        f"bufio.(*Reader).fill({ptr()})",
                        f"\t{_GO}/bufio/bufio.go:110 +0x103",
                        f"net/http.(*persistConn).readLoop({ptr()})",
                        f"\t{_GO}/net/http/transport.go:2277 +0x185",
                        "created by net/http.(*Transport).dialConn in goroutine 212",
                        f"\t{_GO}/net/http/transport.go:1944 +0x174f",
                    ],
                )
            )
        else:
            goroutines.append(
                (
                    gid,
                    "select",
                    [
                        f"net/http.(*persistConn).writeLoop({ptr()})",
                        f"\t{_GO}/net/http/transport.go:2519 +0xe7",
                        "created by net/http.(*Transport).dialConn in goroutine 212",
                        f"\t{_GO}/net/http/transport.go:1945 +0x17a5",
                    ],
                )
            )

    out = [
        "SIGQUIT: quit",
        "PC=0x4756c1 m=0 sigcode=0",
        "",
        "goroutine 0 [idle]:",
        "runtime.futex(0x10f4e48, 0x80, 0x0, 0x0, 0x0, 0x0)",
        f"\t{_GO}/runtime/sys_linux_amd64.s:557 +0x21",
        "runtime.futexsleep(0x7ffd5f0d0c90?, 0x4143b3?, 0x7ffd5f0d0cb0?)",
        f"\t{_GO}/runtime/os_linux.go:69 +0x30",
        "runtime.notesleep(0x10f4e48)",
        f"\t{_GO}/runtime/lock_futex.go:170 +0x87",
        "",
    ]
    for gid, state, frames in goroutines:
        out.append(f"goroutine {gid} [{state}]:")
        out.extend(frames)
        out.append("")
    # SIGQUIT ends with the signalled thread's registers.
    regs = ("rax", "rbx", "rcx", "rdx", "rdi", "rsi", "rbp", "r8", "r9", "r10")
    out.extend(f"{name:<6} 0x{rng.getrandbits(24):x}" for name in regs)
    out += [
        f"rsp    0x7ffd5f0d{rng.getrandbits(16):04x}",
        "rip    0x4756c1",
        "rflags 0x286",
        "cs     0x33",
        "fs     0x0",
        "gs     0x0",
    ]
    return "\n".join(out) + "\n"
