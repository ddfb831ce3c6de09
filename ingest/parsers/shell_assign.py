"""Assignments in shell text: ``NAME=value``, ``export``/``declare``/``local``, ``+=``, arrays,
and the expansion of a command's words once per conditional value it refers to.

A value only a run gives (``$(hostname)``), a placeholder (``<path>``) or an append is not a
setting; a function's variables are its own; an array is a launch's words, not a setting (see
:mod:`.shell`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

from evidence.vocabulary import Scope

from . import secrets
from .shell_state import ASSIGN, PLACEHOLDER_VALUE, Alt, ShellState, join_conditions
from .shell_words import Value, Word, lex, referenced_names
from .text import NAME
from .types import Setting

__all__ = ["MAX_VARIANTS", "AssignmentsMixin"]

MAX_VARIANTS = 16  # alternatives a command is expanded into (conditional values it refers to)


class AssignmentsMixin(ShellState):
    """Variables set by assignments and arrays, and commands expanded against them."""

    def _variants(self, text: str, line: int) -> list[tuple[list[Word], str]]:
        """The command's words once per combination of the conditional values it refers to,
        each with the conditions of the values chosen."""
        names = sorted(n for n in referenced_names(text) if len(self.vars.get(n, ())) > 1)
        for scope in self._scopes():
            names = [n for n in names if n not in scope.locals]
        if not names:
            return [(lex(text, line, self._lookup()), "")]
        out: list[tuple[list[Word], str]] = []
        for combo in itertools.product(*(self.vars[n] for n in names)):
            choice = dict(zip(names, combo, strict=True))
            conditions: list[str] = []
            for alt in combo:
                if alt.condition and alt.condition not in conditions:
                    conditions.append(alt.condition)
            out.append((lex(text, line, self._lookup(choice)), "; ".join(conditions)))
            if len(out) >= MAX_VARIANTS:
                break
        return out

    def _declare(self, variants: list[tuple[list[Word], str]], idx: int, condition: str) -> None:
        words = variants[0][0]
        program = words[idx].text
        options = [w.text for w in words[idx + 1 :] if w.text.startswith("-")]
        export = program == "export" or any("x" in o for o in options if program != "export")
        if program == "export" and "-n" in options:
            export = False
        local = program == "local" or (
            program in ("declare", "typeset") and self._function() is not None
        )
        for word in words[idx + 1 :]:
            if NAME.fullmatch(word.text) and program == "export":
                self._mark_exported(word.text, export)
        assigned = [
            (
                [w for w in variant[idx + 1 :] if ASSIGN.fullmatch(w.text)],
                join_conditions(condition, extra),
            )
            for variant, extra in variants
        ]
        if local:
            for word in assigned[0][0]:
                self._assign_local(word)
            return
        self._assign_all(assigned, export=export)

    def _assign_all(self, assigned: list[tuple[list[Word], str]], *, export: bool) -> None:
        """Assignments, once per variant of the command: a value built from a conditional
        one holds under the same conditions."""
        new: dict[str, list[Alt]] = {}
        for words, condition in assigned:
            last: dict[str, Alt] = {}  # within one command, a later NAME= wins
            for word in words:
                alt = self._assign(word, condition, export=export)
                m = ASSIGN.fullmatch(word.text)
                if alt is not None and m is not None:
                    last[m.group(1)] = alt
            for name, alt in last.items():
                have = new.setdefault(name, [])
                if not any(a.value == alt.value and a.condition == alt.condition for a in have):
                    have.append(alt)
        self.vars.update(new)

    def _mark_exported(self, name: str, exported: bool) -> None:
        if name in self.vars:
            self.vars[name] = [replace(a, exported=exported) for a in self.vars[name]]

    def _assign_local(self, word: Word, *, export: bool = False, condition: str = "") -> None:
        scopes = self._scopes()
        m = ASSIGN.fullmatch(word.text)
        if scopes and m is not None:
            scope = scopes[0]
            scope.locals[m.group(1)] = Value(m.group(3))
            if export and not word.runtime and not PLACEHOLDER_VALUE.fullmatch(m.group(3)):
                scope.exports[m.group(1)] = self._setting(
                    m.group(1), m.group(3), Scope.ENV, word.line, condition
                )

    def _assign(self, word: Word, condition: str, *, export: bool) -> Alt | None:
        """The variable's new value from ``NAME=value`` (None when nothing changes here)."""
        m = ASSIGN.fullmatch(word.text)
        assert m is not None  # callers only pass assignment words
        name, append, value = m.group(1), m.group(2), m.group(3)
        before = self.vars.get(name, [])
        if self._scopes():
            # A function body runs when it is called, a loop body at run time: neither assigns
            # the document's settings; what they set is theirs, seen by the launches inside
            # them (a variable exported before stays exported when the body sets it again).
            inherited = bool(before) and all(a.exported for a in before)
            self._assign_local(
                word, export=export or self.allexport or inherited, condition=condition
            )
            return None
        exported = export or self.allexport or self.exported_by_default
        exported = exported or bool(before) and all(a.exported for a in before)
        setting: Setting | None = None
        if append:
            # `X+=more`: the variable grows; the setting it came from (if any) now holds the
            # longer value, where it was first set.
            if len(before) != 1:
                return None
            old = before[0]
            grown = old.setting
            if grown is not None:
                grown = replace(grown, value=(grown.value or "") + value)
            return replace(old, value=Value(old.value.as_text() + value), setting=grown)
        if secrets.is_secret_key(name):
            # What it expands to elsewhere (`https://user:${HF_TOKEN}@...`) is the fingerprint.
            value = secrets.hidden(value) or value
        if not (word.runtime or PLACEHOLDER_VALUE.fullmatch(value)):
            setting = self._setting(name, value, Scope.ENV, word.line, condition)
        return Alt(Value(value), setting, condition, exported)

    def _array(self, m: re.Match[str], line: int) -> None:
        name, append, inner = m.group(1), m.group(2), m.group(3)
        prefix = m.group(0)[: m.start(3)]
        first = line + prefix.count("\n")
        elements = tuple((w.text, w.line) for w in lex(inner, first, self._lookup()))
        function = self._function()
        if function is not None:
            old = function.locals.get(name) if append else None
            base = old.elements if old is not None and old.elements is not None else ()
            function.locals[name] = Value(elements=base + elements)
            return
        condition = self._condition()
        if append and name in self.vars:
            self.vars[name] = [
                replace(a, value=Value(elements=(a.value.elements or ()) + elements))
                for a in self.vars[name]
            ]
            if condition and self.frames[-1].kind in ("if", "case"):
                self.vars[name] = [replace(a, condition=condition) for a in self.vars[name]]
            return
        self.vars[name] = [Alt(Value(elements=elements), None, condition, False)]
