"""Setting keys and values as the server sees them.

Docs and commits spell a setting as a launch flag (``--chunked-prefill-size``, ``--tp``,
``--mem-frac``), an environment variable (``SGLANG_ENABLE_PDL``) or a table row; the server's
start-up line logs ``ServerArgs`` fields (``chunked_prefill_size=8192``). Here a key is mapped to
the field it sets (argparse accepts any unambiguous prefix of a flag, so ``--mem-frac`` is
``mem_fraction_static`` when no other field starts with ``mem_frac``), and values are compared
by what they mean rather than how they are written: ``8192``, ``'8192'`` and ``"8192"`` are one
value; ``True``, ``true`` and a flag given without a value are one; ``None`` is "not set".
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Collection

from evidence.vocabulary import Scope

# Flags whose argparse destination is not their own name (SGLang's launch_server).
ALIASES = {
    "tensor_parallel_size": "tp_size",
    "data_parallel_size": "dp_size",
    "expert_parallel_size": "ep_size",
    "pipeline_parallel_size": "pp_size",
    "model": "model_path",
    "tokenizer": "tokenizer_path",
    "mem_fraction": "mem_fraction_static",
    "tp": "tp_size",
    "dp": "dp_size",
    "ep": "ep_size",
    "pp": "pp_size",
}

# ServerArgs fields SGLang fills in itself at each start when nobody set them: random_seed is
# drawn anew (``random.randint``) whenever --random-seed is not given. A difference between two
# starts that no record explains is that draw, not a change anyone made.
VOLATILE = frozenset({"random_seed"})

_ENV_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_FIELD_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
_NUMBER_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_TRUE = frozenset({"true", "yes", "on"})
_FALSE = frozenset({"false", "no", "off"})
_NONE = frozenset({"none", "null", ""})


@functools.lru_cache(maxsize=65536)
def is_env(key: str, scope: str = "") -> bool:
    """An environment variable (``SGLANG_ENABLE_PDL``): it stays an env key, never a field."""
    return scope == Scope.ENV or bool(_ENV_RE.match(key))


def field_name(key: str) -> str:
    """The argparse destination spelling of a flag: ``--chunked-prefill-size`` ->
    ``chunked_prefill_size`` (no lookup: see :func:`field_of`)."""
    return key.strip().lstrip("-").replace("-", "_")


def flag_of(field: str) -> str:
    """The launch flag of a ServerArgs field: ``enable_mixed_chunk`` -> ``--enable-mixed-chunk``."""
    return "--" + field.replace("_", "-")


def field_of(key: str, scope: str, fields: Collection[str]) -> str | None:
    """The ServerArgs field ``key`` sets, or None (an env var, or a flag that names no known
    field or only an ambiguous prefix of several).

    With no known fields (no ServerArgs line was logged) a flag maps to its own name."""
    if is_env(key, scope):
        return None
    name = field_name(key.rsplit(".", 1)[-1] if scope == Scope.FILE else key)
    if not _FIELD_RE.match(name):
        return None
    if not fields:
        return ALIASES.get(name, name)
    if name in fields:
        return name
    alias = ALIASES.get(name)
    if alias is not None and alias in fields:
        return alias
    matches = [f for f in fields if f.startswith(name)]
    return matches[0] if len(matches) == 1 else None


# Keys that hold the server's command line (compose's command / entrypoint, Kubernetes' args):
# what they change are flags, and the ServerArgs line shows whether those ran.
_LAUNCH_KEY = re.compile(r"(?:^|\.)(?:command|entrypoint|args)(?:\[\d+\])?(?:\.|$)")


def outside_server(key: str, scope: str, fields: Collection[str]) -> bool:
    """A setting no ServerArgs line can show: a key of a config file (compose, Kubernetes, Helm
    values) that is not an env var and names no ServerArgs field, such as
    ``services.sglang.image``. Like an env var it goes live at the next start, assumed.

    A doc table's row is not one: its keys are prose ("TP size"), mostly naming flags in words,
    and the ServerArgs line shows whether those ran."""
    if scope != Scope.FILE or is_env(key, scope):
        return False
    if _LAUNCH_KEY.search(key):
        return False  # the command line itself: its flags show in ServerArgs
    return field_of(key, scope, fields) is None


def canonical(key: str, scope: str, fields: Collection[str]) -> str:
    """The one name a setting is compared under: its ServerArgs field when it maps to one, the
    env var for env keys, else the key as written (an unknown or ambiguous flag)."""
    if is_env(key, scope):
        return key.strip()
    return field_of(key, scope, fields) or key.strip()


def display(key: str) -> str:
    """How a canonical key is shown: fields as their launch flag, env vars as they are."""
    return flag_of(key) if _FIELD_RE.match(key) else key


# --- values -------------------------------------------------------------------------------------


def _number(text: str) -> str | None:
    if not _NUMBER_RE.match(text):
        return None
    number = float(text)
    if number.is_integer() and "e" not in text.lower():
        return str(int(number))
    return repr(number)


def _literal(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _number(repr(value)) or repr(value)
    if isinstance(value, str):
        return _plain(value)
    if isinstance(value, list | tuple | set | frozenset):
        items = [_literal(v) for v in value]
        if isinstance(value, set | frozenset):
            items.sort(key=str)
        return "[" + ",".join("None" if v is None else v for v in items) + "]"
    if isinstance(value, dict):
        pairs = sorted((str(_literal(k)), str(_literal(v))) for k, v in value.items())
        return "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"
    return str(value)


def _plain(text: str) -> str | None:
    text = text.strip()
    lowered = text.lower()
    if lowered in _NONE:
        return None
    if lowered in _TRUE:
        return "true"
    if lowered in _FALSE:
        return "false"
    number = _number(text)
    if number is not None:
        return number
    words = text.split()
    if len(words) > 1 and all(_number(w) is not None for w in words):
        return "[" + ",".join(str(_number(w)) for w in words) + "]"
    return text


@functools.lru_cache(maxsize=65536)
def effective(value: str | None, scope: str = "") -> str | None:
    """The meaning of a logged or recorded value, as a canonical string (None: not set).

    Python literals as ServerArgs logs them are read with ``ast.literal_eval`` (which evaluates
    nothing), one level of quotes is removed, booleans, numbers and lists are spelled one way.
    For env vars ``1``/``0`` are also true/false (how SGLang reads boolean env vars)."""
    if value is None:
        return None
    text = value.strip()
    result: str | None
    if text[:1] in ("'", '"', "[", "(", "{") or text in ("None", "True", "False"):
        try:
            result = _literal(ast.literal_eval(text))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            result = _plain(text)
    else:
        result = _plain(text)
    if scope == Scope.ENV and result in ("1", "0"):
        return "true" if result == "1" else "false"
    return result


def same_value(a: str | None, b: str | None, scope: str = "") -> bool:
    """Whether two spellings mean the same value (``8192`` and ``'8192'``; ``True`` and
    ``true``; ``None`` and not set)."""
    return effective(a, scope) == effective(b, scope)


def shown(value: str | None) -> str:
    """A value for reasons: as written, ``unset`` for None."""
    return "unset" if value is None else value
