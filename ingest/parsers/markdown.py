"""Markdown read as tokens: the settings a document asserts, and its sections.

Pure: text in, values out. The document is read through markdown-it-py tokens, so prose never
becomes a setting ("Do not set `X=1`" in a paragraph is a warning to readers, not an
assignment). Settings come from fenced shell blocks (see :mod:`ingest.parsers.shell`) and from
key/value tables. Shared by the lone-document parser (:mod:`.docs`), the changelog reader
(:mod:`.changelog`), config files in a repository and doc revisions of a commit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

from markdown_it import MarkdownIt
from markdown_it.token import Token

from evidence.vocabulary import Scope

from .shell import ShellReader
from .shell_commands import split_commands, strip_console_prompts
from .types import ParseError, Setting

# Fence info strings read as shell. A broken snippet in a block that claims to be shell is an
# error; unlabelled blocks are often logs or prose, so one that does not split as shell is
# skipped with a warning instead. `text` blocks are what a reader sees, not what they run (the
# log lines a server must print, "replace this flag with that"): never settings.
_STRICT_SHELL = frozenset({"bash", "sh", "shell", "zsh", "console", "shell-session"})
_LENIENT_SHELL = frozenset({"", "env", "dotenv"})
_ENV_BLOCKS = frozenset({"env", "dotenv"})  # KEY=VALUE lines of an environment: exported
_CONSOLE = frozenset({"console", "shell-session"})
# A manifest (Kubernetes, compose): the environment and the launch flags of the servers it runs.
_YAML = frozenset({"yaml", "yml"})

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
# Not "default"/"default value": a table of the software's defaults is a reference, not what the
# doc sets (like prose saying "with the default X=true"). A table with both uses its Value column.
_VALUE_HEADERS = ("value", "setting", "values", "recommended value")
ENV_KEY = re.compile(r"[A-Z_][A-Z0-9_]*")


def tokenize(text: str) -> list[Token]:
    """The document's markdown-it tokens (CommonMark with tables)."""
    return MarkdownIt("commonmark").enable("table").parse(text)


# Deployment docs are kilobytes. markdown-it spends ~10 us per table cell, so a pathological
# multi-megabyte document would hold a worker for minutes: refuse it up front instead.
MAX_MARKDOWN_BYTES = 2 * 1024 * 1024


def check_size(size: int, path: str) -> None:
    """Refuse a document over :data:`MAX_MARKDOWN_BYTES` before tokenising it."""
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
    check_size(len(text.encode()), path)
    settings, _ = document_settings(tokenize(text), path)
    return settings


def document_settings(tokens: Sequence[Token], path: str) -> tuple[list[Setting], list[str]]:
    """The settings of a tokenised document, and warnings (blocks skipped, flag lines joined to
    the command above, variables that reach no launch). Shell blocks are read in order as one
    shell session (:mod:`.shell`), except that a section which launched a server leaves its
    variables behind at the next heading of its level (ShellReader.section: alternatives do
    not share exports): one profile per server launch; table rows are the document's
    own (profile ""). An unlabelled block that plainly is another language (BibTeX, JSON,
    XML/HTML, YAML) is skipped: read as shell, ``author={X},`` would be an assignment."""
    tables: list[Setting] = []
    warnings: list[str] = []
    reader = ShellReader(where=path)
    heading = ""
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.type == "heading_open" and i + 1 < len(tokens):
            heading = plain_text(tokens[i + 1]).strip()
            reader.section(int(token.tag[1:]) if token.tag[1:].isdigit() else 1)
        elif token.type == "fence":
            lang = _fence_language(token.info)
            other = _other_language(token.content) if lang == "" else ""
            if other:
                warnings.append(
                    f"skipped the unlabelled block at {path}:{token_line(token)}: it reads as "
                    f"{other}, not shell"
                )
            elif lang in _YAML:
                try:
                    tables.extend(_yaml_block_settings(token, path, heading))
                except ParseError as exc:
                    warnings.append(f"skipped the {lang} block: {exc}")
            elif lang in _STRICT_SHELL or lang in _LENIENT_SHELL:
                content = (
                    strip_console_prompts(token.content) if lang in _CONSOLE else token.content
                )
                first_line = fence_body_line(token)
                try:
                    content, noted = continued_past_notes(content, first_line=first_line, path=path)
                    content, joined = join_dangling_flags(content, first_line=first_line, path=path)
                    joined = noted + joined
                    reader.feed(
                        content,
                        first_line=first_line,
                        heading=heading,
                        exported=lang in _ENV_BLOCKS,
                    )
                    warnings.extend(joined)
                except ParseError as exc:
                    if lang in _STRICT_SHELL:
                        raise
                    warnings.append(f"skipped the {lang or 'unlabelled'} block: {exc}")
        elif token.type == "table_open":
            end = _closing(tokens, i, "table_close")
            tables.extend(_table_settings(tokens[i:end], path))
            i = end
        i += 1
    settings, notes = reader.result()
    return sorted(settings + tables, key=lambda s: (s.profile != "", _line(s))), warnings + notes


def _yaml_block_settings(token: Token, path: str, heading: str) -> list[Setting]:
    """A YAML block's containers' environment and server flags (configfiles reads manifests);
    one profile, named as a shell launch is (its disaggregation mode, else its section), when
    it launches a server, since its values are that server's and not the whole document's; a
    block with several launches (prefill and decode roles, a leader and its workers) has one
    profile per launch, each with its own container's environment."""
    from .configfiles import yaml_launch_settings  # (configfiles reads Markdown through here)

    first_line = fence_body_line(token)
    settings = yaml_launch_settings(path, token.content, first_line=first_line)
    flags = {s.key: s.value for s in settings if s.scope == Scope.FLAG}
    if not flags:
        return settings
    if any(s.profile for s in settings):
        return settings  # several launches, each a profile already (configfiles.name_launches)
    name = flags.get("--disaggregation-mode") or heading or f"yaml block at line {first_line}"
    return [replace(s, profile=name) for s in settings]


_LONG_FLAG = re.compile(r"--[A-Za-z]")
# A line continuation with a note after it: `--model-path m \ # <- here` (SGLang's AMD guide).
_NOTE_AFTER_BACKSLASH = re.compile(r"(?<=\s)\\[ \t]+#[^\n]*$", re.MULTILINE)


def continued_past_notes(text: str, *, first_line: int, path: str) -> tuple[str, list[str]]:
    """The block with a note after a line's continuing backslash taken off, and a warning for
    each: the writer marked a line of a wrapped command (``\\ # <- here``); a shell would take
    the backslash as escaping the space and end the command at the note, dropping the flags
    below it."""
    warnings = [
        f"{path}:{first_line + text.count(chr(10), 0, m.start())}: read `{m.group(0).strip()}` "
        "as a line continuation with a note after it"
        for m in _NOTE_AFTER_BACKSLASH.finditer(text)
    ]
    return _NOTE_AFTER_BACKSLASH.sub(lambda _: "\\", text), warnings


def join_dangling_flags(text: str, *, first_line: int, path: str) -> tuple[str, list[str]]:
    """The block with each line that starts with ``--`` joined to the command above it, and a
    warning for each.

    Docs often wrap a long launch over several lines and forget a trailing ``\\`` (or lose it
    in copy-editing). A shell would run each such line as a command of its own and fail, as no
    command is named ``--flag``, so the writer plainly meant it as part of the command above;
    read apart, those flags would be lost without a word. Only a line right below the end of a
    command is joined: not below a blank line, a comment, a line already ending in ``\\``, or
    one whose command is ended by ``;``, ``&``, ``&&``, ``||`` or ``|`` (or that ends in a
    comment). The ``\\`` is added at the end of the line above, so every line keeps its number.
    Raises ParseError for an unterminated quote, as reading the block would.
    """
    lines = text.split("\n")
    joins: list[int] = []  # 0-based indexes of the lines to end with `\`
    warnings: list[str] = []
    commands = split_commands(text, where=path, first_line=first_line)
    for previous, command in pairwise(commands):
        start = command.segments[0]
        index = start.line - first_line
        if not _LONG_FLAG.match(lines[index].lstrip()) or not _LONG_FLAG.match(start.text.lstrip()):
            continue  # (a `-----Time to First Token-----` rule in output is no flag)
        last = previous.segments[-1]
        tail = last.text.split("\n")[-1].rstrip()
        above = lines[index - 1].rstrip() if index > 0 else ""
        ends_above = last.line + last.text.count("\n") == start.line - 1
        # The command's own text ends the line above: nothing after it (no `;`, `&`, `|`, `\`
        # or comment), so the line break is all that parts the two.
        if not ends_above or not tail or above.endswith("\\") or not above.endswith(tail):
            continue
        joins.append(index - 1)
        warnings.append(
            f"{path}:{start.line}: `{start.text.split()[0]}` continues the command above without "
            "a trailing backslash; read as part of it"
        )
    for index in joins:
        lines[index] += " \\"
    return "\n".join(lines), warnings


# How an unlabelled block opens when it is plainly not shell: no command starts with `@type{`,
# `<tag`, `{"key":`, `["`, `[{` or `key:`. A `{` or `[` alone on the first line is JSON when the
# next line holds a JSON key or value; in shell it would open a group (`{ cmd; }`) or a test
# (`[ -f x ]`, `[[ ... ]]`), whose next words are commands and test operands.
_BIBTEX = re.compile(r"@[A-Za-z]+\s*[{(]")
_MARKUP = re.compile(r"<[A-Za-z?!/]")
_JSON_OPEN = re.compile(r'\{\s*"[^"]*"\s*:|\["|\[\s*\{')
_JSON_KEY = re.compile(r'"[^"]*"\s*:|\}')
_JSON_VALUE = re.compile(r'["{\[\]]|-?\d|(?:true|false|null)\s*,?$')
_YAML_ENTRY = re.compile(r"[A-Za-z_][\w.-]*:(?:\s|$)")
_YAML_ITEM = re.compile(r"- |-$")


def _other_language(text: str) -> str:
    """The language an unlabelled block plainly is when it is not shell, else ""."""
    meaningful = [line.strip() for line in text.split("\n") if line.strip()]
    if not meaningful:
        return ""
    first = meaningful[0]
    second = meaningful[1] if len(meaningful) > 1 else ""
    if _BIBTEX.match(first):
        return "BibTeX"
    if _MARKUP.match(first):
        return "XML/HTML"
    if (
        _JSON_OPEN.match(first)
        or (first == "{" and _JSON_KEY.match(second))
        or (first == "[" and _JSON_VALUE.match(second))
    ):
        return "JSON"
    if first == "---" or (
        _YAML_ENTRY.match(first)
        and not first.startswith(("http:", "https:"))
        and (_YAML_ENTRY.match(second) or _YAML_ITEM.match(second))
    ):
        return "YAML"
    return ""


def _line(setting: Setting) -> int:
    tail = setting.where.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 0


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
            row.append(plain_text(token))
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
    if ENV_KEY.fullmatch(key):
        return Scope.ENV
    return Scope.TABLE


def plain_text(inline: Token) -> str:
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


def fence_body_line(token: Token) -> int:
    """The 1-based line a fenced block's content starts at (the line after its fence)."""
    return token.map[0] + 2 if token.map else 1


def token_line(token: Token) -> int:
    """The 1-based line a block token starts at (0 when markdown-it gives none)."""
    return token.map[0] + 1 if token.map else 0


MAX_SECTION_CHARS = 20_000


def sections(text: str) -> list[tuple[str, str]]:
    """The document cut at its headings: (heading text, the section's Markdown source).

    Text before the first heading is the section "". Headings are found from markdown-it
    tokens, so a ``#`` inside a code block is not a heading."""
    lines = text.splitlines(keepends=True)
    tokens = tokenize(text)
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
