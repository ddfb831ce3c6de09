"""Settings asserted by shell: a launch script, or the shell blocks of a deployment doc, read as a
shell would run them, without running anything.

Pure: text in, :class:`Setting` values out. The text is cut into simple commands
(:mod:`.shell_commands`), each command's words are expanded (:mod:`.shell_words`), and the
commands are followed in order:

* **Variables.** Assignments and exports set variables; ``${VAR:-default}``, ``${VAR,,}`` and
  friends resolve against them. ``local`` variables and everything else a function body
  assigns belong to the function; values only a run gives (``$(hostname)``,
  ``$((SECONDS + 5))``) and ``+=`` appends are not settings; an array (``args=( ... )``,
  ``args+=( ... )``) is a launch's words, not a setting.
* **Conditions.** ``if``/``elif``/``else``, ``case`` and ``[ test ] &&`` are decided when their
  test compares known values: only the branch a shell would take runs, and what it sets
  carries its condition (``condition``). Otherwise every branch is read from the state before
  the ``if``, each setting keeps its branch's condition, and after ``fi`` a variable set
  differently in the branches holds each value under its condition: a flag built from it
  (``--mem-fraction-static "${MEM}"``) becomes one setting per branch.
* **Launches.** Only a command that starts a model server (:mod:`.launch`) gives flags. Its
  settings are its flags and the environment it starts with: the variables exported at that
  point, its ``KEY=VALUE`` prefixes, ``env``/``docker -e`` assignments. ``KEY=VALUE cmd``
  before any other command sets nothing.
* **Profiles.** Each launch is one profile. With one launch, every setting has profile ``""``;
  with several (prefill and decode servers, alternative launches), each setting carries the
  name of its launch in ``profile`` (``--disaggregation-mode``'s value, the function it is in,
  the comment line above it, or its section's heading, numbered when repeated), and the
  environment every launch shares has profile ``""``. Variables exported after the last launch
  reach no server and are not settings (a warning names them). Text without any launch
  (an ``.env``-like block, exports only) asserts the variables set at its end, exported or not.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from evidence.vocabulary import Scope

from .launch import find_launch, flag_values
from .shell_commands import Command, split_commands
from .shell_words import Lookup, Value, Word, lex, mapping_lookup, referenced_names
from .text import NAME
from .types import ParseError, Setting

__all__ = ["ShellReader", "expand_vars", "shell_settings"]

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)", re.DOTALL)
_ARRAY = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(\+?)=\((.*)\)\s*$", re.DOTALL)
_FUNCTION = re.compile(
    r"\s*(?:function\s+([A-Za-z_][\w.:-]*)\s*(?:\(\s*\))?|([A-Za-z_][\w.:-]*)\s*\(\s*\))\s*(\{)?(.*)$",
    re.DOTALL,
)
_PLACEHOLDER_VALUE = re.compile(r"<[^<>]+>")
_DECLARE = frozenset({"export", "readonly", "declare", "typeset", "local"})
_LEADING_KEYWORDS = frozenset({"then", "do", "!", "time"})
_LOOPS = frozenset({"while", "until", "for", "select"})
_TESTS = frozenset({"[", "[[", "test"})
MAX_VARIANTS = 16  # alternatives a command is expanded into (conditional values it refers to)


@dataclass(frozen=True)
class _Alt:
    """One value a variable may hold, and the setting that gave it (None: not a setting)."""

    value: Value
    setting: Setting | None
    condition: str  # the branch conditions it holds under ("" when unconditional)
    exported: bool


_Vars = dict[str, list[_Alt]]


@dataclass
class _Frame:
    """An open ``if``/``case``/loop/function/``{`` group."""

    kind: str  # "if", "case", "loop", "function", "group"
    opener: str = ""
    label: str = ""  # the current branch's condition text
    parent_active: bool = True
    active: bool = True  # whether the current branch runs
    mode: str = "undecided"  # if/case: "undecided", "deciding", "taken", "closed"
    vars_before: _Vars = field(default_factory=dict)
    ends: list[_Vars] = field(default_factory=list)  # undecided: each finished branch's vars
    has_else: bool = False
    name: str = ""  # function
    locals: dict[str, Value] = field(default_factory=dict)
    exports: dict[str, Setting] = field(default_factory=dict)  # what the body exports
    subject: str | None = None  # case: the word, when known


@dataclass
class _Launch:
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


def expand_vars(text: str, env: Mapping[str, str]) -> str:
    """Replace ``$NAME``, ``${NAME}``, ``${NAME:-default}``... known in ``env``; keep the rest.

    For values read outside a shell (``.env`` files): quotes and blanks stay as they are.
    """
    lookup = mapping_lookup(env)
    out: list[str] = []
    pos = 0
    for m in re.finditer(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*", text):
        out.append(text[pos : m.start()])
        words = lex(f'"{m.group(0)}"', 1, lookup)
        known = len(words) == 1 and not (words[0].unresolved or words[0].runtime)
        out.append(words[0].text if known else m.group(0))
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def shell_settings(
    text: str, *, where: str, first_line: int = 1, env: dict[str, str] | None = None
) -> list[Setting]:
    """Settings a shell snippet asserts (see the module docstring).

    ``where`` names the file; each setting's ``where`` is ``"<where>:<line>"`` of the line it is
    on, counting the snippet's first line as ``first_line``. ``env`` holds variables already
    known (it is not modified; they are not settings). Raises ParseError for an unterminated
    quote.
    """
    reader = ShellReader(where=where, env=env)
    reader.feed(text, first_line=first_line)
    settings, _ = reader.result()
    return settings


class ShellReader:
    """Shell text read in order, block after block (one document's blocks share variables)."""

    def __init__(self, *, where: str, env: Mapping[str, str] | None = None) -> None:
        self.where = where
        self.vars: _Vars = {
            name: [_Alt(Value(value), None, "", True)] for name, value in (env or {}).items()
        }
        self.frames: list[_Frame] = []
        self.launches: list[_Launch] = []
        self.allexport = False
        self.exported_by_default = False
        self.previous: tuple[str, bool | None] | None = None  # a test command: text, verdict
        self.pending_function = ""
        self.heading = ""
        self.lines: dict[int, str] = {}
        self.order = 0

    # --- input ------------------------------------------------------------------------------

    def feed(
        self, text: str, *, first_line: int = 1, heading: str = "", exported: bool = False
    ) -> None:
        """Read one snippet; ``heading`` names its section, ``exported`` reads its plain
        assignments as exported (an ``env`` block). Raises ParseError for a broken quote,
        before anything of the snippet is read."""
        commands = split_commands(text, where=self.where, first_line=first_line)
        self.heading = heading
        self.exported_by_default = exported
        self.lines = dict(enumerate(text.split("\n"), start=first_line))
        self.previous = None
        # A block that opens with `#!` is a script of its own: it runs in a new process, so
        # what it sets does not stay in the document's shell.
        script = text.lstrip().startswith("#!")
        saved = (_copy(self.vars), self.allexport) if script else None
        for command in commands:
            try:
                self._run(command)
            except RecursionError:
                raise ParseError(
                    self.where,
                    command.segments[0].line,
                    "expected expansions nested a few levels deep; this command nests too deep",
                ) from None
        self.exported_by_default = False
        while self.frames:  # an if, a loop or a function a block leaves open ends with it
            frame = self.frames.pop()
            if frame.kind in ("if", "case"):
                self._close_branches(frame)
        if saved is not None:
            self.vars, self.allexport = saved

    # --- output -----------------------------------------------------------------------------

    def result(self) -> tuple[list[Setting], list[str]]:
        """The settings (see the module docstring), in order, and warnings."""
        if not self.launches:
            return _in_line_order(self._in_force(exported_only=False)), []
        if len(self.launches) == 1:
            launch = self.launches[0]
            settings = launch.env + launch.flags
        else:
            settings = self._profiles()
        warnings = self._unreached()
        return _in_line_order(settings), warnings

    def _profiles(self) -> list[Setting]:
        names: list[str] = []
        seen: dict[str, int] = {}
        for n, launch in enumerate(self.launches, start=1):
            name = (
                launch.mode or launch.function or launch.comment or launch.heading or f"launch {n}"
            )
            seen[name] = seen.get(name, 0) + 1
            names.append(name if seen[name] == 1 else f"{name} {seen[name]}")
        shared = set.intersection(*(set(map(id, launch.env)) for launch in self.launches))
        out: list[Setting] = []
        emitted: set[int] = set()
        for name, launch in zip(names, self.launches, strict=True):
            for s in launch.env:
                if id(s) in shared:
                    if id(s) not in emitted:
                        emitted.add(id(s))
                        out.append(s)
                else:
                    out.append(replace(s, profile=name))
            out.extend(replace(s, profile=name) for s in launch.flags)
        return out

    def _unreached(self) -> list[str]:
        last = max(launch.line for launch in self.launches)
        reached = {id(s) for launch in self.launches for s in launch.env}
        late = sorted(
            {
                s.key
                for s in self._in_force(exported_only=True)
                if id(s) not in reached and _line(s) > last
            }
        )
        if not late:
            return []
        return [
            f"{len(late)} variable(s) exported after the last server launch reach no launch and "
            f"are not read as settings: {', '.join(late[:20])}"
        ]

    def _in_force(self, *, exported_only: bool) -> list[Setting]:
        out: list[Setting] = []
        seen: set[int] = set()
        for alts in self.vars.values():
            for alt in alts:
                s = alt.setting
                if s is None or id(s) in seen or (exported_only and not alt.exported):
                    continue
                seen.add(id(s))
                out.append(s)
        return out

    # --- state ------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return all(f.active for f in self.frames)

    def _function(self) -> _Frame | None:
        return next((f for f in reversed(self.frames) if f.kind == "function"), None)

    def _in_loop(self) -> bool:
        return any(f.kind == "loop" for f in self.frames)

    def _lookup(self, choice: Mapping[str, _Alt] | None = None) -> Lookup:
        function = self._function()

        def lookup(name: str) -> Value | None:
            if function is not None and name in function.locals:
                return function.locals[name]
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

    # --- commands ---------------------------------------------------------------------------

    def _run(self, command: Command) -> None:
        raw = command.raw()
        text = "\n".join(seg.text for seg in command.segments)
        line = command.segments[0].line
        chained = self._chain(command)
        if chained is False:
            self.previous = None
            return
        text, raw = self._control(text, raw, line)
        if not text.strip():
            return
        if not self.active:
            return
        array = _ARRAY.match(text)
        if array is not None:
            self._array(array, line)
            self.previous = None
            return
        variants = self._variants(text, line)
        words, _ = variants[0]
        if not words:
            return
        if words[0].text in _TESTS:
            self.previous = (raw, _evaluate_test(words))
            return
        self.previous = None
        self._simple(variants, chained if isinstance(chained, str) else "", line)

    def _chain(self, command: Command) -> str | bool | None:
        """For ``[ test ] && cmd`` / ``||``: False when the test decides the command does not
        run, the condition text when it may, None when the command is not chained to a test."""
        previous = self.previous
        if command.sep_before not in ("&&", "||") or previous is None:
            return None
        raw, verdict = previous
        runs = verdict if command.sep_before == "&&" else (None if verdict is None else not verdict)
        if runs is False:
            return False
        return f"{raw} {command.sep_before}"

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
                self.frames.append(_Frame("loop", parent_active=self.active, active=self.active))
                return "", ""
            if first == "done" and frame is not None and frame.kind == "loop":
                self.frames.pop()
                text = rest
                continue
            if first == "{":
                self.frames.append(_Frame("group", parent_active=self.active, active=self.active))
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
            _Frame("function", name=name, parent_active=self.active, active=self.active)
        )

    # --- if / case ----------------------------------------------------------------------------

    def _open_if(self, test: str, opener: str, line: int) -> None:
        frame = _Frame("if", opener=opener, label=opener, parent_active=self.active)
        frame.vars_before = _copy(self.vars)
        if not frame.parent_active:
            frame.active, frame.mode = False, "closed"
        else:
            verdict = self._test(test, line)
            if verdict is None:
                frame.mode, frame.active = "undecided", True
            else:
                frame.mode, frame.active = ("taken", True) if verdict else ("deciding", False)
        self.frames.append(frame)

    def _elif(self, frame: _Frame, test: str, text: str, line: int) -> None:
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

    def _else(self, frame: _Frame) -> None:
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
        frame = _Frame("case", opener=opener, label=opener, parent_active=self.active)
        frame.vars_before = _copy(self.vars)
        frame.active = False  # nothing runs before the first pattern
        words = lex(rest.rsplit(" in", 1)[0], line, self._lookup())
        if len(words) == 1 and not (words[0].runtime or words[0].unresolved):
            frame.subject = words[0].text
            frame.mode = "deciding"
        if not frame.parent_active:
            frame.mode = "closed"
        self.frames.append(frame)

    def _case_branch(self, frame: _Frame, pattern: str) -> None:
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
            self.vars = _copy(frame.vars_before)
        frame.active = True

    def _end_branch(self, frame: _Frame) -> None:
        if frame.active:
            frame.ends.append(self.vars)
        self.vars = _copy(frame.vars_before)

    def _close_branches(self, frame: _Frame) -> None:
        if frame.mode != "undecided":
            return  # decided: self.vars is what the branch that ran left (or the state before)
        if frame.active:
            frame.ends.append(self.vars)
        if not frame.has_else:
            frame.ends.append(frame.vars_before)  # no branch taken
        merged: _Vars = {}
        for end in frame.ends:
            for name, alts in end.items():
                have = merged.setdefault(name, [])
                have.extend(a for a in alts if all(a is not b for b in have))
        self.vars = merged

    def _test(self, text: str, line: int) -> bool | None:
        words = lex(text, line, self._lookup())
        return _evaluate_test(words)

    # --- simple commands ----------------------------------------------------------------------

    def _variants(self, text: str, line: int) -> list[tuple[list[Word], str]]:
        """The command's words once per combination of the conditional values it refers to,
        each with the conditions of the values chosen."""
        names = sorted(n for n in referenced_names(text) if len(self.vars.get(n, ())) > 1)
        function = self._function()
        if function is not None:
            names = [n for n in names if n not in function.locals]
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

    def _simple(self, variants: list[tuple[list[Word], str]], chained: str, line: int) -> None:
        words = variants[0][0]
        idx = 0
        while idx < len(words) and words[idx].assignment:
            idx += 1  # ("A=1" quoted is a command name, not an assignment)
        condition = self._condition(chained)
        if idx == len(words):
            self._assign_all(
                [(variant, _join(condition, extra)) for variant, extra in variants], export=False
            )
            return
        program = words[idx].text
        if program in _DECLARE:
            self._declare(variants, idx, condition)
            return
        if program == "unset":
            for word in words[idx + 1 :]:
                if NAME.fullmatch(word.text):
                    self.vars.pop(word.text, None)
            return
        if program == "set" and any(w.text in ("-a", "allexport") for w in words[idx + 1 :]):
            self.allexport = True
            return
        launch_variants = []
        for variant, extra in variants:
            found = find_launch(variant[idx:])
            if found is not None:
                launch_variants.append((variant[:idx] + list(found.env), found.args, extra))
        if launch_variants:
            self._launch(launch_variants, condition, line)

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
            ([w for w in variant[idx + 1 :] if _ASSIGN.fullmatch(w.text)], _join(condition, extra))
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
        new: dict[str, list[_Alt]] = {}
        for words, condition in assigned:
            last: dict[str, _Alt] = {}  # within one command, a later NAME= wins
            for word in words:
                alt = self._assign(word, condition, export=export)
                m = _ASSIGN.fullmatch(word.text)
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
        function = self._function()
        m = _ASSIGN.fullmatch(word.text)
        if function is not None and m is not None:
            function.locals[m.group(1)] = Value(m.group(3))
            if export and not word.runtime:
                function.exports[m.group(1)] = self._setting(
                    m.group(1), m.group(3), Scope.ENV, word.line, condition
                )

    def _assign(self, word: Word, condition: str, *, export: bool) -> _Alt | None:
        """The variable's new value from ``NAME=value`` (None when nothing changes here)."""
        m = _ASSIGN.fullmatch(word.text)
        assert m is not None  # callers only pass assignment words
        name, append, value = m.group(1), m.group(2), m.group(3)
        if self._function() is not None or self._in_loop():
            # A function body runs when it is called, a loop body at run time: neither assigns
            # the document's settings (a function's variables are its own).
            if self._function() is not None:
                self._assign_local(word, export=export, condition=condition)
            return None
        before = self.vars.get(name, [])
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
        if not (word.runtime or _PLACEHOLDER_VALUE.fullmatch(value)):
            setting = self._setting(name, value, Scope.ENV, word.line, condition)
        return _Alt(Value(value), setting, condition, exported)

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
        self.vars[name] = [_Alt(Value(elements=elements), None, condition, False)]

    # --- launches -----------------------------------------------------------------------------

    def _launch(
        self, variants: list[tuple[list[Word], tuple[Word, ...], str]], condition: str, line: int
    ) -> None:
        function = self._function()
        env = self._in_force(exported_only=True)
        if function is not None:
            # A launch in a function body: the variables exported before it, and what the
            # body exports on its way there.
            env = [s for s in env if s.key not in function.exports]
            env += list(function.exports.values())
        flags: list[tuple[str, str, int, str]] = []
        for env_words, args, extra in variants:
            for word in env_words:
                m = _ASSIGN.fullmatch(word.text)
                if m is None or word.runtime or _PLACEHOLDER_VALUE.fullmatch(m.group(3)):
                    continue
                env.append(self._setting(m.group(1), m.group(3), Scope.ENV, word.line, condition))
            for key, value, at in flag_values(args):
                flags.append((key, value, at, extra))
        # A flag every variant gives the same way is unconditional; the others keep the
        # conditions of the values they were built from.
        counts: dict[tuple[str, str, int], int] = {}
        for key, value, at, _ in flags:
            counts[(key, value, at)] = counts.get((key, value, at), 0) + 1
        settings: list[Setting] = []
        done: set[tuple[str, str, int, str]] = set()
        for key, value, at, extra in flags:
            common = counts[(key, value, at)] == len(variants)
            ident = (key, value, at, "" if common else extra)
            if ident in done:
                continue
            done.add(ident)
            cond = condition if common else _join(condition, extra)
            settings.append(self._setting(key, value, Scope.FLAG, at, cond))
        self.launches.append(
            _Launch(
                line=line,
                env=_dedupe(env),
                flags=settings,
                function=function.name if function is not None else "",
                comment=self._comment_above(line),
                heading=self.heading,
            )
        )

    def _comment_above(self, line: int) -> str:
        text = self.lines.get(line - 1, "").strip()
        if text.startswith("#") and not text.startswith("#!"):
            return text.lstrip("#").strip()
        return ""


def _copy(state: _Vars) -> _Vars:
    return {name: list(alts) for name, alts in state.items()}


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _line(setting: Setting) -> int:
    tail = setting.where.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _in_line_order(settings: list[Setting]) -> list[Setting]:
    return sorted(settings, key=_line)


def _dedupe(settings: Sequence[Setting]) -> list[Setting]:
    seen: set[int] = set()
    out = []
    for s in settings:
        if id(s) not in seen:
            seen.add(id(s))
            out.append(s)
    return out


def _is_pattern(word: str) -> bool:
    """``b200)``, ``"b200"|b300)``, ``*)``, ``(x)``: a case branch's patterns."""
    head = word.removeprefix("(").split(")", 1)[0]
    return ")" in word and not any(mark in head for mark in ("(", "=", "$"))


def _evaluate_test(words: Sequence[Word]) -> bool | None:
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
