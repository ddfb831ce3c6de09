"""The state a :class:`~.shell.ShellReader` keeps while it follows shell text: variables with
the values they may hold, the open ``if``/``case``/loop/function frames, and the helpers every
part of the reader uses to look a variable up or name the conditions in force.

Shared by :mod:`.shell` (commands and launches), :mod:`.shell_branches` (conditions) and
:mod:`.shell_assign` (assignments, arrays and expansion), whose classes build on
:class:`ShellState`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from evidence.vocabulary import Scope

from .shell_words import Lookup, Value
from .types import Setting

ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)", re.DOTALL)
PLACEHOLDER_VALUE = re.compile(r"<[^<>]+>")


@dataclass(frozen=True)
class Alt:
    """One value a variable may hold, and the setting that gave it (None: not a setting)."""

    value: Value
    setting: Setting | None
    condition: str  # the branch conditions it holds under ("" when unconditional)
    exported: bool


Vars = dict[str, list[Alt]]


@dataclass
class Frame:
    """An open ``if``/``case``/loop/function/``{`` group."""

    kind: str  # "if", "case", "loop", "function", "group"
    opener: str = ""
    label: str = ""  # the current branch's condition text
    parent_active: bool = True
    active: bool = True  # whether the current branch runs
    mode: str = "undecided"  # if/case: "undecided", "deciding", "taken", "closed"
    vars_before: Vars = field(default_factory=dict)
    ends: list[Vars] = field(default_factory=list)  # undecided: each finished branch's vars
    has_else: bool = False
    name: str = ""  # function
    locals: dict[str, Value] = field(default_factory=dict)
    exports: dict[str, Setting] = field(default_factory=dict)  # what the body exports
    subject: str | None = None  # case: the word, when known


@dataclass
class Launch:
    line: int
    env: list[Setting]
    flags: list[Setting]
    function: str = ""
    comment: str = ""
    heading: str = ""

    @property
    def mode(self) -> str:
        for s in self.flags:
            if s.key == "--disaggregation-mode" and s.value not in ("null", "true", ""):
                return s.value or ""
        return ""


class ShellState:
    """What the reader knows at a point of the text, and how it looks things up."""

    where: str
    vars: Vars
    frames: list[Frame]
    launches: list[Launch]
    allexport: bool
    exported_by_default: bool
    previous: tuple[str, bool | None] | None  # a test command: text, verdict
    pending_function: str
    heading: str
    lines: dict[int, str]

    def __init__(self, *, where: str, env: Mapping[str, str] | None = None) -> None:
        self.where = where
        self.vars = {
            name: [Alt(Value(value), None, "", True)] for name, value in (env or {}).items()
        }
        self.frames = []
        self.launches = []
        self.allexport = False
        self.exported_by_default = False
        self.previous = None
        self.pending_function = ""
        self.heading = ""
        self.lines = {}
        # The sections open at this point of a document: (heading level, the variables and
        # allexport before it, the launches made before it).
        self.sections: list[tuple[int, Vars, bool, int]] = []
        self.left_behind: list[Setting] = []  # exports of closed sections that reached no launch
        self.aliases: dict[str, str] = {}  # `alias drun='docker run ...'`: name -> its text
        self.loose_flags: list[int] = []  # lines of commands that are flags alone

    @property
    def active(self) -> bool:
        return all(f.active for f in self.frames)

    def _function(self) -> Frame | None:
        return next((f for f in reversed(self.frames) if f.kind == "function"), None)

    def _in_loop(self) -> bool:
        return any(f.kind == "loop" for f in self.frames)

    def _scopes(self) -> list[Frame]:
        """The open function and loop bodies, innermost first: what they assign is theirs
        (a function's when it is called, a loop's at run time), seen by the commands and
        launches inside them and not by the document after them."""
        return [f for f in reversed(self.frames) if f.kind in ("function", "loop")]

    def _lookup(self, choice: Mapping[str, Alt] | None = None) -> Lookup:
        scopes = self._scopes()

        def lookup(name: str) -> Value | None:
            for scope in scopes:
                if name in scope.locals:
                    return scope.locals[name]
            if choice is not None and name in choice:
                return choice[name].value
            alts = self.vars.get(name)
            return alts[0].value if alts else None

        return lookup

    def _condition(self, extra: str = "") -> str:
        parts = [f.label for f in self.frames if f.kind in ("if", "case") and f.label]
        if extra:
            parts.append(extra)
        return "; ".join(parts)

    def _setting(self, key: str, value: str, scope: Scope, line: int, condition: str) -> Setting:
        return Setting(key, value, scope, f"{self.where}:{line}", condition)


def copy_vars(state: Vars) -> Vars:
    return {name: list(alts) for name, alts in state.items()}


def join_conditions(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
