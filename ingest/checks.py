"""What a load can store, checked before it writes anything.

Postgres text holds no NUL character and no lone surrogate; the timeline shows the years 1900
to 2199; a series' identity (name, labels, origin) must fit its unique index; a config key its
column; stored JSON is nested at most ``jsontext.MAX_DEPTH`` levels. A record that breaks one of
these is a :class:`ParseError` naming the file, the line and what was expected, raised before
the load's transaction writes a row, never a database error that names columns, indexes or
byte limits. The push API applies the same rules to each item it is given (ingest.push).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ingest.parsers import jsontext
from ingest.parsers.types import ParseError, ParseResult

UTC = dt.UTC
EARLIEST = dt.datetime(1900, 1, 1, tzinfo=UTC)
LATEST = dt.datetime(2200, 1, 1, tzinfo=UTC)
MAX_SERIES_NAME = 300  # Series.name
MAX_CONFIG_KEY = 300  # ConfigChange.key
# The unique index on (incident, name, labels, origin) holds entries up to 2,704 bytes.
MAX_SERIES_IDENTITY_BYTES = 2000

_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")
_WHERE_LINE = re.compile(r":(\d+)$")


def text_problem(value: str) -> str | None:
    """Why Postgres cannot store this text, or None."""
    found = _BAD_TEXT.search(value)
    if found is None:
        return None
    if found.group() == "\x00":
        return "a NUL character; expected text without one (stored text cannot hold it)"
    return (
        f"a lone surrogate \\u{ord(found.group()):04x}; expected valid Unicode text "
        "(surrogates only come in pairs)"
    )


def time_problem(value: dt.datetime) -> str | None:
    """Why the timeline cannot show this time, or None."""
    if EARLIEST <= value < LATEST:
        return None
    return (
        f"{value.isoformat()} is outside the years {EARLIEST.year} to {LATEST.year - 1}; "
        "expected a time in those years"
    )


def json_problem(value: Any) -> tuple[str, str] | None:
    """(path, why) of the first string or key of a JSON value Postgres cannot store, or of the
    first value nested too deep; None when all of it can be stored."""
    deep = jsontext.depth_problem(value)
    if deep is not None:
        return deep, jsontext.too_deep()
    for path, text in _strings(value, ""):
        problem = text_problem(text)
        if problem is not None:
            return path or ".", problem
    return None


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str):
                    yield f"{where}.{key[:40]!r}", key
                stack.append((child, f"{where}.{key}"))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))


@dataclass(frozen=True)
class Problem:
    """One record that cannot be stored: which (``events[3]``), its field, why, and where in
    the file it was read (``line``, or ``needle``: text to look for when the record has none)."""

    record: str
    field: str
    message: str
    line: int = 0
    needle: str = ""
    label: str = ""  # what names the record when no line does (an event's title)


def result_problems(result: ParseResult) -> Iterator[Problem]:
    """Every record of a parse result that cannot be stored, in file order per kind."""
    for i, event in enumerate(result.events):
        where = f"events[{i}]"
        for field, text in (("title", event.title), ("body", event.body), ("key", event.key)):
            problem = text_problem(text)
            if problem:
                yield Problem(where, field, problem, event.line, _needle(text), _label(event.title))
        for field, at in (("at", event.at), ("ends_at", event.ends_at)):
            problem = time_problem(at) if at is not None else None
            if problem:
                yield Problem(where, field, problem, event.line, label=_label(event.title))
        found = json_problem(event.attrs)
        if found:
            field = "attrs" + found[0].lstrip(".")
            yield Problem(where, field, found[1], event.line, label=_label(event.title))
    for i, change in enumerate(result.config_changes):
        where = f"config_changes[{i}]"
        match = _WHERE_LINE.search(change.where)
        line = int(match.group(1)) if match else 0
        texts: list[tuple[str, str | None]] = [
            ("key", change.key),
            ("old", change.old),
            ("new", change.new),
        ]
        texts += [("ref", change.ref), ("where", change.where), ("condition", change.condition)]
        texts += [("note", change.note)]
        for field, value in texts:
            problem = text_problem(value) if value else None
            if problem:
                yield Problem(where, field, problem, line, _needle(value or ""))
        if len(change.key) > MAX_CONFIG_KEY:
            yield Problem(
                where,
                "key",
                f"a setting name of {len(change.key)} characters; expected at most "
                f"{MAX_CONFIG_KEY}",
                line,
                change.key[:200],
            )
        problem = time_problem(change.at)
        if problem:
            yield Problem(where, "at", problem, line)
    for i, block in enumerate(result.samples):
        yield from _series_problems(f"series[{i}]", block.key.name, block.key.labels, block.origin)


def _series_problems(
    where: str, name: str, labels: tuple[tuple[str, str], ...], origin: str = ""
) -> Iterator[Problem]:
    for field, text in [("name", name), *((f"label {k!r}", f"{k}={v}") for k, v in labels)]:
        problem = text_problem(text)
        if problem:
            yield Problem(where, field, problem, needle=_needle(text.partition("=")[2] or text))
    if len(name) > MAX_SERIES_NAME:
        yield Problem(
            where,
            "name",
            f"a metric name of {len(name)} characters; expected at most {MAX_SERIES_NAME}",
            needle=name[:200],
        )
    size = len(name.encode("utf-8", "surrogatepass")) + len(origin.encode("utf-8", "replace"))
    size += sum(len(f"{k}{v}".encode("utf-8", "surrogatepass")) for k, v in labels)
    if size > MAX_SERIES_IDENTITY_BYTES:
        longest = max(labels, key=lambda kv: len(kv[1]), default=("", name))
        yield Problem(
            where,
            "labels",
            f"{size} bytes of name and labels for {name[:80]}; expected at most "
            f"{MAX_SERIES_IDENTITY_BYTES} (a label value that long is no label)",
            needle=longest[1][:200],
        )


def series_key_problem(name: str, labels: tuple[tuple[str, str], ...]) -> bool:
    """Whether a series cannot be stored as it is (the streaming path then hands the file to
    the whole-file path, whose check names the line)."""
    return next(_series_problems("series", name, labels), None) is not None


def _label(title: str) -> str:
    shown = title if not _BAD_TEXT.search(title) else _BAD_TEXT.sub("?", title)
    return f" ({shown[:60]!r})"


def _needle(text: str) -> str:
    """What to look for in the file: the bad character with a little context."""
    found = _BAD_TEXT.search(text)
    if found is None:
        return text[:200]
    return text[max(found.start() - 20, 0) : found.start() + 1]


def result_check(result: ParseResult, name: str, data: bytes | None = None) -> None:
    """Raise a ParseError for the first record that cannot be stored, at its line (found in
    ``data`` when the record does not carry one)."""
    problem = next(result_problems(result), None)
    if problem is None:
        return
    line = problem.line or _line_of(data, problem.needle)
    subject = problem.field if line else f"{problem.record}{problem.label} {problem.field}"
    raise ParseError(name, line, f"{subject}: {problem.message}")


def _line_of(data: bytes | None, needle: str) -> int:
    """The 1-based line where ``needle`` first appears in the file (as raw UTF-8, or as the JSON
    escape of a NUL or a surrogate), 0 when it cannot be found."""
    if not data or not needle:
        return 0
    candidates = [needle.encode("utf-8", "surrogatepass")]
    last = needle[-1]
    if last == "\x00" or "\ud800" <= last <= "\udfff":
        candidates.append(f"\\u{ord(last):04x}".encode())
        candidates.append(f"\\u{ord(last):04X}".encode())
        candidates.append(b"\x00" if last == "\x00" else b"")
    for candidate in candidates:
        at = data.find(candidate) if candidate else -1
        if at >= 0:
            return data.count(b"\n", 0, at) + 1
    return 0
