"""Bytes to text, one way for every parser, and the ``KEY=VALUE`` form several formats share.

Pure (no Django, no I/O). Every text format here is UTF-8: a byte that does not decode is a
:class:`ParseError` at its line, never replaced; a leading byte order mark is dropped (editors on
Windows write one). Only the format checks (``looks_like_*``), which must never raise, read a
file's first bytes leniently through :func:`head_text`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .types import ParseError

BOM = "\ufeff"
# A shell or environment variable name.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def decode(data: bytes, name: str, *, first_line: int = 1) -> str:
    """``data`` as UTF-8 text without a leading byte order mark.

    ``first_line`` is the line ``data`` starts at in the file, for the message when ``data`` is
    one piece of a larger file.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        raise ParseError(
            name, line, f"expected UTF-8 text, found undecodable byte 0x{data[exc.start]:02x}"
        ) from None
    return text.removeprefix(BOM)


def decode_lines(data: bytes, name: str) -> list[str]:
    """The lines of ``data`` (see :func:`decode`), without their ``\\n`` or ``\\r\\n``.

    Text that ends with a newline ends with an empty line, as ``str.split`` gives it.
    """
    return [line.removesuffix("\r") for line in decode(data, name).split("\n")]


def decode_lines_tolerating(
    data: bytes, name: str, tolerated: Callable[[bytes], bool]
) -> tuple[list[str], list[int]]:
    """:func:`decode_lines` for text that quotes other files' bytes (a ``git log -p``): a line
    that is not UTF-8 is read with U+FFFD for each byte that does not decode when
    ``tolerated(line)`` says so (it sees every line, in order, so it may keep state), and is
    a ParseError at its line otherwise. Returns the lines and the numbers of those read so."""
    try:
        return decode_lines(data, name), []
    except ParseError:
        pass
    lines: list[str] = []
    replaced: list[int] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        allowed = tolerated(raw)
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not allowed:
                raise ParseError(
                    name,
                    number,
                    f"expected UTF-8 text, found undecodable byte 0x{raw[exc.start]:02x}",
                ) from None
            replaced.append(number)
            line = raw.decode("utf-8", errors="replace")
        lines.append(line.removesuffix("\r"))
    if lines:
        lines[0] = lines[0].removeprefix(BOM)
    return lines, replaced


def head_text(head: bytes) -> str:
    """The first bytes of a file as text for a format check: never raises, BOM dropped.

    A multi-byte character cut at the end of ``head`` becomes U+FFFD instead of an error.
    """
    return head.decode("utf-8", errors="replace").removeprefix(BOM)


def key_value(
    text: str, name: re.Pattern[str] = NAME, *, spaced: bool = False
) -> tuple[str, str] | None:
    """``(key, value)`` of ``KEY=VALUE`` split at the first ``=``, or None when the text has no
    ``=`` or its left side is not a ``name``.

    ``spaced`` allows blanks around the key (``.env`` files, ``k = v`` lists); a shell word
    never has them: ``"A "=1`` runs a command, it assigns nothing.
    """
    key, eq, value = text.partition("=")
    if spaced:
        key = key.strip()
    if not eq or not name.fullmatch(key):
        return None
    return key, value
