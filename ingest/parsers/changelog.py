"""Dated items of a document's changelog sections, read as config changes.

Pure: text in, :class:`ConfigChangeRecord` values out. An item such as ``2026-11-20 13:10 set
SGLANG_SM120_MMA_TARGET_CTAS=512 (pdl)`` yields one change per setting it names.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

from markdown_it.token import Token

from evidence.vocabulary import Scope, Source

from .markdown import ENV_KEY, plain_text, token_line, tokenize
from .text import key_value
from .timestamps import TimeError, in_zone, parse_offset
from .types import ConfigChangeRecord, ParseError

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


@dataclass(frozen=True)
class ChangelogItem:
    """One dated list item of a changelog section."""

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
    return item_changes(changelog_items(tokenize(text), path, tz), path=path, ref=ref)


def item_changes(
    items: Sequence[ChangelogItem], *, path: str, ref: str
) -> list[ConfigChangeRecord]:
    """One change per setting each item names; ``ref`` names the document revision."""
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


def changelog_items(tokens: Sequence[Token], path: str, tz: dt.tzinfo) -> list[ChangelogItem]:
    """The dated items of the changelog sections (a heading naming a changelog, to the next
    heading of its level); an item may take its date from a dated sub-heading."""
    items: list[ChangelogItem] = []
    section_level = 0  # 0: outside any changelog section
    section_date: dt.date | None = None
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            level = int(token.tag[1:])
            title = plain_text(tokens[i + 1]) if i + 1 < len(tokens) else ""
            if section_level and level <= section_level:
                section_level = 0
            if not section_level and any(w in title.lower() for w in _CHANGELOG_WORDS):
                section_level = level
                section_date = None
            elif section_level:
                section_date = _heading_date(title, path, token_line(token))
        elif token.type == "list_item_open" and section_level:
            inline = _first_inline(tokens, i)
            if inline is None:
                continue
            line = token_line(token)
            item = _dated_item(plain_text(inline).strip(), line, path, tz, section_date)
            if item is not None:
                items.append(item)
    return items


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
) -> ChangelogItem | None:
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
    return ChangelogItem(at=at, line=line, text=text, rest=rest)


_REMARK = re.compile(r"(?:^|(?<=\s))\([^()]*\s[^()]*\)")


def _clean(word: str) -> str:
    word = word.strip("`'\"()[],;:*")
    return word[:-1] if word.endswith(".") else word


def _item_settings(rest: str) -> list[tuple[str, str | None, str | None]]:
    """(key, old, new) for each setting an item's words name."""
    for arrow in _ARROWS:
        rest = rest.replace(arrow, " -> ")
    # A remark in parentheses ("set --enable-mixed-chunk (mix prefill into decode batches)")
    # is prose, not the flag's value.
    rest = _REMARK.sub(" ", rest)
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
        pair = key_value(word, ENV_KEY)
        if pair is not None and any(c.isalpha() for c in pair[0]):
            return pair
        return None, None
    if _ITEM_ENV.fullmatch(word):
        return word, None
    return None, None
