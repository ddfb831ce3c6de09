"""The ``server_args=ServerArgs(...)`` line SGLang logs at start-up, read field by field.

Pure (no Django, no I/O). The line is the repr of a Python dataclass: ``ServerArgs(`` then
``name=value`` pairs separated by ", " and a closing ``)``. A value is whatever its own repr
printed: a number, ``None``, ``True``, a quoted string (which may hold commas, brackets, quotes
and backslash escapes: ``json_model_override_args='{"a": [1, 2]}'``), a list, a dict, a tuple,
or an object repr such as ``<Enum.X: 1>``. The line can be several KB long.

Nothing here evaluates anything: a small scanner walks the text keeping track of string literals
and brackets, splits it at the commas that are at the top level of the call, and keeps each
value's source text exactly as logged (``"8192"``, ``"'fa3'"``, ``"None"``, ``"[1, 2]"``):
comparing values is the reader's business, and the text is the evidence.
"""

from __future__ import annotations

import ast
import re

from . import secrets

MARK = "server_args=ServerArgs("

_NAME_VALUE = re.compile(r"\s*([A-Za-z_]\w*)=(.*\S)\s*", re.DOTALL)
_PAIRS = {")": "(", "]": "[", "}": "{"}


class ServerArgsError(ValueError):
    """The text is not a ``ServerArgs(name=value, ...)`` repr; ``column`` is 1-based within the
    text given (the caller turns it into a file:line error)."""

    def __init__(self, column: int, message: str, *, unclosed: bool = False) -> None:
        self.column = column
        self.message = message
        self.unclosed = unclosed  # the text ended inside the call: more text may close it
        super().__init__(f"column {column}: {message}")


def find(message: str) -> int:
    """Where ``ServerArgs(`` starts in a log message (``-1``: not a server_args line)."""
    at = message.find(MARK)
    return -1 if at == -1 else at + len("server_args=")


def read(text: str, start: int = 0) -> dict[str, str]:
    """Every field of the ``ServerArgs(...)`` that starts at ``text[start:]``, in logged order,
    mapped to its value's source text.

    Raises :class:`ServerArgsError` for an unclosed call, string or bracket (a line cut by a log
    shipper), a mismatched bracket, a piece that is not ``name=value`` or a field given twice.
    """
    if not text.startswith("ServerArgs(", start):
        raise ServerArgsError(start + 1, "expected ServerArgs(")
    pieces = _split_call(text, start + len("ServerArgs("))
    fields: dict[str, str] = {}
    for offset, piece in pieces:
        if not piece.strip():
            if len(pieces) == 1:
                break  # ServerArgs()
            raise ServerArgsError(offset + 1, "expected name=value between two commas")
        match = _NAME_VALUE.fullmatch(piece)
        if match is None:
            shown = piece.strip()[:60]
            raise ServerArgsError(offset + 1, f"expected name=value, got {shown!r}")
        name, value = match.group(1), match.group(2)
        if name in fields:
            raise ServerArgsError(offset + 1, f"the field {name} is given twice")
        # (api_key='sk-...': a secret keeps only its fingerprint, secrets.py)
        fields[name] = secrets.hide(name, value) or value
    return fields


_MARKS = re.compile(r"[\"'()\[\]{},]")  # what the scanner stops at; the rest is skipped
_STRING_END = {
    "'": re.compile(r"(?:[^'\\]|\\.)*'", re.DOTALL),
    '"': re.compile(r'(?:[^"\\]|\\.)*"', re.DOTALL),
}


def literal(value: str) -> object:
    """A logged value as the Python value it shows (``"8192"`` -> 8192, ``"'fa3'"`` -> "fa3",
    ``"None"`` -> None, ``"[1, 2]"`` -> [1, 2]), for comparing effective values; read with
    :func:`ast.literal_eval`, which evaluates nothing but literals. Raises ValueError for a
    value that is no literal (``<Policy.LPM: 'lpm'>``): compare its text then."""
    try:
        return ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ValueError(f"not a literal: {value[:60]!r}") from exc


def _split_call(text: str, begin: int) -> list[tuple[int, str]]:
    """The top-level comma-separated pieces of a call's arguments, from ``begin`` (just after
    its ``(``) to its closing ``)``, each with its offset in ``text``."""
    pieces: list[tuple[int, str]] = []
    stack: list[tuple[str, int]] = []
    piece_start = begin
    pos = begin
    while (mark := _MARKS.search(text, pos)) is not None:
        i, char = mark.start(), mark.group()
        pos = i + 1
        if char in "'\"":
            end = _STRING_END[char].match(text, pos)
            if end is None:
                raise ServerArgsError(
                    i + 1,
                    f"a string opened with {char} is not closed (the line may have been cut)",
                    unclosed=True,
                )
            pos = end.end()
        elif char in "([{":
            stack.append((char, i))
        elif char in ")]}":
            if not stack:
                if char != ")":
                    raise ServerArgsError(i + 1, f"unexpected {char!r}: expected ')'")
                pieces.append((piece_start, text[piece_start:i]))
                return pieces
            opener, _ = stack.pop()
            if opener != _PAIRS[char]:
                raise ServerArgsError(i + 1, f"{char!r} closes {opener!r}")
        elif not stack:  # a comma at the top level
            pieces.append((piece_start, text[piece_start:i]))
            piece_start = i + 1
    if stack:
        opener, where = stack[-1]
        raise ServerArgsError(
            where + 1, f"{opener!r} is not closed (the line may have been cut)", unclosed=True
        )
    raise ServerArgsError(
        len(text) + 1,
        "ServerArgs( is not closed: expected ')' (the line may have been cut)",
        unclosed=True,
    )
