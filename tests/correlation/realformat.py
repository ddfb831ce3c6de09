"""A simulated incident written as the files a team really has, and read back through the real
parsers: the SGLang server log (``server_args=ServerArgs(...)`` and ready lines, requests,
batch lines, crashes) in server-local time, the DSV4 deployment doc with its dated changelog,
Prometheus text with millisecond timestamps and harness JSON Lines.

:func:`render` writes the files; :func:`parse_inputs` sniffs and parses each one with the
ingest parsers and turns the records into engine inputs the way the ingest stores them.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from evidence.vocabulary import EventKind, SymptomKind
from ingest import sniff
from ingest.parsers.series import mark_origins
from ingest.parsers.types import ParseContext, ParseResult
from tests.correlation.livestory import BASE_ARGS, BASE_ENV, World, metric_samples
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

_CRASH_LINES = {
    SymptomKind.CRASH: [
        "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2311, '
        "in run_scheduler_process",
        "    scheduler.event_loop_overlap()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ],
    SymptomKind.OOM: [
        "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", '
        "line 1702, in forward",
        "    return self.forward_extend(forward_batch)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a "
        "total capacity of 79.10 GiB of which 1.05 GiB is free.",
    ],
    SymptomKind.WATCHDOG_TIMEOUT: [
        "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
    ],
}


def _stamp(t: dt.datetime, tz: dt.tzinfo, rank: bool = False) -> str:
    local = t.astimezone(tz)
    return "[" + local.strftime("%Y-%m-%d %H:%M:%S") + (" TP0]" if rank else "]")


def _args_line(args: dict[str, object]) -> str:
    return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


def render_log(w: World) -> str:
    """The server log: every start, its requests and batch lines, and the crashes."""
    tz = w.scenario.tz
    lines: list[tuple[dt.datetime, int, str]] = []
    for n, (at, args, _env, logged) in enumerate(w.starts):
        if logged:
            lines.append((at, 0, f"{_stamp(at, tz)} {_args_line(args)}"))
        else:
            lines.append((at, 0, f"{_stamp(at, tz)} Init torch distributed begin."))
        lines.append((at, 1, f"INFO:     Started server process [{4100 + n}]"))
        ready = at + dt.timedelta(seconds=30)
        lines.append((ready, 2, f"{_stamp(ready, tz)} The server is fired up and ready to roll!"))
    for rid, received, finished in w.requests:
        text = "<|User|>Summarise the build log and say what failed.<|Assistant|>"
        lines.append(
            (
                received,
                3,
                f"{_stamp(received, tz)} Receive: obj=GenerateReqInput(rid='{rid}', "
                f"text='{text}', sampling_params={{'max_new_tokens': 1024}}, stream=True)",
            )
        )
        if finished is not None:
            lines.append(
                (
                    finished,
                    4,
                    f"{_stamp(finished, tz)} Finish: obj=GenerateReqInput(rid='{rid}'), "
                    "out={'text': 'The build failed in the link step.', 'meta_info': {}}",
                )
            )
    for t, running, throughput in metric_samples(w):
        lines.append(
            (
                t,
                5,
                f"{_stamp(t, tz, rank=True)} Decode batch. #running-req: {running:g}, "
                f"#token: 40960, token usage: 0.41, cuda graph: True, gen throughput (token/s): "
                f"{throughput:.2f}, #queue-req: 0, ",
            )
        )
    for at, kind in w.crashes:
        crash = _CRASH_LINES[kind]
        lines.append((at, 6, f"{_stamp(at, tz, rank=True)} {crash[0]}\n" + "\n".join(crash[1:])))
        lines.append(
            (
                at,
                7,
                f"{_stamp(at, tz)} Received sigquit from a child process. It usually means the "
                "child failed.",
            )
        )
    lines.sort(key=lambda x: (x[0], x[1]))
    return "\n".join(text.rstrip("\n") for _, _, text in lines) + "\n"


def _spelled(key: str, at: dt.datetime) -> str:
    """How a doc writes a setting: usually the whole flag, sometimes an argparse prefix of it
    (``--chunked-prefill``) when no other field starts the same way, as people type them."""
    if key.isupper():
        return key
    words = key.split("_")
    short = "_".join(words[:-1])
    unique = len(words) > 2 and [f for f in BASE_ARGS if f.startswith(short)] == [key]
    if unique and int(at.timestamp()) % 3 == 0:
        return "--" + short.replace("_", "-")
    return "--" + key.replace("_", "-")


def _item_value(key: str, value: object, at: dt.datetime) -> str:
    flag = _spelled(key, at)
    if value is None or value is False:
        return f"remove {flag}"
    if value is True:
        return f"set {flag}"
    return f"set {flag}={value}"


def render_doc(w: World) -> str:
    """The deployment doc: the launch it started with, and a changelog of every record."""
    tz = w.scenario.tz
    flags = [f"  --{k.replace('_', '-')} {v}" for k, v in BASE_ARGS.items() if k in _DOC_FLAGS]
    env = [f"export {k}={v}" for k, v in BASE_ENV.items()]
    items = []
    for at, key, _old, new in w.records:
        stamp = at.astimezone(tz).strftime("%Y-%m-%d %H:%M")
        items.append(f"- {stamp} {_item_value(key, new, at)}")
    return "\n".join(
        [
            "# DSV4 deployment (SGLang)",
            "",
            "## Environment",
            "",
            "```bash",
            *env,
            "```",
            "",
            "## Launch",
            "",
            "```bash",
            "python3 -m sglang.launch_server \\",
            " \\\n".join(flags),
            "```",
            "",
            "## Changelog",
            "",
            *items,
            "",
        ]
    )


_DOC_FLAGS = ("model_path", "tp_size", "mem_fraction_static", "chunked_prefill_size")


def render_metrics(w: World) -> str:
    out = ["# TYPE sglang:num_running_reqs gauge", "# TYPE sglang:gen_throughput gauge"]
    for t, running, throughput in metric_samples(w):
        ms = round(t.timestamp() * 1000)
        out.append(f'sglang:num_running_reqs{{model_name="dsv4",tp_rank="0"}} {running:g} {ms}')
        out.append(f'sglang:gen_throughput{{model_name="dsv4",tp_rank="0"}} {throughput:g} {ms}')
    return "\n".join(out) + "\n"


def render_harness(w: World) -> str:
    rows = [
        {
            "ts": t.isoformat(),
            "suite": "stability",
            "case": "agentic",
            "status": "pass",
            "score": 0.93,
            "threshold": 0.9,
        }
        for t in w.harness
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


def render(w: World) -> dict[str, bytes]:
    """The incident's files by name."""
    s = w.scenario
    files = {"docs/DSV4_DEPLOY.md": render_doc(w)}
    if s.logs:
        files["logs/server.log"] = render_log(w)
    if s.metrics:
        files["metrics/sglang.prom"] = render_metrics(w)
    if s.harness:
        files["harness/stability.jsonl"] = render_harness(w)
    return {name: text.encode() for name, text in files.items()}


# --- read back ------------------------------------------------------------------------------------


def parse_files(files: dict[str, bytes], tz: dt.tzinfo) -> dict[str, ParseResult]:
    out = {}
    for name, data in files.items():
        fmt = sniff.sniff(name.rsplit("/", 1)[-1], data[: sniff.HEAD_BYTES])
        if fmt is None:
            raise ValueError(f"{name}: no parser recognises it")
        ctx = ParseContext(name=name, tz=tz)
        result = fmt.parse(data, ctx)
        mark_origins(result, ctx)
        out[name] = result
    return out


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def parse_inputs(files: dict[str, bytes], tz: dt.tzinfo) -> Inputs:
    """The files through the real parsers, as the engine's inputs."""
    refs = iter(range(1, 10**9))
    changes: list[Change] = []
    requests: list[Request] = []
    spans: list[LogSpan] = []
    harness: list[HarnessRun] = []
    starts: list[ServerStart] = []
    errors: list[LogSymptom] = []
    series: list[Series] = []
    for name, result in parse_files(files, tz).items():
        for c in result.config_changes:
            changes.append(
                Change(next(refs), c.key, c.old, c.new, c.at, c.scope, (f"{c.source}:{c.ref}",))
            )
        for e in sorted(result.events, key=lambda e: e.at):
            if e.kind == EventKind.REQUEST:
                requests.append(
                    Request(next(refs), str(e.attrs.get("rid", e.key)), e.at, e.ends_at)
                )
            elif e.kind == EventKind.LOG_SPAN:
                spans.append(LogSpan(next(refs), e.at, e.ends_at or e.at))
            elif e.kind == EventKind.HARNESS_RUN:
                harness.append(
                    HarnessRun(
                        next(refs),
                        e.at,
                        str(e.attrs.get("suite", "")),
                        str(e.attrs.get("case", "")),
                        str(e.attrs.get("status", "")),
                        e.attrs.get("score"),
                    )
                )
            elif e.kind == EventKind.SERVER_START:
                line = e.attrs.get("line")
                starts.append(
                    ServerStart(
                        next(refs),
                        e.at,
                        line if isinstance(line, int) else e.line,
                        _str_map(e.attrs.get("server_args")),
                        _str_map(e.attrs.get("env")),
                        ends_at=e.ends_at,
                        where=name.rsplit("/", 1)[-1],
                    )
                )
            elif e.kind == EventKind.LOG_ERROR and e.attrs.get("symptom") in set(SymptomKind):
                errors.append(
                    LogSymptom(next(refs), e.at, SymptomKind(e.attrs["symptom"]), e.title)
                )
        for block in result.samples:
            ts = tuple(dt.datetime.fromtimestamp(ms / 1000, tz=UTC) for ms in block.ts_ms)
            series.append(Series(block.key.name, block.key.labels, ts, tuple(block.values)))
    return Inputs(
        changes=tuple(changes),
        requests=tuple(requests),
        log_spans=tuple(spans),
        series=tuple(series),
        harness=tuple(harness),
        starts=tuple(starts),
        errors=tuple(errors),
    )
