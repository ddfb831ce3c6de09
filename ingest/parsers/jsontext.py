"""JSON read by every parser and the push API: what ``json.loads`` cannot read is a ParseError at
a line, never a RecursionError or a bare ValueError.

Pure (no Django, no I/O). ``json.loads`` gives up on nesting deeper than Python's recursion
limit (RecursionError, no position) and on integers of more than 4,300 digits (ValueError, no
position); :func:`loads` turns both into messages naming the line. Nesting that Python can read
but the timeline will not store is checked after parsing (:func:`depth_problem`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .types import ParseError

# Deeper than this is no evidence anyone writes: refused, whatever Python could read.
MAX_DEPTH = 32
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}\n]')
_HUGE_INT = re.compile(r"-?\d{4301,}")


def loads(text: str, file: str) -> Any:
    """``json.loads``; a JSONDecodeError passes through (each caller words it), the rest become
    a ParseError at the line where the reading gave up."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise ParseError(file, _deep_line(text), too_deep()) from None
    except ValueError as exc:  # an integer past the limit of int conversion
        found = _HUGE_INT.search(text)
        line = text.count("\n", 0, found.start()) + 1 if found else 0
        raise ParseError(
            file, line, f"a number of more than 4300 digits; expected a number ({exc})"
        ) from None


def too_deep() -> str:
    return f"JSON nested deeper than {MAX_DEPTH} levels; expected at most {MAX_DEPTH}"


def _deep_line(text: str) -> int:
    """The 1-based line where the nesting first goes past MAX_DEPTH."""
    depth, line = 0, 1
    for token in _TOKENS.finditer(text):
        mark = token.group()
        if mark == "\n":
            line += 1
        elif mark in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif mark in "]}":
            depth -= 1
        else:
            line += mark.count("\n")
    return line


def depth_problem(value: Any) -> str | None:
    """The path (``.a[2].b``) of the first value nested deeper than MAX_DEPTH, or None."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                return path or "."
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in children:
                step = f"[{key}]" if isinstance(item, list) else f".{key}"
                if isinstance(child, dict | list):
                    stack.append((child, path + step, depth + 1))
    return None
