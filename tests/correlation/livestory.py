"""Incidents built the way real ones happen: deploys at restarts, hand-launched flags, decoys
that ran cleanly, fix attempts, reverts and restores, crashes, DST nights.

A :class:`Scenario` says what the operators did (each restart, what it changed, whether a doc
recorded it) and which setting is the culprit; :func:`simulate` plays it out minute by minute
into a :class:`World` (the starts the log shows, the requests, the wedges and crashes the
culprit causes, the records the docs hold), which ``realformat`` writes as real files and
:func:`world_inputs` turns straight into engine inputs.
"""

from __future__ import annotations

import datetime as dt
import random
import zoneinfo
from dataclasses import dataclass, field, replace

from evidence.vocabulary import SymptomKind
from timeline.correlation.types import (
    Change,
    HarnessRun,
    Inputs,
    LogSpan,
    LogSymptom,
    Request,
    Series,
    ServerStart,
)

UTC = dt.UTC
CRASH_KINDS = (SymptomKind.CRASH, SymptomKind.OOM, SymptomKind.WATCHDOG_TIMEOUT)

BASE_ARGS: dict[str, object] = {
    "model_path": "deepseek-ai/DeepSeek-V4",
    "tokenizer_path": "/models/dsv4-tok-v1",
    "host": "0.0.0.0",
    "port": 30000,
    "tp_size": 8,
    "mem_fraction_static": 0.85,
    "max_running_requests": None,
    "max_prefill_tokens": 16384,
    "chunked_prefill_size": 8192,
    "enable_mixed_chunk": False,
    "schedule_policy": "fcfs",
    "schedule_conservativeness": 1.0,
    "cuda_graph_max_bs": 160,
    "disable_cuda_graph": False,
    "disable_overlap_schedule": False,
    "num_continuous_decode_steps": 1,
    "stream_interval": 1,
    "attention_backend": None,
    "enable_torch_compile": False,
    "log_level": "info",
    "log_requests": True,
    "enable_metrics": True,
    "watchdog_timeout": 300.0,
    "decode_log_interval": 40,
    "kv_cache_dtype": "auto",
}
BASE_ENV = {"SGLANG_ENABLE_PDL": "1", "SGLANG_ENABLE_JIT_DEEPGEMM": "true"}

# Settings that really have wedged, dropped or crashed SGLang servers, with a bad value.
CULPRITS: list[tuple[str, object]] = [
    ("chunked_prefill_size", 16384),
    ("enable_mixed_chunk", True),
    ("SGLANG_SM120_MMA_TARGET_CTAS", "512"),
    ("cuda_graph_max_bs", 512),
    ("disable_overlap_schedule", True),
    ("num_continuous_decode_steps", 4),
    ("max_running_requests", 48),
    ("enable_torch_compile", True),
    ("attention_backend", "flashinfer"),
    ("kv_cache_dtype", "fp8_e5m2"),
]
OOM_CULPRITS: list[tuple[str, object]] = [
    ("mem_fraction_static", 0.95),
    ("cuda_graph_max_bs", 512),
    ("chunked_prefill_size", 32768),
    ("max_prefill_tokens", 65536),
]
# Harmless changes, many with scheduling-sounding names.
DECOYS: list[tuple[str, object]] = [
    ("schedule_policy", "lpm"),
    ("schedule_conservativeness", 1.3),
    ("stream_interval", 8),
    ("log_level", "debug"),
    ("tokenizer_path", "/models/dsv4-tok-v2"),
    ("decode_log_interval", 10),
    ("watchdog_timeout", 600.0),
    ("SGLANG_SCHEDULER_RECV_SKIP", "4"),
    ("SGLANG_LOG_LEVEL", "debug"),
    ("max_prefill_tokens", 32768),
    ("port", 30001),
]


@dataclass(frozen=True)
class Edit:
    """One setting changed at a restart. ``record``: "doc" (a doc records it before the restart),
    "drift" (nobody records it: passed by hand), "late" (recorded after it went live)."""

    key: str
    value: object
    record: str = "doc"
    lead: dt.timedelta | None = None  # how long before the restart the doc recorded it


@dataclass(frozen=True)
class Plan:
    """One planned start: ``at`` (UTC), serving for ``hours``; ``logged`` False when the log
    holds no ServerArgs line for it; ``load`` False for a quiet (unused) server."""

    at: dt.datetime
    hours: float
    edits: tuple[Edit, ...] = ()
    logged: bool = True
    load: bool = True


@dataclass(frozen=True)
class Scenario:
    name: str
    tz: dt.tzinfo
    plans: tuple[Plan, ...]
    culprit: str
    bad: object
    symptom: SymptomKind = SymptomKind.WEDGE
    trigger: dt.timedelta = dt.timedelta(minutes=40)  # load under the culprit before it bites
    # Recorded changes that never went live: (at, key, value).
    unrun: tuple[tuple[dt.datetime, str, object], ...] = ()
    metrics: bool = True
    logs: bool = True
    harness: bool = True
    seed: int = 0


@dataclass
class World:
    """What the evidence shows, as plain values (UTC)."""

    scenario: Scenario
    starts: list[tuple[dt.datetime, dict[str, object], dict[str, str], bool]] = field(
        default_factory=list
    )  # (at, args, env, logged)
    ends: list[dt.datetime] = field(default_factory=list)  # when each start stopped serving
    requests: list[tuple[str, dt.datetime, dt.datetime | None]] = field(default_factory=list)
    busy: list[tuple[dt.datetime, dt.datetime, bool]] = field(default_factory=list)  # wedged?
    crashes: list[tuple[dt.datetime, SymptomKind]] = field(default_factory=list)
    records: list[tuple[dt.datetime, str, object, object]] = field(default_factory=list)
    harness: list[dt.datetime] = field(default_factory=list)
    end: dt.datetime = dt.datetime(2000, 1, 1, tzinfo=UTC)


def _bites(args: dict[str, object], env: dict[str, str], s: Scenario) -> bool:
    value = env.get(s.culprit) if s.culprit.isupper() else args.get(s.culprit)
    return value == s.bad


def simulate(s: Scenario) -> World:
    """Play the scenario out: every start, its requests and metrics, and the symptoms the
    culprit causes once its server has carried ``trigger`` of load."""
    rng = random.Random(s.seed)
    w = World(s)
    args, env = dict(BASE_ARGS), dict(BASE_ENV)
    for n, plan in enumerate(s.plans):
        for edit in plan.edits:
            target: dict[str, object] = env if edit.key.isupper() else args  # type: ignore[assignment]
            before = target.get(edit.key)
            if edit.value is None and target is env:
                target.pop(edit.key, None)
            else:
                target[edit.key] = edit.value if target is args else str(edit.value)
            # ServerArgs logs every field: a reverted flag shows its default (None), not nothing.
            if edit.record == "doc":
                lead = edit.lead or dt.timedelta(minutes=rng.randint(5, 150))
                if n:  # recorded after the start before: the doc leads the next restart only
                    lead = min(lead, (plan.at - s.plans[n - 1].at) * 0.8)
                w.records.append((plan.at - lead, edit.key, before, edit.value))
            elif edit.record == "late":
                w.records.append(
                    (
                        plan.at + dt.timedelta(minutes=rng.randint(20, 90)),
                        edit.key,
                        before,
                        edit.value,
                    )
                )
        stop = plan.at + dt.timedelta(hours=plan.hours)
        if n + 1 < len(s.plans):
            stop = min(stop, s.plans[n + 1].at - dt.timedelta(minutes=1))
        t = plan.at
        while t < stop:
            t = _serve(w, rng, s, plan, t, stop, dict(args), dict(env))
    for at, key, value in s.unrun:
        w.records.append((at, key, None, value))
    # The doc's first version: the environment the servers were launched with.
    first = s.plans[0].at - dt.timedelta(hours=1)
    w.records[:0] = [(first, key, None, value) for key, value in BASE_ENV.items()]
    w.records.sort(key=lambda r: r[0])
    w.end = max(w.ends) if w.ends else s.plans[-1].at
    if s.harness:
        t = s.plans[0].at + dt.timedelta(minutes=20)
        while t < w.end:
            w.harness.append(t)
            t += dt.timedelta(minutes=30)
    return w


def _serve(
    w: World,
    rng: random.Random,
    s: Scenario,
    plan: Plan,
    start: dt.datetime,
    stop: dt.datetime,
    args: dict[str, object],
    env: dict[str, str],
) -> dt.datetime:
    """One server start from ``start``; returns when the next one (a crash restart) begins."""
    logged = plan.logged if start == plan.at else True
    w.starts.append((start, args, env, logged))
    ready = start + dt.timedelta(seconds=rng.randint(30, 90))
    bad_at = ready + s.trigger if plan.load and _bites(args, env, s) else None
    crash = s.symptom in CRASH_KINDS
    end = stop
    if bad_at is not None and crash and bad_at < stop:
        end = bad_at
    t = ready + dt.timedelta(seconds=rng.randint(5, 40))
    while plan.load and t < end - dt.timedelta(seconds=5):
        wedged = bad_at is not None and not crash and t >= bad_at
        done = None if wedged else t + dt.timedelta(seconds=rng.randint(20, 100))
        if done is not None and done > end:
            done = None  # cut off by the restart
        w.requests.append((f"{rng.getrandbits(64):016x}", t, done))
        t += dt.timedelta(seconds=rng.randint(60, 150))
    if plan.load:
        wedge_from = bad_at if bad_at is not None and not crash and bad_at < end else end
        if wedge_from > ready:
            w.busy.append((ready, wedge_from, False))
        if wedge_from < end:
            w.busy.append((wedge_from, end, True))
    w.ends.append(end)
    if end < stop:
        w.crashes.append((end, s.symptom))
        return end + dt.timedelta(minutes=rng.randint(2, 6))
    return stop


# --- straight to engine inputs (what ingest would store) ----------------------------------------


def _repr(value: object) -> str:
    return repr(value)


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else None
    return str(value)


def _flag(key: str) -> str:
    return key if key.isupper() else "--" + key.replace("_", "-")


def world_inputs(w: World) -> Inputs:
    """The world as the engine's inputs, the way the ingest stores it."""
    s = w.scenario
    refs = iter(range(1, 10**9))
    changes = tuple(
        Change(
            next(refs),
            _flag(key),
            _text(old),
            _text(new),
            at,
            "env" if key.isupper() else "flag",
            (f"changelog:DSV4_DEPLOY.md@{i}",),
        )
        for i, (at, key, old, new) in enumerate(w.records)
    )
    starts: list[ServerStart] = []
    errors: list[LogSymptom] = []
    requests: list[Request] = []
    spans: list[LogSpan] = []
    if s.logs:
        for n, (at, args, _env, logged) in enumerate(w.starts):
            server_args = {k: _repr(v) for k, v in args.items()} if logged else {}
            nxt = w.starts[n + 1][0] if n + 1 < len(w.starts) else None
            ends = nxt if nxt is not None else w.ends[n]
            starts.append(
                ServerStart(
                    next(refs), at, 1 + 100 * n, server_args, ends_at=ends, where="server.log"
                )
            )
        errors = [
            LogSymptom(next(refs), at, kind, f"{kind} in the scheduler") for at, kind in w.crashes
        ]
        requests = [Request(next(refs), rid, a, b) for rid, a, b in w.requests]
        spans = [LogSpan(next(refs), s.plans[0].at, w.end)]
    series: tuple[Series, ...] = ()
    if s.metrics:
        series = _metrics(w)
    harness = tuple(
        HarnessRun(next(refs), t, "stability", "agentic", "pass", 0.93) for t in w.harness
    )
    return Inputs(
        changes=changes,
        requests=tuple(requests),
        log_spans=tuple(spans),
        series=series,
        harness=harness,
        starts=tuple(starts),
        errors=tuple(errors),
    )


def metric_samples(w: World) -> list[tuple[dt.datetime, float, float]]:
    """One (time, running requests, generation throughput) sample a minute while serving."""
    out = []
    for a, b, wedged in w.busy:
        t = a.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        while t < b:
            minute = int(t.timestamp() // 60)
            out.append(
                (t, 2.0 if wedged else 10.0 + minute % 5, 0.0 if wedged else 850.0 + minute % 7)
            )
            t += dt.timedelta(minutes=1)
    return out


def _metrics(w: World) -> tuple[Series, ...]:
    samples = metric_samples(w)
    ts = tuple(t for t, _, _ in samples)
    return (
        Series("sglang:num_running_reqs", (("tp_rank", "0"),), ts, tuple(r for _, r, _ in samples)),
        Series("sglang:gen_throughput", (("tp_rank", "0"),), ts, tuple(g for _, _, g in samples)),
    )


def zone(name: str) -> dt.tzinfo:
    return zoneinfo.ZoneInfo(name)


def without(s: Scenario, **changes: object) -> Scenario:
    return replace(s, **changes)  # type: ignore[arg-type]
