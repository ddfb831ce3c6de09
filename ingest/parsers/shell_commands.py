"""A shell snippet cut into simple commands, each piece with its physical line.

Pure: text in, :class:`Command` values out. A small quote-aware scanner (comments, ``\\``
continuations, ``;``/``&&``/``|`` separators, heredocs, ``$ `` console prompts); splitting a
command into words is left to :mod:`shlex` by the caller (:mod:`.shell`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .types import ParseError


@dataclass
class Segment:
    """A stretch of one command that sits on one physical line (or one multi-line string)."""

    text: str
    line: int


@dataclass
class Command:
    """One simple command: its pieces, and the separator before it (a newline, ``;``, ``&&``...)."""

    segments: list[Segment] = field(default_factory=list)
    sep_before: str = "\n"

    def raw(self) -> str:
        return " ".join(" ".join(s.text.split()) for s in self.segments).strip()


def strip_console_prompts(text: str) -> str:
    """Keep the commands of a console transcript, dropping its output.

    Lines starting with a ``$ `` prompt are kept without the prompt, as are continuation lines
    of a command ending in ``\\`` (with any ``> `` prompt removed); output lines become empty so
    that line numbers still match. Text without any prompt is returned unchanged.
    """
    lines = text.split("\n")
    if not any(prompted(line) is not None for line in lines):
        return text
    out: list[str] = []
    continuing = False
    for line in lines:
        command = prompted(line)
        if command is not None:
            out.append(command)
            continuing = command.rstrip().endswith("\\")
        elif continuing:
            stripped = line.lstrip()
            kept = stripped[2:] if stripped.startswith("> ") else line
            out.append(kept)
            continuing = kept.rstrip().endswith("\\")
        else:
            out.append("")
    return "\n".join(out)


def prompted(line: str) -> str | None:
    stripped = line.lstrip()
    if stripped.startswith("$ "):
        return stripped[2:]
    if stripped == "$":
        return ""
    return None


def split_commands(text: str, *, where: str, first_line: int) -> list[Command]:
    """Cut the snippet into simple commands, keeping each piece's physical line number.

    What a shell reads as one word stays whole across separators and newlines: quotes, command
    and arithmetic substitutions (``$(...)``, ``$((...))``, backticks), ``${...}`` and array
    assignments (``args=(`` ... ``)`` over several lines, with comments inside). A piece that
    spans lines keeps its first line; the words in it count their own lines from there.
    """
    commands: list[Command] = []
    current = Command()
    buf: list[str] = []
    seg_line = first_line
    quote = ""
    quote_line = first_line
    # Open nesting, innermost last: "$(" (also for `$((`), "(" (an array or a nested
    # parenthesis), "${", "`".
    nest: list[str] = []
    heredocs: list[tuple[str, bool]] = []
    skipping: tuple[str, bool] | None = None

    def flush_segment() -> None:
        if "".join(buf).strip():
            current.segments.append(Segment("".join(buf), seg_line))
        buf.clear()

    def end_command(sep: str) -> None:
        nonlocal current
        flush_segment()
        if current.segments:
            commands.append(current)
        current = Command(sep_before=sep)

    for offset, physical in enumerate(text.split("\n")):
        lineno = first_line + offset
        line = physical.rstrip("\r")
        if skipping is not None:
            delimiter, strip_tabs = skipping
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                skipping = heredocs.pop(0) if heredocs else None
            continue
        if not quote and not nest and not buf and not current.segments:
            prompt = prompted(line)
            if prompt is not None:
                line = prompt
        continuation = False
        j = 0
        n = len(line)
        while j < n:
            c = line[j]
            if not buf:
                seg_line = lineno
            if quote == "'":
                buf.append(c)
                if c == "'":
                    quote = ""
                j += 1
                continue
            if quote == '"':
                if c == "\\" and j + 1 < n:
                    buf.append(line[j : j + 2])
                    j += 2
                    continue
                if c == "$" and line.startswith("$(", j):
                    nest += ['"', "$("]  # a substitution inside double quotes
                    quote = ""
                    buf.append("$(")
                    j += 2
                    continue
                buf.append(c)
                if c == '"':
                    quote = ""
                j += 1
                continue
            if c == "\\":
                if not line[j + 1 :].strip():
                    continuation = True
                    break
                buf.append(line[j : j + 2])
                j += 2
                continue
            if c in "'\"":
                quote = c
                quote_line = lineno
                buf.append(c)
                j += 1
                continue
            if c == "`":
                if nest and nest[-1] == "`":
                    nest.pop()
                else:
                    nest.append("`")
                buf.append(c)
                j += 1
                continue
            if c == "$" and line.startswith("$(", j):
                nest.append("$(")
                buf.append("$(")
                j += 2
                continue
            if c == "$" and line.startswith("${", j):
                nest.append("${")
                buf.append("${")
                j += 2
                continue
            if (
                c == "["
                and line.startswith("[[", j)
                and (j == 0 or line[j - 1] in " \t;&|(!")
                and line[j + 2 : j + 3] in (" ", "\t", "")
            ):
                nest.append("[[")  # a test: its `||`, `&&`, `<` and `>` are operators of it
                buf.append("[[")
                j += 2
                continue
            if c == "]" and nest and nest[-1] == "[[" and line.startswith("]]", j):
                nest.pop()
                buf.append("]]")
                j += 2
                continue
            if c == "(" and (nest or _opens_array(buf)):
                nest.append("(")
                buf.append(c)
                j += 1
                continue
            if c == ")" and nest and nest[-1] in ("$(", "("):
                opener = nest.pop()
                buf.append(c)
                j += 1
                if opener == "$(" and nest and nest[-1] == '"':
                    nest.pop()
                    quote = '"'
                continue
            if c == "}" and nest and nest[-1] == "${":
                nest.pop()
                buf.append(c)
                j += 1
                continue
            if c == "#" and (j == 0 or line[j - 1] in " \t;&|("):
                break
            if nest and nest[-1] != '"':
                buf.append(c)  # separators inside a substitution or an array are its text
                j += 1
                continue
            if line.startswith("<<", j) and not line.startswith("<<<", j):
                j = _read_heredoc(line, j, buf, heredocs)
                continue
            if c in ";&|":
                glued_redirect = (c == "&" and j > 0 and line[j - 1] in "<>") or (
                    c == "&" and line[j + 1 : j + 2] == ">"
                )
                if glued_redirect or (c == "|" and j > 0 and line[j - 1] == ">"):
                    buf.append(c)
                    j += 1
                    continue
                op = c * 2 if line[j + 1 : j + 2] == c else c
                end_command(op)
                j += len(op)
                continue
            buf.append(c)
            j += 1
        if quote or nest:
            buf.append("\n")
        elif continuation:
            flush_segment()
        else:
            end_command("\n")
        if not quote and not nest and heredocs and skipping is None:
            skipping = heredocs.pop(0)
    if quote:
        kind = "single" if quote == "'" else "double"
        raise ParseError(
            where,
            quote_line,
            f"unterminated {kind}-quoted string: expected a closing {quote} before the end",
        )
    end_command("\n")  # an unclosed `$(` or array runs to the end, as a shell would wait
    return commands


def _opens_array(buf: list[str]) -> bool:
    """Whether the text before a ``(`` is ``NAME=`` or ``NAME+=``: an array assignment."""
    tail = "".join(buf[-80:]).rstrip()
    word = tail.split()[-1] if tail.split() else ""
    name = word[:-2] if word.endswith("+=") else word[:-1] if word.endswith("=") else ""
    return bool(name) and (name[0].isalpha() or name[0] == "_") and name.replace("_", "a").isalnum()


def _read_heredoc(line: str, j: int, buf: list[str], heredocs: list[tuple[str, bool]]) -> int:
    """Note a ``<<WORD`` heredoc so its body lines are skipped; return the index after it."""
    k = j + 2
    strip_tabs = line.startswith("-", k)
    if strip_tabs:
        k += 1
    while k < len(line) and line[k] in " \t":
        k += 1
    start = k
    while k < len(line) and line[k] not in " \t;&|<>":
        k += 1
    word = line[start:k]
    delimiter = word.replace("'", "").replace('"', "").replace("\\", "")
    if delimiter:
        heredocs.append((delimiter, strip_tabs))
    buf.append(line[j:k])
    return k
