"""Server launch commands: which words start a model server, and the flags they pass it.

Pure. Recognises ``python -m sglang.launch_server ...`` (and vLLM, ``launch_server.py``),
``vllm serve MODEL ...`` / ``sglang serve ...`` and programs that are servers themselves
(``text-generation-launcher``, ``trtllm-serve``, ...). The shell reader (:mod:`.shell`) asks it
about every command of a script or doc block; :func:`launch_flags` takes words already split.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?|pypy3?")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")

# Programs that are servers themselves: every `--flag` after the program name is a setting.
_SERVER_PROGRAMS = frozenset(
    {"text-generation-launcher", "trtllm-serve", "llama-server", "tritonserver"}
)
# `vllm serve MODEL --flags`, `sglang serve --flags`.
_SERVE_SUBCOMMANDS = frozenset({"vllm", "sglang"})


def launch_flags(words: Sequence[str]) -> list[tuple[str, str]] | None:
    """The ``(flag, value)`` pairs of a server launch command, or None if it launches no server.

    ``words`` are already split (e.g. a Kubernetes ``command`` + ``args`` list). A flag without
    a value gets ``"true"``; several values after one flag are joined with spaces.
    """
    tagged = [(w, 0) for w in words]
    found = server_args(tagged)
    if found is None:
        return None
    return [(key, value) for key, value, _ in flag_values(found)]


def server_args(words: Sequence[tuple[str, int]]) -> list[tuple[str, int]] | None:
    """The words after the server program in a command, or None if it launches no server."""
    for i, (word, _) in enumerate(words):
        base = posixpath.basename(word)
        if _PYTHON.fullmatch(base):
            return _python_server_args(words, i)
        nxt = words[i + 1][0] if i + 1 < len(words) else ""
        if base in _SERVE_SUBCOMMANDS and nxt == "serve":
            return _skip_positionals(list(words[i + 2 :]))
        if base in _SERVER_PROGRAMS:
            return _skip_positionals(list(words[i + 1 :]))
    return None


def _python_server_args(words: Sequence[tuple[str, int]], i: int) -> list[tuple[str, int]] | None:
    j = i + 1
    # Interpreter options (`-u`, `-O`, `-X dev`) come before `-m`.
    while j < len(words) and words[j][0].startswith("-") and words[j][0] != "-m":
        j += 2 if words[j][0] in ("-X", "-W") else 1
    if j >= len(words):
        return None
    if words[j][0] == "-m" and j + 1 < len(words):
        module = words[j + 1][0]
        if module.split(".")[0] in ("sglang", "vllm") or "launch_server" in module:
            return list(words[j + 2 :])
        return None
    if posixpath.basename(words[j][0]) in ("launch_server.py", "api_server.py"):
        return list(words[j + 1 :])
    return None


def _skip_positionals(words: list[tuple[str, int]]) -> list[tuple[str, int]]:
    # `vllm serve MODEL --flags`: the model is positional; settings start at the first flag.
    for k, (word, _) in enumerate(words):
        if word.startswith("-"):
            return words[k:]
    return []


def _is_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and not _NUMBER.fullmatch(word)


def flag_values(words: Sequence[tuple[str, int]]) -> list[tuple[str, str, int]]:
    """``--flag value``, ``--flag=value`` and bare ``--flag`` (value "true"), in order."""
    out: list[tuple[str, str, int]] = []
    k = 0
    while k < len(words):
        word, line = words[k]
        k += 1
        if not _is_flag(word):
            continue  # a stray positional argument
        if word.startswith("--") and "=" in word:
            key, value = word.split("=", 1)
            out.append((key, value, line))
            continue
        values: list[str] = []
        while k < len(words) and not _is_flag(words[k][0]):
            values.append(words[k][0])
            k += 1
        out.append((word, " ".join(values) if values else "true", line))
    return out
