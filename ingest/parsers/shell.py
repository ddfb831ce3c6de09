"""Settings asserted by shell: a launch script, or the shell blocks of a deployment doc, read as a
shell would run them, without running anything.

Pure: text in, :class:`Setting` values out. The text is cut into simple commands
(:mod:`.shell_commands`), each command's words are expanded (:mod:`.shell_words`), and the
commands are followed in order. This module follows commands and launches; conditions are
:mod:`.shell_branches`, assignments, arrays and expansion :mod:`.shell_assign`, over the state
both share (:mod:`.shell_state`).

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

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from evidence.vocabulary import Scope

from .launch import find_launch, flag_values
from .shell_assign import AssignmentsMixin
from .shell_branches import BranchesMixin, evaluate_test
from .shell_commands import Command, split_commands
from .shell_state import ASSIGN, PLACEHOLDER_VALUE, Launch, copy_vars, join_conditions
from .shell_words import Word, lex, mapping_lookup
from .text import NAME
from .types import ParseError, Setting

__all__ = ["ShellReader", "expand_vars", "shell_settings"]

_ARRAY = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(\+?)=\((.*)\)\s*$", re.DOTALL)
_DECLARE = frozenset({"export", "readonly", "declare", "typeset", "local"})
_TESTS = frozenset({"[", "[[", "test"})
_NAME_MAX = 48  # a comment longer than this above a launch is a note, not its name
_LOOSE_FLAG = re.compile(r"--[A-Za-z]")  # (not a `-----Time to First Token-----` rule)
_ALIAS_NAME = re.compile(r"[A-Za-z_][\w.-]*")
# The command's name at the start of its text (after blanks): what an alias replaces.
_COMMAND_NAME = re.compile(
    r"(\s*(?:[A-Za-z_]\w*=(?:'[^']*'|\"[^\"]*\"|[^\s'\"]*)\s+)*)([A-Za-z_][\w.-]*)(?=\s|$)"
)  # (after any `NAME=value ` prefixes, which bash expands the alias after too)


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


class ShellReader(BranchesMixin, AssignmentsMixin):
    """Shell text read in order, block after block (one document's blocks share variables)."""

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
        saved = (copy_vars(self.vars), self.allexport) if script else None
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

    def section(self, level: int) -> None:
        """A heading of ``level`` begins a section. The sections it closes (its level or
        deeper) that launched a server were a recipe of their own, one of the document's
        alternatives (``1 x Atlas``, then ``2 x Atlas``): what they exported is not in force in
        the next; a section that only set variables (``## Environment`` before ``## Launch``)
        leaves them set, as a reader following the document would."""
        while self.sections and self.sections[-1][0] >= level:
            _, vars_before, allexport, launches_before = self.sections.pop()
            if len(self.launches) > launches_before:
                # (what it exported after its last launch reached none: still said, at the end)
                before = {id(alt.setting) for alts in vars_before.values() for alt in alts}
                last = max(launch.line for launch in self.launches[launches_before:])
                self.left_behind.extend(
                    x
                    for x in self._in_force(exported_only=True)
                    if id(x) not in before and _line(x) > last
                )
                self.vars, self.allexport = vars_before, allexport
        self.sections.append((level, copy_vars(self.vars), self.allexport, len(self.launches)))

    # --- output -----------------------------------------------------------------------------

    def result(self) -> tuple[list[Setting], list[str]]:
        """The settings (see the module docstring), in order, and warnings."""
        loose = (
            [
                f"{len(self.loose_flags)} command(s) of server flags alone, with no program to "
                f"launch (lines {', '.join(map(str, self.loose_flags[:10]))}): a fragment to add "
                "to a launch, not read as settings"
            ]
            if self.loose_flags
            else []
        )
        if not self.launches:
            return _in_line_order(self._in_force(exported_only=False)), loose
        if len(self.launches) == 1:
            launch = self.launches[0]
            settings = launch.env + launch.flags
        else:
            settings = self._profiles()
        warnings = self._unreached()
        return _in_line_order(settings), loose + warnings

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
            | {s.key for s in self.left_behind if id(s) not in reached}
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
        text = self._alias_expanded(text)
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
            self.previous = (raw, evaluate_test(words))
            return
        self.previous = None
        self._simple(variants, chained if isinstance(chained, str) else "", line)

    def _alias_expanded(self, text: str) -> str:
        """The command with an alias the text defined before (``alias drun='docker run ...'``,
        SGLang's AMD guide) replaced by its text, as an interactive shell would."""
        if not self.aliases:
            return text
        match = _COMMAND_NAME.match(text)
        if match is None or match.group(2) not in self.aliases:
            return text
        return f"{match.group(1)}{self.aliases[match.group(2)]}{text[match.end() :]}"

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

    def _simple(self, variants: list[tuple[list[Word], str]], chained: str, line: int) -> None:
        words = variants[0][0]
        idx = 0
        while idx < len(words) and words[idx].assignment:
            idx += 1  # ("A=1" quoted is a command name, not an assignment)
        condition = self._condition(chained)
        if idx == len(words):
            self._assign_all(
                [(variant, join_conditions(condition, extra)) for variant, extra in variants],
                export=False,
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
        if _LOOSE_FLAG.match(program):
            # A recipe's flags shown alone ("add these to the launch"): no launch to give them
            # to; said, not guessed.
            self.loose_flags.append(line)
            return
        if program == "alias":
            for word in words[idx + 1 :]:
                name, eq, value = word.text.partition("=")
                if eq and _ALIAS_NAME.fullmatch(name):
                    self.aliases[name] = value.replace("\\\n", " ")
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

    # --- launches -----------------------------------------------------------------------------

    def _launch(
        self, variants: list[tuple[list[Word], tuple[Word, ...], str]], condition: str, line: int
    ) -> None:
        function = self._function()
        env = self._in_force(exported_only=True)
        for scope in reversed(self._scopes()):
            # A launch in a function or loop body: the variables exported before it, and what
            # the bodies (outermost first) export on their way there.
            env = [s for s in env if s.key not in scope.exports]
            env += list(scope.exports.values())
        flags: list[tuple[str, str, int, str]] = []
        for env_words, args, extra in variants:
            for word in env_words:
                m = ASSIGN.fullmatch(word.text)
                if m is None or word.runtime or PLACEHOLDER_VALUE.fullmatch(m.group(3)):
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
            cond = condition if common else join_conditions(condition, extra)
            settings.append(self._setting(key, value, Scope.FLAG, at, cond))
        self.launches.append(
            Launch(
                line=line,
                env=_dedupe(env),
                flags=settings,
                function=function.name if function is not None else "",
                comment=self._comment_above(line),
                heading=self.heading,
            )
        )

    def _comment_above(self, line: int) -> str:
        """The launch's name from the comment right above it (``# Pure TP``, ``# prefill``);
        not a sentence (``# Please use the latest main branch for this feature.``): that is a
        note about the launch, and its section's heading names it better."""
        text = self.lines.get(line - 1, "").strip()
        if text.startswith("#") and not text.startswith("#!"):
            name = text.lstrip("#").strip()
            if len(name) <= _NAME_MAX and not name.endswith((".", "!", "?", ":")):
                return name
        return ""


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
