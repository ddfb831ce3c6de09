"""A lone Markdown deployment doc: one doc revision event and the changes its changelog records.

Pure: bytes in, :class:`ParseResult` out. Its settings come from :mod:`.markdown`, its dated
changelog items from :mod:`.changelog`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import posixpath
from collections.abc import Sequence

from evidence.vocabulary import EventKind, Lane, Scope, Source

from .changelog import ChangelogItem, changelog_items, item_changes
from .configfiles import diff_settings
from .markdown import check_size, document_settings, plain_text, tokenize
from .text import decode, head_text
from .timestamps import default_time
from .types import (
    ConfigChangeRecord,
    EventRecord,
    ParseContext,
    ParseError,
    ParseResult,
    Setting,
)

KIND_MARKDOWN_DOC = "markdown_doc"


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
    check_size(len(data), ctx.name)
    text = decode(data, ctx.name)
    tokens = tokenize(text)
    settings, warnings = document_settings(tokens, ctx.name)
    items = changelog_items(tokens, ctx.name, ctx.tz)
    key = f"{ctx.name}@{hashlib.sha256(data).hexdigest()[:12]}"
    changes = item_changes(items, path=ctx.name, ref=key)
    given = default_time(ctx)
    if given is not None:
        at = given
        changes += state_changes(settings, changes, at=at, ref=key)
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
        plain_text(tokens[i + 1])
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
            "settings": [s.as_attrs() for s in settings],
            "sections": sections,
            "state": given is not None,
        },
        line=1,
    )
    return ParseResult(
        kind=KIND_MARKDOWN_DOC, events=[event], config_changes=changes, warnings=warnings
    )


def state_changes(
    settings: Sequence[Setting],
    changelog: Sequence[ConfigChangeRecord],
    *,
    at: dt.datetime,
    ref: str,
) -> list[ConfigChangeRecord]:
    """The document's settings as the configuration in force at ``at`` (a lone doc given a
    time): every setting is introduced then, except the ones its own changelog already set
    to the same value earlier. Later revisions of the same path are diffed against this one
    when they are loaded (:func:`ingest.services.loading.doc_states_chain`)."""
    known: dict[tuple[str, str], str | None] = {}
    for change in sorted(changelog, key=lambda c: c.at):
        if change.at <= at:
            known[(change.key, change.condition)] = change.new
    before = [
        Setting(key, value, Scope.FLAG if key.startswith("-") else Scope.ENV, "", condition)
        for (key, condition), value in known.items()
        if value is not None
    ]
    return [
        c
        for c in diff_settings(before, settings, at=at, source=Source.DOC, ref=ref)
        if c.new is not None  # what the changelog set and the doc no longer shows stays
    ]


def _summary(
    settings: Sequence[Setting],
    sections: Sequence[str],
    items: Sequence[ChangelogItem],
    changes: Sequence[ConfigChangeRecord],
) -> str:
    by_scope: dict[str, int] = {}
    for s in settings:
        by_scope[s.scope] = by_scope.get(s.scope, 0) + 1
    scopes = ", ".join(f"{n} {scope}" for scope, n in sorted(by_scope.items()))
    lines = [f"**{len(settings)} settings** ({scopes or 'none'}) in {len(sections)} sections."]
    profiles = sorted({s.profile for s in settings if s.profile})
    if profiles:
        lines.append(
            f"{len(profiles)} server launches, kept apart: " + ", ".join(f"`{p}`" for p in profiles)
        )
    conditional = sum(1 for s in settings if s.condition)
    if conditional:
        lines.append(f"{conditional} of them only apply under a shell condition.")
    if items:
        lines.append(
            f"Changelog: {len(items)} dated items, {len(changes)} config changes; latest: "
            f"{max(items, key=lambda it: it.at).text}"
        )
    return "\n\n".join(lines)
