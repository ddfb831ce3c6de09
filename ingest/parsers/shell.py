"""Settings asserted by a shell snippet: a launch script, or a shell block in a deployment doc.

Pure: text in, :class:`Setting` values out. The snippet is first cut into simple commands
(:mod:`.shell_commands`); each command's words are then split by :mod:`shlex`, and a command that
launches a model server yields its flags (:mod:`.launch`). Nothing is executed: variable
references resolve only against assignments the snippet (or the caller's ``env``) made earlier.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from evidence.vocabulary import Scope

from .launch import flag_values, server_args
from .shell_commands import Command, split_commands
from .text import NAME, key_value
from .types import ParseError, Setting

__all__ = ["expand_vars", "scan_shell", "shell_settings"]

# `${NAME}`, `${NAME:-default}`, `${NAME-default}`; anything fancier stays literal.
_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}")
_BARE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_REDIRECT_ONLY = re.compile(r"\d*(?:>>?|<|&>>?|>&|<&|<<-?|<<<|>\|)")
_REDIRECT_GLUED = re.compile(r"\d*(?:>>?|<|&>>?|>&|<&|<<-?|<<<|>\|)\S+")

_DECLARE = frozenset({"export", "readonly", "declare", "typeset", "local"})
# Programs that run the rest of the command line: `exec env A=1 python3 ...`.
_WRAPPERS = frozenset({"exec", "nohup", "command", "builtin"})
_LEADING_KEYWORDS = frozenset({"then", "do", "done", "{", "}", "!", "time"})


@dataclass
class _Frame:
    """An open `if` or `case`: the text that opened it, the current branch and the env before."""

    opener: str
    label: str
    env_before: dict[str, str]
    kind: str = "if"


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
    for command in split_commands(text, where=where, first_line=first_line):
        scanner.run(command)
    return scanner.settings, scanner.top_env()


# --- interpreting --------------------------------------------------------------------------------


class _Interpreter:
    """Walks commands in order, tracking variables and open `if`/`case` branches."""

    def __init__(self, *, where: str, env: dict[str, str]) -> None:
        self.where = where
        self.env = env
        self.frames: list[_Frame] = []
        self.settings: list[Setting] = []
        self.previous: Command | None = None

    def top_env(self) -> dict[str, str]:
        return dict(self.frames[0].env_before) if self.frames else dict(self.env)

    def condition(self, command: Command) -> str:
        parts = [f.label for f in self.frames]
        prev = self.previous
        if command.sep_before in ("&&", "||") and prev is not None:
            prev_words = prev.raw().split()
            if prev_words and prev_words[0] in ("[", "[[", "test"):
                parts.append(f"{prev.raw()} {command.sep_before}")
        return "; ".join(parts)

    def run(self, command: Command) -> None:
        words = self._words(command)
        raw = command.raw()
        words = self._control(words, raw)
        if words:
            self._simple(words, self.condition(command))
        self.previous = command

    def _words(self, command: Command) -> list[tuple[str, int]]:
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
        found = server_args(rest)
        if found is None:
            return
        for key, value, line in flag_values(found):
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
