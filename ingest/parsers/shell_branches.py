"""Conditions in shell text: ``if``/``elif``/``else``/``fi``, ``case``/``esac``, loops,
functions and ``{ }`` groups, and ``[ test ]`` decided when its operands are known.

A branch whose test compares known values is taken or skipped as a shell would; otherwise every
branch is read from the state before the ``if``, and after ``fi`` a variable holds each
branch's value under its condition (see :mod:`.shell`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

from .shell_state import Frame, ShellState, Vars, copy_vars
from .shell_words import Word, lex

__all__ = ["BranchesMixin", "evaluate_test"]

_FUNCTION = re.compile(
    r"\s*(?:function\s+([A-Za-z_][\w.:-]*)\s*(?:\(\s*\))?|([A-Za-z_][\w.:-]*)\s*\(\s*\))\s*(\{)?(.*)$",
    re.DOTALL,
)
_LEADING_KEYWORDS = frozenset({"then", "do", "!", "time"})
_LOOPS = frozenset({"while", "until", "for", "select"})


class BranchesMixin(ShellState):
    """Opening, deciding and closing the frames of conditions, loops, functions and groups."""

    def _control(self, text: str, raw: str, line: int) -> tuple[str, str]:
        """Handle ``if``/``elif``/``else``/``fi``, ``case``/``esac``, loops, functions and
        ``{ }``; return the text of the command that remains to run."""
        while True:
            stripped = text.lstrip()
            first = stripped.split(None, 1)[0] if stripped else ""
            rest = stripped[len(first) :]
            frame = self.frames[-1] if self.frames else None
            if not stripped:
                return "", ""
            if self.pending_function and first == "{":
                self._open_function(self.pending_function)
                self.pending_function = ""
                text = rest
                continue
            self.pending_function = ""
            function = _FUNCTION.match(stripped) if first not in ("if", "case") else None
            if function is not None and (function.group(3) or not function.group(4).strip()):
                name = function.group(1) or function.group(2)
                if function.group(3):
                    self._open_function(name)
                    text = function.group(4)
                    continue
                self.pending_function = name
                return "", ""
            if first == "if":
                self._open_if(rest, stripped, line)
                return "", ""
            if first == "elif" and frame is not None and frame.kind == "if":
                self._elif(frame, rest, stripped, line)
                return "", ""
            if first == "else" and frame is not None and frame.kind == "if":
                self._else(frame)
                text = rest
                continue
            if first == "fi" and frame is not None and frame.kind == "if":
                self._close_branches(self.frames.pop())
                text = rest
                continue
            if first == "case":
                self._open_case(rest, stripped, line)
                return "", ""
            if first == "esac" and frame is not None and frame.kind == "case":
                self._close_branches(self.frames.pop())
                text = rest
                continue
            if frame is not None and frame.kind == "case" and _is_pattern(first):
                pattern, _, after = stripped.partition(")")
                self._case_branch(frame, pattern.strip())
                text = after
                continue
            if first in _LOOPS:
                self.frames.append(Frame("loop", parent_active=self.active, active=self.active))
                return "", ""
            if first == "done" and frame is not None and frame.kind == "loop":
                self.frames.pop()
                text = rest
                continue
            if first == "{":
                self.frames.append(Frame("group", parent_active=self.active, active=self.active))
                text = rest
                continue
            if first == "}" and frame is not None and frame.kind in ("group", "function"):
                self.frames.pop()
                text = rest
                continue
            if first in _LEADING_KEYWORDS:
                text = rest
                continue
            return text, raw

    def _open_function(self, name: str) -> None:
        self.frames.append(
            Frame("function", name=name, parent_active=self.active, active=self.active)
        )

    def _open_if(self, test: str, opener: str, line: int) -> None:
        frame = Frame("if", opener=opener, label=opener, parent_active=self.active)
        frame.vars_before = copy_vars(self.vars)
        if not frame.parent_active:
            frame.active, frame.mode = False, "closed"
        else:
            verdict = self._test(test, line)
            if verdict is None:
                frame.mode, frame.active = "undecided", True
            else:
                frame.mode, frame.active = ("taken", True) if verdict else ("deciding", False)
        self.frames.append(frame)

    def _elif(self, frame: Frame, test: str, text: str, line: int) -> None:
        frame.label = f"{text} of {frame.opener}"
        if frame.mode in ("closed", "taken"):
            frame.mode, frame.active = "closed", False
            return
        verdict = self._test(test, line) if frame.parent_active else False
        if frame.mode == "deciding":
            if verdict is None:
                frame.mode, frame.active = "undecided", True
            else:
                frame.mode, frame.active = ("taken", True) if verdict else ("deciding", False)
            return
        self._end_branch(frame)  # undecided: this branch starts from the state before the if
        frame.active = verdict is not False

    def _else(self, frame: Frame) -> None:
        frame.label = f"else of {frame.opener}"
        frame.has_else = True
        if frame.mode in ("closed", "taken"):
            frame.mode, frame.active = "closed", False
        elif frame.mode == "deciding":
            frame.mode, frame.active = "taken", frame.parent_active
        else:
            self._end_branch(frame)
            frame.active = True

    def _open_case(self, rest: str, opener: str, line: int) -> None:
        frame = Frame("case", opener=opener, label=opener, parent_active=self.active)
        frame.vars_before = copy_vars(self.vars)
        frame.active = False  # nothing runs before the first pattern
        words = lex(rest.rsplit(" in", 1)[0], line, self._lookup())
        if len(words) == 1 and not (words[0].runtime or words[0].unresolved):
            frame.subject = words[0].text
            frame.mode = "deciding"
        if not frame.parent_active:
            frame.mode = "closed"
        self.frames.append(frame)

    def _case_branch(self, frame: Frame, pattern: str) -> None:
        frame.label = f"{frame.opener} {pattern})"
        if frame.mode == "closed" or frame.mode == "taken":
            frame.mode, frame.active = "closed", False
            return
        patterns = [p.strip().strip("\"'") for p in pattern.lstrip("(").split("|")]
        if "*" in patterns:
            frame.has_else = True
        if frame.mode == "deciding":
            assert frame.subject is not None
            hit = any(fnmatch.fnmatchcase(frame.subject, p) for p in patterns)
            frame.mode, frame.active = ("taken", True) if hit else ("deciding", False)
            return
        if frame.active:
            self._end_branch(frame)
        else:
            self.vars = copy_vars(frame.vars_before)
        frame.active = True

    def _end_branch(self, frame: Frame) -> None:
        if frame.active:
            frame.ends.append(self.vars)
        self.vars = copy_vars(frame.vars_before)

    def _close_branches(self, frame: Frame) -> None:
        if frame.mode != "undecided":
            return  # decided: self.vars is what the branch that ran left (or the state before)
        if frame.active:
            frame.ends.append(self.vars)
        if not frame.has_else:
            frame.ends.append(frame.vars_before)  # no branch taken
        merged: Vars = {}
        for end in frame.ends:
            for name, alts in end.items():
                have = merged.setdefault(name, [])
                have.extend(a for a in alts if all(a is not b for b in have))
        self.vars = merged

    def _test(self, text: str, line: int) -> bool | None:
        words = lex(text, line, self._lookup())
        return evaluate_test(words)


def _is_pattern(word: str) -> bool:
    """``b200)``, ``"b200"|b300)``, ``*)``, ``(x)``: a case branch's patterns."""
    head = word.removeprefix("(").split(")", 1)[0]
    return ")" in word and not any(mark in head for mark in ("(", "=", "$"))


def evaluate_test(words: Sequence[Word]) -> bool | None:
    """``[ a = b ]``, ``[[ a == b ]]``, ``test -n a``, ``!``: True/False when every operand is
    known, None when the test needs a run (a file, a command, an unknown variable)."""
    if not words:
        return None
    items = list(words)
    if items[0].text in ("[", "[[", "test"):
        closing = {"[": "]", "[[": "]]"}.get(items[0].text)
        items = items[1:]
        if closing is not None:
            if not items or items[-1].text != closing:
                return None
            items = items[:-1]
    else:
        return None
    negate = False
    while items and items[0].text == "!":
        negate = not negate
        items = items[1:]
    if any(w.runtime or w.unresolved for w in items):
        return None
    texts = [w.text for w in items]
    verdict: bool | None
    if len(texts) == 2 and texts[0] in ("-n", "-z"):
        verdict = bool(texts[1]) if texts[0] == "-n" else not texts[1]
    elif len(texts) == 1:
        verdict = bool(texts[0])
    elif len(texts) == 3 and texts[1] in ("=", "==", "!="):
        pattern = items[2]
        if pattern.quoted or not any(ch in pattern.text for ch in "*?["):
            same = texts[0] == texts[2]
        else:
            same = fnmatch.fnmatchcase(texts[0], texts[2])
        verdict = same if texts[1] != "!=" else not same
    elif len(texts) == 3 and texts[1] in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
        try:
            a, b = int(texts[0]), int(texts[2])
        except ValueError:
            return None
        verdict = {
            "-eq": a == b,
            "-ne": a != b,
            "-lt": a < b,
            "-le": a <= b,
            "-gt": a > b,
            "-ge": a >= b,
        }[texts[1]]
    else:
        return None
    return (not verdict) if negate else verdict
