"""A command's text read into words the way a shell expands them, without running anything.

Pure: text and known variables in, words out. Single and double quotes, backslashes, parameter
expansions (``${VAR}``, ``${VAR:-default}``, ``${VAR:=default}``, ``${VAR:?message}``,
``${VAR:+alt}``, ``${VAR,,}``, ``${VAR^^}``, ``${#VAR}``, ``${VAR#prefix}``, ``${VAR%suffix}``),
arrays (``"${args[@]}"``: one word per element), unquoted expansions split into words,
arithmetic on known numbers (``$((8 * 2))``) and ``$(echo ...)``. What only a run could
know (``$(hostname)``, ``$((SECONDS + 5))``, backticks, an unknown ``$VAR``) stays as written,
and the word says so. Redirections (``2>&1``, ``> log``, ``<<EOF``) are not words;
``<placeholder>`` text in a command (``--port <port>``, ``<use args below>``) is one word.
"""

from __future__ import annotations

import ast
import fnmatch
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Lookup", "Value", "Word", "lex", "referenced_names"]

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n]*?[^\s<>]>|<[A-Za-z]>")
_REDIRECT = re.compile(r"(?:\d+|&)?(?:>>|>&|>\||<&|<<<|<<-|<<|<>|>|<)")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=(?!\()")
_ARRAY_ALL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[[@*]\]")
_QUOTED_ARRAY = re.compile(r'"\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}"')
_REFERENCE = re.compile(r"\$\{[#!]?([A-Za-z_][A-Za-z0-9_]*)|\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Value:
    """What a variable holds: a string, or an array's elements with their lines."""

    text: str = ""
    elements: tuple[tuple[str, int], ...] | None = None  # set for an array

    @property
    def words(self) -> list[str]:
        return [w for w, _ in self.elements] if self.elements is not None else [self.text]

    def as_text(self) -> str:
        return " ".join(self.words) if self.elements is not None else self.text


# A variable's value, or None when the snippet does not know it.
Lookup = Callable[[str], Value | None]


@dataclass(frozen=True)
class Word:
    """One word after expansion, the line it is on, and what kept it from being known."""

    text: str
    line: int
    runtime: bool = False  # holds output only a run gives: $(cmd), $((SECONDS+1)), `cmd`
    unresolved: bool = False  # holds a reference to a variable the snippet never set
    placeholder: bool = False  # <...> text a reader is meant to fill in
    quoted: bool = False  # some of it was quoted (so `)` or `{` in it are not syntax)
    assignment: bool = False  # starts with an unquoted NAME= (or NAME+=)


def referenced_names(text: str) -> set[str]:
    """The variable names ``text`` refers to (``$X``, ``${X...}``)."""
    return {a or b for a, b in _REFERENCE.findall(text)}


def lex(text: str, line: int, lookup: Lookup) -> list[Word]:
    """The words of ``text`` (starting at ``line``) after expansion with ``lookup``."""
    return _Lexer(text, line, lookup).words()


class _Lexer:
    def __init__(self, text: str, line: int, lookup: Lookup) -> None:
        self.s = text
        self.line = line
        self.lookup = lookup
        self.out: list[Word] = []
        self.cur: list[str] = []
        self.started = False
        self.word_line = line
        self.runtime = False
        self.unresolved = False
        self.placeholder = False
        self.quoted = False
        self.assigning = False  # in NAME=value: an expansion in the value is not split

    # --- building words ---------------------------------------------------------------------

    def _start(self) -> None:
        if not self.started:
            self.started = True
            self.word_line = self.line

    def _flush(self) -> None:
        if self.started:
            self.out.append(
                Word(
                    "".join(self.cur),
                    self.word_line,
                    self.runtime,
                    self.unresolved,
                    self.placeholder,
                    self.quoted,
                    self.assigning,
                )
            )
        self.cur = []
        self.started = False
        self.runtime = self.unresolved = self.placeholder = self.quoted = False
        self.assigning = False

    def _add(self, text: str) -> None:
        self._start()
        self.cur.append(text)

    def _add_split(self, text: str) -> None:
        """An unquoted expansion: its whitespace separates words."""
        if not text:
            return
        if text[0].isspace():
            self._flush()
        pieces = text.split()
        for k, piece in enumerate(pieces):
            if k:
                self._flush()
            self._add(piece)
        if text[-1].isspace():
            self._flush()

    # --- reading ------------------------------------------------------------------------------

    def words(self) -> list[Word]:
        s, n = self.s, len(self.s)
        i = 0
        while i < n:
            c = s[i]
            if c == "\n":
                self._flush()
                self.line += 1
                i += 1
            elif c in " \t\r":
                self._flush()
                i += 1
            elif c == "#" and not self.started:
                while i < n and s[i] != "\n":
                    i += 1  # a comment, e.g. inside a multi-line array
            elif not self.started and (m := _ASSIGNMENT.match(s, i)) is not None:
                self._add(m.group(0))
                self.assigning = True
                i = m.end()
            elif c == "'":
                end = s.find("'", i + 1)
                end = n if end < 0 else end
                self._add(s[i + 1 : end])
                self.quoted = True
                self.line += s.count("\n", i, end)
                i = end + 1
            elif c == '"':
                i = self._double_quoted(i)
            elif c == "\\":
                if i + 1 < n and s[i + 1] != "\n":
                    self._add(s[i + 1])
                    self.quoted = True
                i += 2
            elif c == "$":
                i = self._dollar(i, quoted=False)
            elif c == "`":
                end = s.find("`", i + 1)
                end = n if end < 0 else end
                self._add(s[i : end + 1])
                self.runtime = True
                self.line += s.count("\n", i, end)
                i = end + 1
            elif c in "<>&" or (c.isdigit() and not self.started and _REDIRECT.match(s, i)):
                i = self._angle(i)
            else:
                self._add(c)
                i += 1
        self._flush()
        return self.out

    def _angle(self, i: int) -> int:
        s = self.s
        if s[i] == "<":
            m = _PLACEHOLDER.match(s, i)
            if m is not None:
                self._add(m.group(0))
                self.placeholder = True
                return m.end()
        m = _REDIRECT.match(s, i)
        if m is None or (s[i] == "&" and not s.startswith("&>", i)):
            self._add(s[i])
            return i + 1
        self._flush()
        j = m.end()
        if m.group(0).endswith("&") and j < len(s) and (s[j].isdigit() or s[j] == "-"):
            j += 1
            while j < len(s) and s[j].isdigit():
                j += 1
            return j  # 2>&1, >&-
        # The target word (a file, or a heredoc's delimiter) is not an argument.
        while j < len(s) and s[j] in " \t":
            j += 1
        return j + _Lexer(s[j:], self.line, self.lookup).first_word_end()

    def first_word_end(self) -> int:
        """Where the first word of this text ends (quotes and expansions included)."""
        s, n = self.s, len(self.s)
        i = 0
        while i < n and s[i] not in " \t\n;&|<>":
            if s[i] == "'":
                end = s.find("'", i + 1)
                i = n if end < 0 else end + 1
            elif s[i] == '"':
                i = self._double_quoted(i)
            elif s[i] == "$":
                i = self._dollar(i, quoted=False)
            else:
                i += 1
        return i

    def _double_quoted(self, i: int) -> int:
        s, n = self.s, len(self.s)
        # "${args[@]}" and "$@" as a whole word: one word per element.
        m = _QUOTED_ARRAY.match(s, i)
        if m is not None and not self.started:
            value = self.lookup(m.group(1))
            if value is not None:
                self._elements(value)
                return m.end()
        self._start()
        self.quoted = True
        i += 1
        while i < n and s[i] != '"':
            c = s[i]
            if c == "\\" and i + 1 < n and s[i + 1] in '"\\$`\n':
                if s[i + 1] != "\n":
                    self.cur.append(s[i + 1])
                i += 2
            elif c == "$":
                i = self._dollar(i, quoted=True)
            elif c == "`":
                end = s.find("`", i + 1)
                end = n if end < 0 else end
                self.cur.append(s[i : end + 1])
                self.runtime = True
                i = end + 1
            else:
                if c == "\n":
                    self.line += 1
                self.cur.append(c)
                i += 1
        return i + 1

    def _elements(self, value: Value) -> None:
        """An array spliced into the command: each element is a word, at its own line (a
        string spliced as an array is split at its blanks, as the doc's author meant)."""
        self._flush()
        if value.elements is None:
            for piece in value.text.split():
                self.out.append(Word(piece, self.line))
            return
        for text, line in value.elements:
            self.out.append(Word(text, line, quoted=True))

    # --- expansions ---------------------------------------------------------------------------

    def _literal(self, text: str, *, runtime: bool = False, unresolved: bool = False) -> None:
        self._add(text)
        self.runtime = self.runtime or runtime
        self.unresolved = self.unresolved or unresolved

    def _value(self, text: str, quoted: bool) -> None:
        if quoted or self.assigning:
            self._start()
            self.cur.append(text)
        else:
            self._add_split(text)  # an unquoted expansion is split into words

    def _dollar(self, i: int, *, quoted: bool) -> int:
        s, n = self.s, len(self.s)
        if s.startswith("$((", i):
            end = _matching(s, i + 1)
            number = _arithmetic(s[i + 3 : end - 1], self.lookup)
            if number is None:
                self._literal(s[i : end + 1], runtime=True)
            else:
                self._value(number, quoted)
            return end + 1
        if s.startswith("$(", i):
            end = _matching(s, i + 1)
            echoed = _echo(s[i + 2 : end], self.line, self.lookup)
            if echoed is None:
                self._literal(s[i : end + 1], runtime=True)
            else:
                self._value(echoed, quoted)
            return end + 1
        if s.startswith("${", i):
            end = _matching(s, i + 1, "{", "}")
            expr = s[i + 2 : end]
            if _ARRAY_ALL.fullmatch(expr) and not quoted and not self.started:
                value = self.lookup(expr.split("[", 1)[0])
                if value is not None:
                    self._elements(value)
                    return end + 1
            text = _parameter(expr, self.line, self.lookup)
            if text is None:
                self._literal(s[i : end + 1], unresolved=True)
            else:
                self._value(text, quoted)
            return end + 1
        m = NAME_RE.match(s, i + 1)
        if m is not None:
            value = self.lookup(m.group(0))
            if value is None:
                self._literal(s[i : m.end()], unresolved=True)
            else:
                self._value(value.as_text(), quoted)
            return m.end()
        # $1, $@, $?, $$: what a run gives.
        if i + 1 < n and (s[i + 1].isdigit() or s[i + 1] in "@*#?$!-"):
            self._literal(s[i : i + 2], unresolved=True)
            return i + 2
        self._add("$")
        return i + 1


def _matching(s: str, open_at: int, opening: str = "(", closing: str = ")") -> int:
    """Index of the bracket closing the one at ``open_at`` (quotes skipped), or len - 1."""
    depth = 0
    i = open_at
    quote = ""
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(s) - 1


def _parameter(expr: str, line: int, lookup: Lookup) -> str | None:
    """``${expr}``'s value, or None when it cannot be known."""
    if expr.startswith("#"):
        value = lookup(expr[1:].split("[", 1)[0]) if NAME_RE.fullmatch(expr[1:]) else None
        return None if value is None else str(len(value.text))
    m = NAME_RE.match(expr)
    if m is None:
        return None
    name, rest = m.group(0), expr[m.end() :]
    value = lookup(name)
    if rest.startswith("["):
        index = rest[1 : rest.find("]")] if "]" in rest else ""
        rest = rest[rest.find("]") + 1 :] if "]" in rest else ""
        elements = value.elements if value is not None else None
        if elements is not None:
            if index in ("@", "*"):
                value = Value(" ".join(w for w, _ in elements))
            elif index.isdigit() and int(index) < len(elements):
                value = Value(elements[int(index)][0])
            else:
                value = None
        if rest:
            return None
    text = None if value is None else value.as_text()
    if not rest:
        return text

    def word(w: str) -> str | None:
        words = lex(w, line, lookup)
        if any(x.runtime or x.unresolved for x in words):
            return None
        return " ".join(x.text for x in words)

    for op in (":-", ":=", ":?", ":+", "-", "=", "?", "+"):
        if rest.startswith(op):
            arg = rest[len(op) :]
            unset = text is None or (op.startswith(":") and text == "")
            if op in (":-", ":=", "-", "="):
                return word(arg) if unset else text
            if op in (":?", "?"):
                return None if unset else text
            return ("" if unset else word(arg)) if op in (":+", "+") else None
    if text is None:
        return None
    cases: dict[str, Callable[[str], str]] = {
        ",,": str.lower,
        "^^": str.upper,
        ",": lambda t: t[:1].lower() + t[1:],
        "^": lambda t: t[:1].upper() + t[1:],
    }
    if rest in cases:
        return cases[rest](text)
    for op in ("##", "#", "%%", "%"):
        if rest.startswith(op):
            pattern = word(rest[len(op) :])
            return None if pattern is None else _strip(text, pattern, op)
    return None  # ${X/a/b}, ${X:1:2}, ...: not needed for settings


def _strip(text: str, pattern: str, op: str) -> str:
    spans = range(len(text) + 1)
    if op.startswith("#"):
        cuts = [k for k in spans if fnmatch.fnmatchcase(text[:k], pattern)]
        if not cuts:
            return text
        return text[(max(cuts) if op == "##" else min(cuts)) :]
    cuts = [k for k in spans if fnmatch.fnmatchcase(text[k:], pattern)]
    if not cuts:
        return text
    return text[: (min(cuts) if op == "%%" else max(cuts))]


_OPERATORS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def _arithmetic(expr: str, lookup: Lookup) -> str | None:
    """``$((expr))`` on known integers (+ - * / %), or None."""

    def number(m: re.Match[str]) -> str:
        value = lookup(m.group(1) or m.group(2))
        text = value.text.strip() if value is not None else ""
        return text if re.fullmatch(r"-?\d+", text) else "x"

    text = re.sub(r"\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?|\$([A-Za-z_]\w*)", number, expr)
    text = text.replace("/", "//")
    if not re.fullmatch(r"[\d\s+\-*/%()]+", text):
        return None
    try:
        return str(_evaluate(ast.parse(text, mode="eval").body))
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return None


def _evaluate(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if abs(left) > 2**63 or abs(right) > 2**63:
            raise ValueError("too big")
        return _OPERATORS[type(node.op)](left, right)
    raise ValueError("not arithmetic")


def _echo(command: str, line: int, lookup: Lookup) -> str | None:
    """``$(echo words)``: the words, joined; None for any other command."""
    words = lex(command, line, lookup)
    if not words or words[0].text != "echo" or words[0].quoted:
        return None
    rest = words[1:]
    while rest and rest[0].text in ("-n", "-e", "-E"):
        rest = rest[1:]
    if any(w.runtime or w.unresolved for w in rest):
        return None
    return " ".join(w.text for w in rest)


def mapping_lookup(values: Mapping[str, str]) -> Lookup:
    """A :data:`Lookup` over plain string values."""

    def lookup(name: str) -> Value | None:
        text = values.get(name)
        return None if text is None else Value(text)

    return lookup


def join_words(words: Sequence[Word]) -> str:
    return " ".join(w.text for w in words)
