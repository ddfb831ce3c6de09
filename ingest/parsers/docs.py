"""Markdown deployment docs: the settings they assert and the changes their changelog records.

Pure: text in, records out. The document is read through markdown-it-py tokens, so prose never
becomes a setting ("Do not set `X=1`" in a paragraph is a warning to readers, not an
assignment). Settings come from fenced shell blocks (see :mod:`ingest.parsers.shell`) and from
key/value tables; dated changelog items become :class:`ConfigChangeRecord` values.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

from evidence.vocabulary import EventKind, Lane, Scope, Source

from .shell import scan_shell, strip_console_prompts
from .text import decode, head_text, key_value
from .timestamps import TimeError, default_time, in_zone, parse_offset
from .types import (
    ConfigChangeRecord,
    EventRecord,
    ParseContext,
    ParseError,
    ParseResult,
    Setting,
)

__all__ = [
    "KIND_MARKDOWN_DOC",
    "changelog_changes",
    "looks_like_markdown_doc",
    "markdown_settings",
    "parse_markdown_doc",
]

KIND_MARKDOWN_DOC = "markdown_doc"

# Fence info strings read as shell. A broken snippet in a block that claims to be shell is an
# error; `text` and unlabelled blocks are often logs or prose, so a block that does not split
# as shell is skipped with a warning instead.
_STRICT_SHELL = frozenset({"bash", "sh", "shell", "zsh", "console", "shell-session"})
_LENIENT_SHELL = frozenset({"", "text", "txt", "plaintext", "env", "dotenv"})
_CONSOLE = frozenset({"console", "shell-session"})

_KEY_HEADERS = (
    "variable",
    "env var",
    "environment variable",
    "flag",
    "key",
    "name",
    "option",
    "parameter",
    "argument",
    "setting",
)
_VALUE_HEADERS = ("value", "setting", "default", "default value", "values", "recommended value")
_ENV_KEY = re.compile(r"[A-Z_][A-Z0-9_]*")
_CHANGELOG_WORDS = ("changelog", "change log", "changes", "history")

_DATE_PREFIX = re.compile(
    r"\[?(?P<date>\d{4}-\d{1,2}-\d{1,2})"
    r"(?:[T ](?P<time>\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(?P<zone>Z|[+-]\d{2}:?\d{2}|\s?UTC)?)?"
    r"\]?(?=[\s:,;)\]\u2014\u2013-]|$)(?P<rest>.*)",
    re.DOTALL,
)
_TIME_PREFIX = re.compile(
    r"\[?(?P<time>\d{1,2}:\d{2}(?::\d{2})?)(?P<zone>Z|[+-]\d{2}:?\d{2}|\s?UTC)?\]?"
    r"(?=[\s:,;)\]\u2014\u2013-]|$)(?P<rest>.*)",
    re.DOTALL,
)
_ITEM_ENV = re.compile(r"[A-Z][A-Z0-9]*_[A-Z0-9_]*")
_ARROWS = ("->", "\u2192", "=>")
_REMOVE_VERBS = frozenset(
    {"remove", "removed", "removes", "unset", "drop", "dropped", "delete", "deleted"}
)
_SET_VERBS = frozenset(
    {"set", "add", "added", "adds", "introduce", "introduced", "enable", "enabled", "bump",
     "bumped", "raise", "raised", "lower", "lowered", "change", "changed", "revert",
     "reverted", "restore", "restored", "switch", "switched", "use", "pin", "pinned"}
)  # fmt: skip
_NOT_A_VALUE = frozenset(
    {"from", "to", "and", "or", "in", "on", "for", "was", "is", "with", "by", "at", "=", "flag",
     "option", "because", "after", "before", "again"}
)  # fmt: skip


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


# Deployment docs are kilobytes. markdown-it spends ~10 us per table cell, so a pathological
# multi-megabyte document would hold a worker for minutes: refuse it up front instead.
MAX_MARKDOWN_BYTES = 2 * 1024 * 1024


def _check_size(size: int, path: str) -> None:
    if size > MAX_MARKDOWN_BYTES:
        raise ParseError(
            path,
            0,
            f"{size} bytes is over the {MAX_MARKDOWN_BYTES} byte limit for a Markdown "
            "deployment doc (expected a document of a few hundred KB at most)",
        )


# --- settings ------------------------------------------------------------------------------------


def markdown_settings(text: str, *, path: str) -> list[Setting]:
    """Settings a Markdown document asserts, in document order.

    Read from fenced shell blocks (variables carry from one block to the next, so `${VAR}`
    resolves to an earlier block's assignment) and from key/value tables. Paragraphs and list
    items are prose and never yield settings.
    """
    _check_size(len(text.encode()), path)
    settings, _ = _document_settings(_parser().parse(text), path)
    return settings


def _document_settings(tokens: Sequence[Token], path: str) -> tuple[list[Setting], list[str]]:
    settings: list[Setting] = []
    warnings: list[str] = []
    env: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.type == "fence":
            lang = _fence_language(token.info)
            if lang in _STRICT_SHELL or lang in _LENIENT_SHELL:
                content = (
                    strip_console_prompts(token.content) if lang in _CONSOLE else token.content
                )
                first_line = (token.map[0] + 2) if token.map else 1
                try:
                    found, env = scan_shell(content, where=path, first_line=first_line, env=env)
                except ParseError as exc:
                    if lang in _STRICT_SHELL:
                        raise
                    warnings.append(f"skipped the {lang or 'unlabelled'} block: {exc}")
                else:
                    settings.extend(found)
        elif token.type == "table_open":
            end = _closing(tokens, i, "table_close")
            settings.extend(_table_settings(tokens[i:end], path))
            i = end
        i += 1
    return settings, warnings


def _fence_language(info: str) -> str:
    words = info.strip().strip("{}").split()
    return words[0].lstrip(".").lower() if words else ""


def _closing(tokens: Sequence[Token], start: int, close_type: str) -> int:
    for j in range(start, len(tokens)):
        if tokens[j].type == close_type:
            return j
    return len(tokens) - 1


def _table_settings(tokens: Sequence[Token], path: str) -> list[Setting]:
    """Rows of a table whose header names a key column and a value column."""
    rows: list[tuple[int, list[str]]] = []
    row: list[str] | None = None
    row_line = 0
    for token in tokens:
        if token.type == "tr_open":
            row = []
            row_line = token.map[0] + 1 if token.map else 0
        elif token.type == "inline" and row is not None:
            row.append(_plain(token))
        elif token.type == "tr_close" and row is not None:
            rows.append((row_line, row))
            row = None
    if len(rows) < 2:
        return []
    header = [cell.strip().lower().strip("*_ :") for cell in rows[0][1]]
    key_col = next((c for c, h in enumerate(header) if h in _KEY_HEADERS), None)
    if key_col is None:
        return []
    value_col = next(
        (c for c, h in enumerate(header) if c != key_col and h in _VALUE_HEADERS), None
    )
    if value_col is None:
        return []
    out: list[Setting] = []
    for line, cells in rows[1:]:
        if max(key_col, value_col) >= len(cells):
            continue
        key = cells[key_col].strip()
        value = cells[value_col].strip()
        if not key or not value:
            continue
        out.append(Setting(key, value, _table_scope(key), f"{path}:{line}"))
    return out


def _table_scope(key: str) -> Scope:
    if key.startswith("-"):
        return Scope.FLAG
    if _ENV_KEY.fullmatch(key):
        return Scope.ENV
    return Scope.TABLE


def _plain(inline: Token) -> str:
    """The text of an inline token without Markdown markup (backticks, emphasis, links)."""
    parts: list[str] = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return "".join(parts)


# --- changelog -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Item:
    at: dt.datetime
    line: int
    text: str  # the whole item, date included
    rest: str  # the words after the date


def changelog_changes(text: str, *, path: str, ref: str, tz: dt.tzinfo) -> list[ConfigChangeRecord]:
    """Config changes recorded by dated items of the document's changelog sections.

    An item such as ``2026-11-20 13:10 set SGLANG_SM120_MMA_TARGET_CTAS=512 (pdl)`` yields one
    change per setting it names; naive times are in ``tz``. ``from X to Y`` / ``X -> Y`` give the
    old value; "remove"/"unset" give ``new=None``. A malformed date raises ParseError.
    """
    return _changes(_changelog_items(_parser().parse(text), path, tz), path=path, ref=ref)


def _changes(items: Sequence[_Item], *, path: str, ref: str) -> list[ConfigChangeRecord]:
    out: list[ConfigChangeRecord] = []
    for item in items:
        for key, old, new in _item_settings(item.rest):
            out.append(
                ConfigChangeRecord(
                    key=key,
                    old=old,
                    new=new,
                    at=item.at,
                    scope=Scope.FLAG if key.startswith("-") else Scope.ENV,
                    source=Source.CHANGELOG,
                    ref=ref,
                    where=f"{path}:{item.line}",
                    note=item.text,
                )
            )
    return out


def _changelog_items(tokens: Sequence[Token], path: str, tz: dt.tzinfo) -> list[_Item]:
    items: list[_Item] = []
    section_level = 0  # 0: outside any changelog section
    section_date: dt.date | None = None
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            level = int(token.tag[1:])
            title = _plain(tokens[i + 1]) if i + 1 < len(tokens) else ""
            if section_level and level <= section_level:
                section_level = 0
            if not section_level and any(w in title.lower() for w in _CHANGELOG_WORDS):
                section_level = level
                section_date = None
            elif section_level:
                section_date = _heading_date(title, path, _line(token))
        elif token.type == "list_item_open" and section_level:
            inline = _first_inline(tokens, i)
            if inline is None:
                continue
            item = _dated_item(_plain(inline).strip(), _line(token), path, tz, section_date)
            if item is not None:
                items.append(item)
    return items


def _line(token: Token) -> int:
    return token.map[0] + 1 if token.map else 0


def _first_inline(tokens: Sequence[Token], start: int) -> Token | None:
    # The item's own first paragraph; stop at a nested item so it is not read twice.
    for j in range(start + 1, len(tokens)):
        if tokens[j].type == "inline":
            return tokens[j]
        if tokens[j].type in ("list_item_open", "list_item_close"):
            return None
    return None


def _heading_date(title: str, path: str, line: int) -> dt.date | None:
    match = _DATE_PREFIX.match(title.strip())
    if match is None:
        return None
    return _date(match.group("date"), path, line)


def _date(text: str, path: str, line: int) -> dt.date:
    try:
        year, month, day = (int(p) for p in text.split("-"))
        return dt.date(year, month, day)
    except ValueError as exc:
        raise ParseError(
            path, line, f"expected a valid date YYYY-MM-DD at the start of the item, got {text!r}"
        ) from exc


def _time(text: str, path: str, line: int) -> dt.time:
    try:
        return dt.time.fromisoformat(text if len(text.split(":")[0]) == 2 else "0" + text)
    except ValueError as exc:
        raise ParseError(
            path, line, f"expected a valid time HH:MM[:SS] after the date, got {text!r}"
        ) from exc


def _dated_item(
    text: str, line: int, path: str, tz: dt.tzinfo, section_date: dt.date | None
) -> _Item | None:
    match = _DATE_PREFIX.match(text)
    if match is not None:
        day = _date(match.group("date"), path, line)
        clock = _time(match.group("time"), path, line) if match.group("time") else dt.time()
    else:
        match = _TIME_PREFIX.match(text)
        if match is None or section_date is None:
            return None
        day = section_date
        clock = _time(match.group("time"), path, line)
    rest = match.group("rest").strip()
    # A separator after the date ("2026-11-20 13:10 - set ..."), but not a flag's dashes.
    if rest[:1] in (":", "-", "|", "\u2014", "\u2013") and rest[1:2] in ("", " "):
        rest = rest[1:].strip()
    if not rest:
        return None
    zone = match.group("zone")
    try:
        at = in_zone(dt.datetime.combine(day, clock, parse_offset(zone) if zone else None), tz)
    except TimeError as exc:
        raise ParseError(path, line, f"the item's time: {exc}") from None
    return _Item(at=at, line=line, text=text, rest=rest)


def _clean(word: str) -> str:
    word = word.strip("`'\"()[],;:*")
    return word[:-1] if word.endswith(".") else word


def _item_settings(rest: str) -> list[tuple[str, str | None, str | None]]:
    """(key, old, new) for each setting an item's words name."""
    for arrow in _ARROWS:
        rest = rest.replace(arrow, " -> ")
    words = [_clean(w) for w in rest.split()]
    words = [w for w in words if w]
    lower = [w.lower() for w in words]
    out: list[tuple[str, str | None, str | None]] = []
    verb = ""
    i = 0
    while i < len(words):
        word = words[i]
        if lower[i] in _REMOVE_VERBS or lower[i] in _SET_VERBS:
            verb = lower[i]
        key, value = _mention(word)
        if key is None:
            i += 1
            continue
        old: str | None = None
        new: str | None = value
        nxt = lower[i + 1 : i + 5]
        changed = True
        if nxt[:1] == ["from"] and nxt[2:3] == ["to"] and len(nxt) >= 4:
            old, new = words[i + 2], words[i + 4]
            i += 4
        elif value is not None and nxt[:1] == ["->"] and len(nxt) >= 2:
            old, new = value, words[i + 2]
            i += 2
        elif value is None and nxt[:1] == ["to"] and len(nxt) >= 2:
            new = words[i + 2]
            i += 2
        elif value is None and nxt[1:2] == ["->"] and len(nxt) >= 3:
            old, new = words[i + 1], words[i + 3]
            i += 3
        else:
            changed = False
        if not changed and value is None and key.startswith("-"):
            if (
                i + 1 < len(words)
                and lower[i + 1] not in _NOT_A_VALUE
                and lower[i + 1] not in _REMOVE_VERBS
                and not _flagish(words[i + 1])
            ):
                new = words[i + 1]
                i += 1
            else:
                new = "true"
        removal = not changed and (
            verb in _REMOVE_VERBS or (not verb and any(w in _REMOVE_VERBS for w in lower[i + 1 :]))
        )
        if removal:
            out.append((key, None, None))
        elif new is not None:
            out.append((key, old, new))
        i += 1
    return out


def _flagish(word: str) -> bool:
    return word.startswith("-") and not word[1:2].isdigit()


def _mention(word: str) -> tuple[str | None, str | None]:
    """A setting key named by one word, and its value if the word carries one."""
    if word.startswith("--") and word[2:3].isalnum():
        if "=" in word:
            key, value = word.split("=", 1)
            return key, value
        return word, None
    if "=" in word:
        pair = key_value(word, _ENV_KEY)
        if pair is not None and any(c.isalpha() for c in pair[0]):
            return pair
        return None, None
    if _ITEM_ENV.fullmatch(word):
        return word, None
    return None, None


# --- a lone document -----------------------------------------------------------------------------


def looks_like_markdown_doc(name: str, head: bytes) -> bool:
    """A ``.md``/``.markdown`` name, or text that opens with a Markdown ``#`` heading."""
    if name.lower().endswith((".md", ".markdown")):
        return True
    text = head_text(head).lstrip(" \t\r\n")
    if not text.startswith("#") or text.startswith("#!"):
        return False
    first = text.split("\n", 1)[0]
    hashes = len(first) - len(first.lstrip("#"))
    if hashes > 6 or not first[hashes:].startswith(" "):
        return False
    # A shell script can open with `# comment` too; ask for one more Markdown trait.
    return any(mark in text for mark in ("\n```", "\n|", "\n## ", "\n- ", "\n* ", "]("))


def parse_markdown_doc(data: bytes, ctx: ParseContext) -> ParseResult:
    """One document revision event (at ``ctx.default_time`` or the latest changelog time).

    Also returns the changes its changelog records. Raises ParseError for undecodable bytes,
    a broken shell block, a malformed changelog date, or a document with no time at all.
    """
    _check_size(len(data), ctx.name)
    text = decode(data, ctx.name)
    tokens = _parser().parse(text)
    settings, warnings = _document_settings(tokens, ctx.name)
    items = _changelog_items(tokens, ctx.name, ctx.tz)
    key = f"{ctx.name}@{hashlib.sha256(data).hexdigest()[:12]}"
    changes = _changes(items, path=ctx.name, ref=key)
    given = default_time(ctx)
    if given is not None:
        at = given
    elif items:
        at = max(item.at for item in items)
    else:
        raise ParseError(
            ctx.name,
            0,
            "a lone document needs a time: give one on the command line, or add dated items "
            "(e.g. '- 2026-11-20 13:10 ...') under a Changelog heading",
        )
    sections = [
        _plain(tokens[i + 1])
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and i + 1 < len(tokens)
    ]
    title = f"{posixpath.basename(ctx.name)} revision"
    event = EventRecord(
        kind=EventKind.DOC_REVISION,
        lane=Lane.DOCS,
        at=at,
        key=key,
        title=title,
        body=_summary(settings, sections, items, changes),
        attrs={
            "path": ctx.name,
            "settings": [
                {
                    "key": s.key,
                    "value": s.value,
                    "scope": s.scope,
                    "where": s.where,
                    "condition": s.condition,
                }
                for s in settings
            ],
            "sections": sections,
        },
        line=1,
    )
    return ParseResult(
        kind=KIND_MARKDOWN_DOC, events=[event], config_changes=changes, warnings=warnings
    )


def _summary(
    settings: Sequence[Setting],
    sections: Sequence[str],
    items: Sequence[_Item],
    changes: Sequence[ConfigChangeRecord],
) -> str:
    by_scope: dict[str, int] = {}
    for s in settings:
        by_scope[s.scope] = by_scope.get(s.scope, 0) + 1
    scopes = ", ".join(f"{n} {scope}" for scope, n in sorted(by_scope.items()))
    lines = [f"**{len(settings)} settings** ({scopes or 'none'}) in {len(sections)} sections."]
    conditional = sum(1 for s in settings if s.condition)
    if conditional:
        lines.append(f"{conditional} of them only apply under a shell condition.")
    if items:
        lines.append(
            f"Changelog: {len(items)} dated items, {len(changes)} config changes; latest: "
            f"{max(items, key=lambda it: it.at).text}"
        )
    return "\n\n".join(lines)


MAX_SECTION_CHARS = 20_000


def sections(text: str) -> list[tuple[str, str]]:
    """The document cut at its headings: (heading text, the section's Markdown source).

    Text before the first heading is the section "". Headings are found from markdown-it
    tokens, so a ``#`` inside a code block is not a heading."""
    lines = text.splitlines(keepends=True)
    tokens = _parser().parse(text)
    starts: list[tuple[int, str]] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map is not None:
            inline = tokens[i + 1] if i + 1 < len(tokens) else None
            starts.append((tok.map[0], inline.content.strip() if inline is not None else ""))
    out: list[tuple[str, str]] = []
    first = starts[0][0] if starts else len(lines)
    if "".join(lines[:first]).strip():
        out.append(("", "".join(lines[:first])))
    for n, (start, title) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        out.append((title, "".join(lines[start:end])))
    return out


def changed_sections(before: str | None, after: str | None) -> str:
    """Markdown of the sections of ``after`` that are new or differ from ``before``, so a doc
    revision shows what was edited (bounded in size)."""
    if after is None:
        return ""
    old: dict[str, list[str]] = {}
    for title, body in sections(before or ""):
        old.setdefault(title, []).append(body)
    changed = [body for title, body in sections(after) if body not in old.get(title, [])]
    text = "\n".join(b.rstrip("\n") + "\n" for b in changed)
    if len(text) > MAX_SECTION_CHARS:
        text = text[:MAX_SECTION_CHARS] + "\n\n_(cut: the changed sections go on)_\n"
    return text
