"""How relevant a setting is to a class of symptom, judged from the words in its key.

A key is split into lower-case words (``SGLANG_SM120_MMA_TARGET_CTAS`` -> sglang, sm120, mma,
target, ctas; ``--chunked-prefill-size`` -> chunked, prefill, size). Words that name the
machinery a symptom lives in make the key highly relevant; words that name plumbing (logging,
ports, paths, tokenizer) make it low; anything else is neutral. A high word wins over a low one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evidence.vocabulary import SymptomKind

HIGH = "high"
NEUTRAL = "neutral"
LOW = "low"

# Dropped requests and wedges live in the scheduler and the GPU launch path.
_STALL_WORDS = frozenset(
    {
        "sched",
        "schedule",
        "scheduler",
        "scheduling",
        "batch",
        "batching",
        "bs",
        "graph",
        "graphs",
        "kernel",
        "kernels",
        "launch",
        "cta",
        "ctas",
        "mma",
        "pdl",
        "overlap",
        "chunked",
        "prefill",
        "running",
        "stream",
        "streams",
        "decode",
        "continuous",
        "sm120",
        "sm100",
        "sm90",
        "nccl",
        "watchdog",
        "timeout",
    }
)
_STALL_LOW = frozenset(
    {
        "log",
        "logs",
        "logging",
        "level",
        "verbose",
        "verbosity",
        "port",
        "host",
        "path",
        "dir",
        "file",
        "tokenizer",
        "metrics",
        "url",
        "name",
        "served",
        "api",
        "key",
    }
)
# Wrong answers with a healthy server point at the numerics and the model, not the scheduler.
_QUALITY_WORDS = frozenset(
    {
        "fp8",
        "fp4",
        "quant",
        "quantization",
        "dtype",
        "precision",
        "model",
        "tokenizer",
        "template",
        "kv",
        "attention",
        "sampling",
        "temperature",
        "gemm",
        "moe",
        "revision",
    }
)
_QUALITY_LOW = frozenset(
    {"log", "logs", "logging", "level", "port", "host", "metrics", "url", "api"}
)

# Out of memory: what sizes the KV cache, the batches and the CUDA graphs.
_MEMORY_WORDS = frozenset(
    {
        "mem",
        "memory",
        "fraction",
        "static",
        "kv",
        "cache",
        "tokens",
        "total",
        "graph",
        "bs",
        "batch",
        "chunked",
        "prefill",
        "running",
        "pool",
    }
)

_VOCABULARY: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    SymptomKind.DROPPED_REQUEST: (_STALL_WORDS, _STALL_LOW),
    SymptomKind.WEDGE: (_STALL_WORDS, _STALL_LOW),
    SymptomKind.HARNESS_FAILURE: (_QUALITY_WORDS, _QUALITY_LOW),
    SymptomKind.STALL: (_STALL_WORDS, _STALL_LOW),
    SymptomKind.CRASH: (_STALL_WORDS, _STALL_LOW),
    SymptomKind.WATCHDOG_TIMEOUT: (_STALL_WORDS, _STALL_LOW),
    SymptomKind.CRASH_LOOP: (_STALL_WORDS, _STALL_LOW),
    SymptomKind.OOM: (_MEMORY_WORDS, _STALL_LOW),
}

_SPLIT = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Relevance:
    """The verdict on one key: level (high, neutral, low) and the words that decided it."""

    level: str
    words: tuple[str, ...]


def word_lists() -> dict[str, dict[str, list[str]]]:
    """The words that make a key high or low relevance, per symptom kind (sorted: they are part
    of the versioned weights)."""
    return {
        str(kind): {HIGH: sorted(high), LOW: sorted(low)}
        for kind, (high, low) in sorted(_VOCABULARY.items())
    }


def key_words(key: str) -> tuple[str, ...]:
    """The lower-case words of a setting key, in order."""
    return tuple(word for word in _SPLIT.split(key.lower()) if word)


def relevance(key: str, symptom_kind: str) -> Relevance:
    """How relevant ``key`` is to symptoms of ``symptom_kind`` (unknown kinds: as for wedges)."""
    high, low = _VOCABULARY.get(symptom_kind, _VOCABULARY[SymptomKind.WEDGE])
    words = key_words(key)
    matched = tuple(w for w in words if w in high)
    if matched:
        return Relevance(HIGH, matched)
    matched = tuple(w for w in words if w in low)
    if matched:
        return Relevance(LOW, matched)
    return Relevance(NEUTRAL, ())
