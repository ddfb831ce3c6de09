"""Settings asserted by a shell snippet: a launch script, or a shell block in a deployment doc.

Pure: text in, :class:`Setting` values out. The snippet is first cut into simple commands by a
small quote-aware scanner (comments, ``\\`` continuations, ``;``/``&&``/``|`` separators,
heredocs); each command's words are then split by :mod:`shlex`. Nothing is executed: variable
references resolve only against assignments the snippet (or the caller's ``env``) made earlier.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evidence.vocabulary import Scope

from .text import NAME, key_value
from .types import ParseError, Setting

__all__ = [
    "expand_vars",
    "launch_flags",
    "scan_shell",
    "shell_settings",
    "strip_console_prompts",
]

# `${NAME}`, `${NAME:-default}`, `${NAME-default}`; anything fancier stays literal.
_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}")
_BARE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_REDIRECT_ONLY = re.compile(r"\d*(?:>>?|<|&>>?|>&|<&|<<-?|<<<|>\|)")
_REDIRECT_GLUED = re.compile(r"\d*(?:>>?|<|&>>?|>&|<&|<<-?|<<<|>\|)\S+")
_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?|pypy3?")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")

# Programs that are servers themselves: every `--flag` after the program name is a setting.
_SERVER_PROGRAMS = frozenset(
    {"text-generation-launcher", "trtllm-serve", "llama-server", "tritonserver"}
)
# `vllm serve MODEL --flags`, `sglang serve --flags`.
_SERVE_SUBCOMMANDS = frozenset({"vllm", "sglang"})
_DECLARE = frozenset({"export", "readonly", "declare", "typeset", "local"})
# Programs that run the rest of the command line: `exec env A=1 python3 ...`.
_WRAPPERS = frozenset({"exec", "nohup", "command", "builtin"})
_LEADING_KEYWORDS = frozenset({"then", "do", "done", "{", "}", "!", "time"})


@dataclass
class _Segment:
    """A stretch of one command that sits on one physical line (or one multi-line string)."""

    text: str
    line: int


@dataclass
class _Command:
    segments: list[_Segment] = field(default_factory=list)
    sep_before: str = "\n"

    def raw(self) -> str:
        return " ".join(" ".join(s.text.split()) for s in self.segments).strip()


@dataclass
class _Frame:
    """An open `if` or `case`: the text that opened it, the current branch and the env before."""

    opener: str
    label: str
    env_before: dict[str, str]
    kind: str = "if"


def strip_console_prompts(text: str) -> str:
    """Keep the commands of a console transcript, dropping its output.

    Lines starting with a ``$ `` prompt are kept without the prompt, as are continuation lines
    of a command ending in ``\\`` (with any ``> `` prompt removed); output lines become empty so
    that line numbers still match. Text without any prompt is returned unchanged.
    """
    lines = text.split("\n")
    if not any(_prompted(line) is not None for line in lines):
        return text
    out: list[str] = []
    continuing = False
    for line in lines:
        command = _prompted(line)
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


def _prompted(line: str) -> str | None:
    stripped = line.lstrip()
    if stripped.startswith("$ "):
        return stripped[2:]
    if stripped == "$":
        return ""
    return None


def expand_vars(text: str, env: Mapping[str, str]) -> str:
    """Replace ``$NAME``, ``${NAME}`` and ``${NAME:-default}`` known in ``env``; keep the rest."""
    return _BARE.sub(lambda m: _bare_value(m, env), _BRACED.sub(lambda m: _braced(m, env), text))


def _braced(match: re.Match[str], env: Mapping[str, str]) -> str:
    name, op, default = match.group(1), match.group(2), match.group(3)
    if name in env and not (op == ":-" and env[name] == ""):
        return env[name]
    if op is not None:
        return default
    return match.group(0)


def _bare_value(match: re.Match[str], env: Mapping[str, str]) -> str:
    return env.get(match.group(1), match.group(0))


def shell_settings(
    text: str, *, where: str, first_line: int = 1, env: dict[str, str] | None = None
) -> list[Setting]:
    """Settings a shell snippet asserts: assignments, exports and server launch flags.

    ``where`` names the file; each setting's ``where`` is ``"<where>:<line>"`` of the line it is
    on, counting the snippet's first line as ``first_line``. ``env`` holds assignments already
    in force (it is not modified). Raises ParseError for an unterminated quote.
    """
    settings, _ = scan_shell(text, where=where, first_line=first_line, env=env)
    return settings


def scan_shell(
    text: str, *, where: str, first_line: int = 1, env: dict[str, str] | None = None
) -> tuple[list[Setting], dict[str, str]]:
    """Like :func:`shell_settings`, also returning the unconditional variables at the end.

    The returned mapping lets a caller carry assignments from one snippet to the next (shell
    blocks of one document, read in order).
    """
    scanner = _Interpreter(where=where, env=dict(env or {}))
    for command in _split_commands(text, where=where, first_line=first_line):
        scanner.run(command)
    return scanner.settings, scanner.top_env()


def launch_flags(words: Sequence[str]) -> list[tuple[str, str]] | None:
    """The ``(flag, value)`` pairs of a server launch command, or None if it launches no server.

    ``words`` are already split (e.g. a Kubernetes ``command`` + ``args`` list). A flag without
    a value gets ``"true"``; several values after one flag are joined with spaces.
    """
    tagged = [(w, 0) for w in words]
    found = _server_args(tagged)
    if found is None:
        return None
    return [(key, value) for key, value, _ in _flags(found)]


# --- scanning ------------------------------------------------------------------------------------


def _split_commands(text: str, *, where: str, first_line: int) -> list[_Command]:
    """Cut the snippet into simple commands, keeping each piece's physical line number."""
    commands: list[_Command] = []
    current = _Command()
    buf: list[str] = []
    seg_line = first_line
    quote = ""
    quote_line = first_line
    heredocs: list[tuple[str, bool]] = []
    skipping: tuple[str, bool] | None = None

    def flush_segment() -> None:
        if "".join(buf).strip():
            current.segments.append(_Segment("".join(buf), seg_line))
        buf.clear()

    def end_command(sep: str) -> None:
        nonlocal current
        flush_segment()
        if current.segments:
            commands.append(current)
        current = _Command(sep_before=sep)

    for offset, physical in enumerate(text.split("\n")):
        lineno = first_line + offset
        line = physical.rstrip("\r")
        if skipping is not None:
            delimiter, strip_tabs = skipping
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                skipping = heredocs.pop(0) if heredocs else None
            continue
        if not quote and not buf and not current.segments:
            prompt = _prompted(line)
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
            if c == "#" and (j == 0 or line[j - 1] in " \t;&|("):
                break
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
        if quote:
            buf.append("\n")
        elif continuation:
            flush_segment()
        else:
            end_command("\n")
        if not quote and heredocs and skipping is None:
            skipping = heredocs.pop(0)
    if quote:
        kind = "single" if quote == "'" else "double"
        raise ParseError(
            where,
            quote_line,
            f"unterminated {kind}-quoted string: expected a closing {quote} before the end",
        )
    end_command("\n")
    return commands


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


# --- interpreting --------------------------------------------------------------------------------


class _Interpreter:
    """Walks commands in order, tracking variables and open `if`/`case` branches."""

    def __init__(self, *, where: str, env: dict[str, str]) -> None:
        self.where = where
        self.env = env
        self.frames: list[_Frame] = []
        self.settings: list[Setting] = []
        self.previous: _Command | None = None

    def top_env(self) -> dict[str, str]:
        return dict(self.frames[0].env_before) if self.frames else dict(self.env)

    def condition(self, command: _Command) -> str:
        parts = [f.label for f in self.frames]
        prev = self.previous
        if command.sep_before in ("&&", "||") and prev is not None:
            prev_words = prev.raw().split()
            if prev_words and prev_words[0] in ("[", "[[", "test"):
                parts.append(f"{prev.raw()} {command.sep_before}")
        return "; ".join(parts)

    def run(self, command: _Command) -> None:
        words = self._words(command)
        raw = command.raw()
        words = self._control(words, raw)
        if words:
            self._simple(words, self.condition(command))
        self.previous = command

    def _words(self, command: _Command) -> list[tuple[str, int]]:
        words: list[tuple[str, int]] = []
        for seg in command.segments:
            expanded = _expand_shell(seg.text, self.env)
            try:
                split = shlex.split(expanded, posix=True)
            except ValueError as exc:
                raise ParseError(self.where, seg.line, f"expected shell words: {exc}") from exc
            words.extend((w, seg.line) for w in split)
        return _drop_redirections(words)

    def _control(self, words: list[tuple[str, int]], raw: str) -> list[tuple[str, int]]:
        """Handle `if`/`elif`/`else`/`fi` and `case`; return the words of the remaining command."""
        while words:
            word = words[0][0]
            frame = self.frames[-1] if self.frames else None
            if word == "if":
                opener = raw if raw.startswith("if") else shlex.join(w for w, _ in words)
                self.frames.append(_Frame(opener=opener, label=opener, env_before=dict(self.env)))
                return []
            if word == "elif" and frame is not None:
                text = raw if raw.startswith("elif") else shlex.join(w for w, _ in words)
                frame.label = f"{text} of {frame.opener}"
                self.env = dict(frame.env_before)
                return []
            if word == "else" and frame is not None:
                frame.label = f"else of {frame.opener}"
                self.env = dict(frame.env_before)
                words = words[1:]
                continue
            if word in ("fi", "esac") and frame is not None:
                self.frames.pop()
                self.env = frame.env_before
                words = words[1:]
                continue
            if word == "case":
                opener = raw if raw.startswith("case") else shlex.join(w for w, _ in words)
                self.frames.append(
                    _Frame(opener=opener, label=opener, env_before=dict(self.env), kind="case")
                )
                return []
            if (
                frame is not None
                and frame.kind == "case"
                and word.endswith(")")
                and "=" not in word
            ):
                frame.label = f"{frame.opener} {word}"
                self.env = dict(frame.env_before)
                words = words[1:]
                continue
            if word in _LEADING_KEYWORDS:
                words = words[1:]
                continue
            break
        return words

    def _simple(self, words: list[tuple[str, int]], condition: str) -> None:
        idx = 0
        while idx < len(words) and key_value(words[idx][0]) is not None:
            idx += 1
        prefix, rest = words[:idx], words[idx:]
        if not rest:
            for word, line in prefix:
                self._assign(word, line, condition, persist=True)
            return
        while len(rest) > 1 and rest[0][0] in _WRAPPERS:
            rest = rest[1:]
        program = rest[0][0]
        if program in _DECLARE:
            for word, line in rest[1:]:
                if key_value(word) is not None:
                    self._assign(word, line, condition, persist=True)
            return
        if program == "unset":
            for word, _ in rest[1:]:
                self._unset(word, condition)
            return
        # `A=1 cmd`: the assignment holds for that command only, so later lines don't see it.
        for word, line in prefix:
            self._assign(word, line, condition, persist=False)
        if program == "env":
            for word, line in rest[1:]:
                if key_value(word) is None:
                    break
                self._assign(word, line, condition, persist=False)
        found = _server_args(rest)
        if found is None:
            return
        for key, value, line in _flags(found):
            self.settings.append(Setting(key, value, Scope.FLAG, f"{self.where}:{line}", condition))

    def _assign(self, word: str, line: int, condition: str, *, persist: bool) -> None:
        pair = key_value(word)
        assert pair is not None  # callers only pass assignment words
        name, value = pair
        self.settings.append(Setting(name, value, Scope.ENV, f"{self.where}:{line}", condition))
        if persist:
            self.env[name] = value

    def _unset(self, name: str, condition: str) -> None:
        if not NAME.fullmatch(name):
            return
        self.env.pop(name, None)
        self.settings = [
            s
            for s in self.settings
            if not (s.key == name and s.scope == Scope.ENV and s.condition == condition)
        ]


def _expand_shell(text: str, env: Mapping[str, str]) -> str:
    """Expand known variables outside single quotes, re-quoting values so shlex keeps them whole."""
    out: list[str] = []
    quote = ""
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if quote == "'":
            out.append(c)
            quote = "" if c == "'" else quote
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            out.append(text[i : i + 2])
            i += 2
            continue
        if c in "'\"" and (not quote or c == quote):
            quote = "" if quote else c
            out.append(c)
            i += 1
            continue
        if c == "$":
            match = _BRACED.match(text, i) or _BARE.match(text, i)
            if match is not None:
                value = expand_vars(match.group(0), env)
                if value == match.group(0):
                    out.append(value)
                elif quote == '"':
                    out.append(value.replace("\\", "\\\\").replace('"', '\\"'))
                else:
                    out.append(shlex.quote(value))
                i = match.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _drop_redirections(words: list[tuple[str, int]]) -> list[tuple[str, int]]:
    kept: list[tuple[str, int]] = []
    skip_next = False
    for word, line in words:
        if skip_next:
            skip_next = False
            continue
        if _REDIRECT_ONLY.fullmatch(word):
            skip_next = True
            continue
        if _REDIRECT_GLUED.fullmatch(word) and not word.startswith("--"):
            continue
        kept.append((word, line))
    return kept


def _server_args(words: Sequence[tuple[str, int]]) -> list[tuple[str, int]] | None:
    """The words after the server program in a command, or None if it launches no server."""
    for i, (word, _) in enumerate(words):
        base = posixpath.basename(word)
        if _PYTHON.fullmatch(base):
            return _python_server_args(words, i)
        nxt = words[i + 1][0] if i + 1 < len(words) else ""
        if base in _SERVE_SUBCOMMANDS and nxt == "serve":
            return _skip_positionals(list(words[i + 2 :]))
        if base in _SERVER_PROGRAMS:
            return _skip_positionals(list(words[i + 1 :]))
    return None


def _python_server_args(words: Sequence[tuple[str, int]], i: int) -> list[tuple[str, int]] | None:
    j = i + 1
    # Interpreter options (`-u`, `-O`, `-X dev`) come before `-m`.
    while j < len(words) and words[j][0].startswith("-") and words[j][0] != "-m":
        j += 2 if words[j][0] in ("-X", "-W") else 1
    if j >= len(words):
        return None
    if words[j][0] == "-m" and j + 1 < len(words):
        module = words[j + 1][0]
        if module.split(".")[0] in ("sglang", "vllm") or "launch_server" in module:
            return list(words[j + 2 :])
        return None
    if posixpath.basename(words[j][0]) in ("launch_server.py", "api_server.py"):
        return list(words[j + 1 :])
    return None


def _skip_positionals(words: list[tuple[str, int]]) -> list[tuple[str, int]]:
    # `vllm serve MODEL --flags`: the model is positional; settings start at the first flag.
    for k, (word, _) in enumerate(words):
        if word.startswith("-"):
            return words[k:]
    return []


def _is_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and not _NUMBER.fullmatch(word)


def _flags(words: Sequence[tuple[str, int]]) -> list[tuple[str, str, int]]:
    """``--flag value``, ``--flag=value`` and bare ``--flag`` (value "true"), in order."""
    out: list[tuple[str, str, int]] = []
    k = 0
    while k < len(words):
        word, line = words[k]
        k += 1
        if not _is_flag(word):
            continue  # a stray positional argument
        if word.startswith("--") and "=" in word:
            key, value = word.split("=", 1)
            out.append((key, value, line))
            continue
        values: list[str] = []
        while k < len(words) and not _is_flag(words[k][0]):
            values.append(words[k][0])
            k += 1
        out.append((word, " ".join(values) if values else "true", line))
    return out
