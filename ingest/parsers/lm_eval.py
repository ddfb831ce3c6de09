"""lm-evaluation-harness results JSON: one ``harness_run`` event per task, scored.

Pure: bytes in, :class:`ParseResult` out. lm-eval writes no pass/fail: each task's event has
status ``scored``, its metrics and the model; the run's ``date`` (epoch seconds) is its time.
Version 0.4 keys metrics ``"acc,none"`` (metric, filter) and lists ``higher_is_better`` per
task; 0.3 keys them ``acc`` / ``acc_stderr`` and writes no date (the time given for the file
applies). The headline score is the task's metric, never a count such as ``sample_len``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from typing import Any

from evidence.vocabulary import EventKind, HarnessStatus, Lane

from . import jsontext
from .text import decode, head_text, key_value
from .timestamps import LocalTimeError, TimeError, default_time, from_epoch, parse_iso
from .types import EventRecord, ParseContext, ParseError, ParseResult

KIND_LM_EVAL = "lm_eval_json"

_MODEL_KEYS = ("pretrained", "model", "model_name")  # model_args keys that name the model
_MODEL_ARG = re.compile("|".join(_MODEL_KEYS))
_LM_METRIC_RE = re.compile(r'"[A-Za-z0-9_]+(?:_stderr)?,[A-Za-z0-9_-]+"\s*:')


def looks_like_lm_eval(name: str, head: bytes) -> bool:
    """True for an lm-evaluation-harness results JSON: 0.4 (``results`` with ``acc,none``
    keys) or 0.3 (``results`` with ``acc`` / ``acc_stderr`` and ``versions``)."""
    text = head_text(head).lstrip(" \t\r\n")
    if not text.startswith("{") or '"results"' not in text:
        return False
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    if base.startswith("results") or _LM_METRIC_RE.search(text) is not None:
        return True
    if '"versions"' not in text:
        return False
    # 0.3: a standard error beside a metric, or (perplexity-only and em/f1 tasks write none)
    # results -> task -> metric: number.
    return _LM03_METRIC_RE.search(text) is not None or _LM03_SHAPE_RE.search(text) is not None


# Metrics that are counts or descriptions, never a task's score.
_NOT_SCORES = frozenset({"sample_len", "sample_count", "n-samples", "num_samples"})
_LM03_METRIC_RE = re.compile(r'"[A-Za-z0-9_]+_stderr"\s*:')
_LM03_SHAPE_RE = re.compile(
    r'"results"\s*:\s*\{\s*"[^"]+"\s*:\s*\{\s*"[A-Za-z0-9_]+"\s*:\s*-?(?:\d|NaN|Infinity)'
)


# Metrics where lower is better, for files that do not say (0.3 writes no higher_is_better).
_LOWER_IS_BETTER = frozenset(
    {"ppl", "perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte"}
)


def _headline(
    task: str, metrics: dict[str, float | None], higher_is_better: Any
) -> tuple[str, float, bool | None] | None:
    """The task's own metric and whether higher is better: the first one lm-eval lists in
    ``higher_is_better`` for the task (0.4: ``acc`` names ``"acc,none"``), else the first
    score that is not a count (``sample_len``) or a standard error, one where higher is better
    before a perplexity (0.3's lambada lists ``ppl`` before ``acc``)."""
    candidates = [(k, v) for k, v in metrics.items() if v is not None]
    declared = higher_is_better.get(task) if isinstance(higher_is_better, dict) else None
    if isinstance(declared, dict):
        for metric, better in declared.items():
            for key, value in candidates:
                if key == metric or key.split(",", 1)[0] == metric:
                    return key, value, better if isinstance(better, bool) else None
    scores = [
        (key, value)
        for key, value in candidates
        if key.split(",", 1)[0] not in _NOT_SCORES and not key.split(",", 1)[0].endswith("_stderr")
    ]
    for key, value in sorted(scores, key=lambda kv: kv[0].split(",", 1)[0] in _LOWER_IS_BETTER):
        return key, value, key.split(",", 1)[0] not in _LOWER_IS_BETTER
    return None


def parse_lm_eval(data: bytes, ctx: ParseContext) -> ParseResult:
    """lm-eval results JSON: one ``scored`` event per task in ``results``, at ``date``."""
    text = decode(data, ctx.name)
    try:
        doc = jsontext.loads(text, ctx.name)
    except json.JSONDecodeError as exc:
        raise ParseError(ctx.name, exc.lineno, f"invalid JSON: {exc.msg}") from None
    if not isinstance(doc, dict):
        raise ParseError(ctx.name, 1, "expected a JSON object with a 'results' mapping")
    results = doc.get("results")
    if not isinstance(results, dict):
        raise ParseError(
            ctx.name, 0, "expected a 'results' object mapping task names to their metrics"
        )
    at = _lm_eval_time(doc.get("date"), ctx)
    model = _lm_eval_model(doc)
    result = ParseResult(kind=KIND_LM_EVAL)
    for task, values in results.items():
        if not isinstance(values, dict):
            raise ParseError(
                ctx.name, 0, f"results.{task} must be an object of metrics, found {values!r}"
            )
        metrics = {
            str(metric): (float(v) if math.isfinite(v) else None)
            for metric, v in values.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        alias = values.get("alias")
        headline = _headline(str(task), metrics, doc.get("higher_is_better"))
        title = f"lm-eval {task} scored"
        if headline is not None:
            title += f": {headline[0]} {headline[1]:.4g}"
            if headline[2] is False:
                title += " (lower is better)"
        result.events.append(
            EventRecord(
                kind=EventKind.HARNESS_RUN,
                lane=Lane.HARNESS,
                at=at,
                key=f"lm-eval/{model}/{task}@{at.isoformat()}",
                title=title,
                attrs={
                    "suite": "lm-eval",
                    "case": str(task),
                    "task": str(task),
                    "alias": alias if isinstance(alias, str) else "",
                    "status": HarnessStatus.SCORED,
                    "metrics": metrics,
                    "model": model,
                    "score": headline[1] if headline is not None else None,
                    "score_metric": headline[0] if headline is not None else "",
                    "higher_is_better": headline[2] if headline is not None else None,
                    "threshold": None,
                },
            )
        )
    return result


def _lm_eval_time(value: Any, ctx: ParseContext) -> dt.datetime:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            try:
                return parse_iso(value, ctx.tz)
            except LocalTimeError as exc:
                raise ParseError(ctx.name, 0, f"'date': {exc}") from None
            except TimeError:
                raise ParseError(
                    ctx.name, 0, f"'date' is {value!r}: expected epoch seconds such as 1763668800.5"
                ) from None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        try:
            return from_epoch(float(value), "s")
        except TimeError:
            raise ParseError(
                ctx.name, 0, f"'date' {value!r} is out of range: expected epoch seconds"
            ) from None
    default = default_time(ctx) if value is None else None
    if default is not None:
        return default
    raise ParseError(
        ctx.name,
        0,
        "expected 'date' as epoch seconds (lm-eval 0.4 writes it), or a default time: lm-eval "
        "0.3 results carry no date, so give the run's time (--at on the command line) and "
        "ingest the file again",
    )


def _lm_eval_model(doc: dict[str, Any]) -> str:
    config = doc.get("config")
    if isinstance(config, dict):
        args = config.get("model_args")
        if isinstance(args, str):
            for part in args.split(","):
                pair = key_value(part, _MODEL_ARG, spaced=True)
                if pair is not None and pair[1].strip():
                    return pair[1].strip()
        if isinstance(args, dict):
            for key in _MODEL_KEYS:
                if isinstance(args.get(key), str):
                    return str(args[key])
    name = doc.get("model_name")
    if isinstance(name, str) and name:
        return name
    if isinstance(config, dict) and isinstance(config.get("model"), str):
        return str(config["model"])
    return ""
