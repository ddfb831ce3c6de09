"""Which parser fits a file: by content first, name second. Unrecognised files are reported."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ingest.parsers import (
    docs,
    gitlog,
    goroutines,
    harness,
    lm_eval,
    nvidia_smi,
    prometheus,
    pyspy,
    routerlog,
    serverlog,
)
from ingest.parsers.types import ParseContext, ParseResult

HEAD_BYTES = 8192


@dataclass(frozen=True)
class Format:
    kind: str
    label: str
    looks_like: Callable[[str, bytes], bool]
    parse: Callable[[bytes, ParseContext], ParseResult]


# Order matters: the most specific content checks first; Markdown (which accepts any .md) last.
FORMATS: tuple[Format, ...] = (
    Format(
        "prometheus_query_range",
        "Prometheus query_range JSON",
        prometheus.looks_like_query_range,
        prometheus.parse_query_range,
    ),
    Format(
        "lm_eval_json",
        "lm-evaluation-harness results",
        lm_eval.looks_like_lm_eval,
        lm_eval.parse_lm_eval,
    ),
    Format("junit_xml", "JUnit XML", harness.looks_like_junit, harness.parse_junit),
    Format(
        "harness_jsonl",
        "harness JSON Lines",
        harness.looks_like_harness_jsonl,
        harness.parse_harness_jsonl,
    ),
    Format(
        "nvidia_smi_csv",
        "nvidia-smi CSV",
        nvidia_smi.looks_like_nvidia_smi,
        nvidia_smi.parse_nvidia_smi,
    ),
    Format(
        "sglang_log",
        "SGLang server log",
        serverlog.looks_like_sglang_log,
        serverlog.parse_sglang_log,
    ),
    Format(
        "sglang_router_log",
        "SGLang router log",
        routerlog.looks_like_router_log,
        routerlog.parse_router_log,
    ),
    Format("pyspy_dump", "py-spy dump", pyspy.looks_like_pyspy, pyspy.parse_pyspy),
    Format(
        "goroutine_dump",
        "Go goroutine dump",
        goroutines.looks_like_goroutines,
        goroutines.parse_goroutines,
    ),
    Format("git_log", "git log output", gitlog.looks_like_git_log_text, gitlog.parse_git_log),
    Format(
        "prometheus_text",
        "Prometheus text / OpenMetrics",
        prometheus.looks_like_exposition,
        prometheus.parse_exposition,
    ),
    Format(
        "markdown_doc",
        "Markdown deployment doc",
        docs.looks_like_markdown_doc,
        docs.parse_markdown_doc,
    ),
)
BY_KIND = {f.kind: f for f in FORMATS}
GIT_REPO = "git_repo"
KIND_PROMETHEUS_TEXT = "prometheus_text"


def sniff(name: str, head: bytes) -> Format | None:
    """The first format whose check accepts this file's name and first bytes, or None."""
    for fmt in FORMATS:
        if fmt.looks_like(name, head):
            return fmt
    return None


# Formats a program appends to its own output: a Go runtime's goroutine dump after the
# service's log lines (SIGQUIT, a fatal error), as `kubectl logs` of the pod shows it. A file
# whose first bytes match nothing is checked again on its last bytes for these only.
TAIL_FORMATS: tuple[Format, ...] = (BY_KIND["goroutine_dump"],)


def sniff_ends(name: str, head: bytes, tail: bytes) -> Format | None:
    """A file's format from its first bytes, else from its last (one of :data:`TAIL_FORMATS`)."""
    return sniff(name, head) or next((f for f in TAIL_FORMATS if f.looks_like(name, tail)), None)


def describe_known() -> str:
    return ", ".join(f.label for f in FORMATS)
