"""The DSV4 wedge story (2026-11-20, PST) built by hand as engine Inputs.

One-minute resolution; the times below are the server's local time (UTC-8) and converted to UTC
as every real input is.
"""

from __future__ import annotations

import datetime as dt

from timeline.correlation.types import (
    Change,
    HarnessRun,
    Inputs,
    LogSpan,
    Marks,
    Request,
    Series,
)

PST = dt.timezone(dt.timedelta(hours=-8))
UTC = dt.UTC

DOC = "doc:DSV4_DEPLOY.md"
CHANGELOG = "changelog:DSV4_DEPLOY.md"


def local(h: int, m: int, s: int = 0) -> dt.datetime:
    """A 2026-11-20 server-local time, as aware UTC."""
    return dt.datetime(2026, 11, 20, h, m, s, tzinfo=PST).astimezone(UTC)


def _commit(n: int) -> str:
    return f"commit:{n:040x}"


def _changes() -> list[Change]:
    ref = iter(range(1000, 2000))
    out: list[Change] = []

    def add(key: str, old: str | None, new: str | None, at: dt.datetime, scope: str, src: str):
        out.append(Change(next(ref), key, old, new, at, scope, (src,)))

    initial_flags = {
        "--model-path": "deepseek-ai/DeepSeek-V4",
        "--tp": "8",
        "--mem-fraction-static": "0.85",
        "--chunked-prefill-size": "8192",
        "--tokenizer-path": "/models/dsv4-tok-v1",
        "--enable-metrics": "true",
    }
    initial_env = {"MODEL_PATH": "deepseek-ai/DeepSeek-V4", "SGLANG_ENABLE_PDL": "1"}
    for key, value in initial_flags.items():
        add(key, None, value, local(7, 30), "flag", f"{DOC}@d0")
        add(key, None, value, local(7, 31), "flag", _commit(1))
    for key, value in initial_env.items():
        add(key, None, value, local(7, 30), "env", f"{DOC}@d0")
        add(key, None, value, local(7, 31), "env", _commit(1))
    add("METRICS_PORT", None, "9400", local(7, 31), "env", _commit(1))
    add("LOG_LEVEL", None, "info", local(7, 31), "env", _commit(1))
    # decoys before last known good
    add("LOG_LEVEL", "info", "debug", local(8, 40), "env", _commit(2))
    add("--mem-fraction-static", "0.85", "0.88", local(9, 30), "flag", _commit(3))
    add("--mem-fraction-static", "0.85", "0.88", local(9, 32), "flag", f"{DOC}@d1")
    add("--mem-fraction-static", "0.85", "0.88", local(9, 30), "flag", f"{CHANGELOG}@d1")
    # after last known good
    add("--tokenizer-path", "/models/dsv4-tok-v1", "/models/dsv4-tok-v2", local(13, 5), "flag",
        _commit(4))  # fmt: skip
    add("SGLANG_SM120_MMA_TARGET_CTAS", None, "512", local(13, 10), "env", f"{DOC}@d2")
    add("SGLANG_SM120_MMA_TARGET_CTAS", None, "512", local(13, 12), "env", _commit(5))
    add("METRICS_PORT", "9400", "9401", local(13, 25), "env", _commit(6))
    add("--chunked-prefill-size", "8192", "16384", local(13, 40), "flag", _commit(7))
    # after first bad: the revert that does not help
    add("--chunked-prefill-size", "16384", "8192", local(16, 30), "flag", _commit(8))
    return out


def _wedged(t: dt.datetime) -> bool:
    return local(15, 40) <= t < local(16, 10) or t >= local(16, 55)


def _series() -> list[Series]:
    minutes = [local(8, 0) + dt.timedelta(minutes=i) for i in range(10 * 60 + 1)]
    ts = tuple(minutes)
    running = tuple(2.0 if _wedged(t) else 12.0 + (i % 7) for i, t in enumerate(minutes))
    out = [
        Series("sglang:num_running_reqs", (("tp_rank", "0"),), ts, running),
        Series("sglang:num_running_reqs", (("source", "server_log"),), ts, running),
    ]
    for rank in ("0", "1"):
        thr = tuple(0.0 if _wedged(t) else 850.0 + (i % 5) for i, t in enumerate(minutes))
        out.append(Series("sglang:gen_throughput", (("tp_rank", rank),), ts, thr))
    for gpu in range(8):
        util = tuple(0.0 if _wedged(t) else 78.0 + gpu for t in minutes)
        out.append(Series("DCGM_FI_DEV_GPU_UTIL", (("gpu", str(gpu)),), ts, util))
    out.append(Series("sglang:num_queue_reqs", (), ts, tuple(0.0 for _ in minutes)))
    return out


def _requests() -> tuple[list[Request], list[LogSpan]]:
    ref = iter(range(5000, 9000))
    requests: list[Request] = []
    t = local(8, 0, 5)
    while t < local(18, 0):
        if not _wedged(t) and not _wedged(t + dt.timedelta(minutes=2)):
            requests.append(
                Request(next(ref), f"ok-{len(requests)}", t, t + dt.timedelta(minutes=2))
            )
        t += dt.timedelta(minutes=3)
    for rid, at in (
        ("9f2c-dropped-1", local(15, 39, 58)),
        ("9f2c-dropped-2", local(15, 40, 3)),
        ("a71e-dropped-3", local(16, 55, 10)),
        ("a71e-dropped-4", local(17, 20, 0)),
    ):
        requests.append(Request(next(ref), rid, at, None))
    spans = [
        LogSpan(9001, local(7, 58), local(16, 10)),
        LogSpan(9002, local(16, 11), local(18, 0)),
    ]
    return requests, spans


def _harness() -> list[HarnessRun]:
    runs = []
    for i in range(21):
        at = local(8, 0) + dt.timedelta(minutes=30 * i, seconds=20)
        runs.append(HarnessRun(7000 + i, at, "stability", "agentic-long-context", "pass", 0.93))
    return runs


def story_inputs(marks: Marks | None = None) -> Inputs:
    """The whole sample incident as engine Inputs."""
    requests, spans = _requests()
    return Inputs(
        changes=tuple(_changes()),
        requests=tuple(requests),
        log_spans=tuple(spans),
        series=tuple(_series()),
        harness=tuple(_harness()),
        marks=marks or Marks(),
    )
