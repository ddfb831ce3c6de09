"""Settings a Python launch script asserts: the environment it sets and the servers it starts.

Pure: path and text in, :class:`Setting` values out; the text is parsed with :mod:`ast`, never
run. What a launcher written in Python (``launch_dsv4.py``, ``deploy_sglang.py``) sets:

* environment: ``os.environ["K"] = "v"``, ``os.environ.setdefault("K", "v")``,
  ``os.environ.update({"K": "v"})`` / ``update(K="v")``, ``os.putenv("K", "v")``, and the
  entries of an ``env={...}`` dict given to a call (``subprocess.Popen(cmd, env={**os.environ,
  "K": "v"})``);
* server launches: a list or tuple of words (``["python", "-m", "sglang.launch_server",
  "--tp", "8"]``) or one string holding a command line (``"python -m sglang.launch_server
  --tp 8"``, as ``shlex.split`` or ``shell=True`` take it) that :func:`.launch.find_launch`
  calls a server: its flags.

A value the script computes (``str(num_gpus)``, a variable, an f-string) is kept as its source
text, as the shell reader keeps ``$TP``. A setting inside an ``if`` carries the test as its
condition (``not (...)`` in the ``else``). Values of other types than str, int, float and bool
are not settings.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections import Counter
from collections.abc import Iterator

from evidence.vocabulary import Scope

from .launch import find_launch, flag_values
from .shell import shell_settings
from .shell_words import Word, lex
from .types import ParseError, Setting

__all__ = ["python_settings"]

_SETTERS = frozenset({"setdefault", "update"})
# What a launcher's text names: the environment, a server program or module.
_LAUNCHER_WORDS = re.compile(r"\benviron\b|\bputenv\b|launch_server|\bserve\b|sglang|vllm")


def python_settings(path: str, text: str) -> list[Setting]:
    """The settings ``text`` (a Python script) asserts, in line order. Raises ParseError
    naming the line when it is not Python."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        if not _LAUNCHER_WORDS.search(text):
            # A module with a launcher's name that sets no environment and starts no server
            # (a package's `run.py`, a Python 2 script of an old history): not configuration.
            return []
        raise ParseError(path, exc.lineno or 0, f"expected Python source: {exc.msg}") from None
    out: list[Setting] = []
    names = _module_constants(tree)
    for node, condition in _walk(tree, ""):
        out.extend(_from_node(node, path, condition, names))
    return sorted(out, key=lambda s: int(s.where.rsplit(":", 1)[1]))


def _module_constants(tree: ast.Module) -> dict[str, str]:
    """Names the module binds once, at its top level, to a constant (``MODEL = "..."``): a
    launch word or env value naming one is read as the constant. A name bound anywhere else
    too (a loop, a ``with``, a parameter, another assignment) is not one."""
    bindings = Counter(
        node.id if isinstance(node, ast.Name) else node.arg
        for node in ast.walk(tree)
        if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))
        or isinstance(node, ast.arg)
    )
    out: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if (
            isinstance(target, ast.Name)
            and bindings[target.id] == 1
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str | int | float)
            and not isinstance(node.value.value, bool)
        ):
            out[target.id] = str(node.value.value)
    return out


def _walk(node: ast.AST, condition: str) -> Iterator[tuple[ast.AST, str]]:
    """Every node with the ``if`` tests around it, joined with " and "."""
    if isinstance(node, ast.If):
        child: ast.AST
        test = ast.unparse(node.test)
        yield node.test, condition
        for child in node.body:
            yield from _walk(child, _and(condition, f"if {test}"))
        for child in node.orelse:
            yield from _walk(child, _and(condition, f"if not ({test})"))
        return
    yield node, condition
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, condition)


def _and(outer: str, inner: str) -> str:
    if not (outer and inner):
        return outer or inner
    return f"{outer} and {inner.removeprefix('if ')}"


def _from_node(node: ast.AST, path: str, condition: str, names: dict[str, str]) -> list[Setting]:
    if isinstance(node, ast.Assign):
        return [
            s
            for target in node.targets
            if (key := _environ_key(target)) is not None
            for s in _env(key, node.value, path, condition, names)
        ]
    if isinstance(node, ast.Call):
        return _from_call(node, path, condition, names)
    if isinstance(node, ast.List | ast.Tuple):
        return _launch_words(node, path, condition, names)
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and " " in node.value:
        return _launch_string(node, path, condition)
    return []


def _is_environ(node: ast.AST) -> bool:
    """``os.environ`` or a bare ``environ`` (``from os import environ``)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "environ"


def _environ_key(target: ast.AST) -> str | None:
    if isinstance(target, ast.Subscript) and _is_environ(target.value):
        key = target.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
    return None


def _from_call(node: ast.Call, path: str, condition: str, names: dict[str, str]) -> list[Setting]:
    out: list[Setting] = []
    func = node.func
    if isinstance(func, ast.Attribute):
        target = func.value
        if func.attr in _SETTERS and _is_environ(target):
            if func.attr == "setdefault" and len(node.args) == 2:
                key = _string(node.args[0])
                if key is not None:
                    out.extend(_env(key, node.args[1], path, condition, names))
            elif func.attr == "update":
                for arg in node.args:
                    if isinstance(arg, ast.Dict):
                        out.extend(_env_dict(arg, path, condition, names))
                for kw in node.keywords:
                    if kw.arg is not None:
                        out.extend(_env(kw.arg, kw.value, path, condition, names))
        elif (
            func.attr == "putenv"
            and isinstance(target, ast.Name)
            and target.id == "os"
            and len(node.args) == 2
            and (key := _string(node.args[0])) is not None
        ):
            out.extend(_env(key, node.args[1], path, condition, names))
    for kw in node.keywords:
        if kw.arg == "env" and isinstance(kw.value, ast.Dict):
            out.extend(_env_dict(kw.value, path, condition, names))
    return out


def _env_dict(node: ast.Dict, path: str, condition: str, names: dict[str, str]) -> list[Setting]:
    out: list[Setting] = []
    for key_node, value in zip(node.keys, node.values, strict=True):
        if key_node is None:
            continue  # **os.environ
        key = _string(key_node)
        if key is not None:
            out.extend(_env(key, value, path, condition, names))
    return out


def _string(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _value(node: ast.AST, names: dict[str, str]) -> str | None:
    """A setting's value as written: a constant's text (``True`` as "true", as flags and
    env files spell booleans), a module constant's, else the expression's source; None for
    a container."""
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return "true" if node.value else "false"
        if isinstance(node.value, str | int | float):
            return str(node.value)
        return None
    if isinstance(node, ast.List | ast.Tuple | ast.Dict | ast.Set):
        return None
    return ast.unparse(node)


def _env(
    key: str, value: ast.expr, path: str, condition: str, names: dict[str, str]
) -> list[Setting]:
    text = _value(value, names)
    if text is None or not key:
        return []
    return [Setting(key, text, Scope.ENV, f"{path}:{value.lineno}", condition=condition)]


def _launch_words(
    node: ast.List | ast.Tuple, path: str, condition: str, names: dict[str, str]
) -> list[Setting]:
    words: list[Word] = []
    for element in node.elts:
        if isinstance(element, ast.Starred):
            continue  # *extra_args: words only a run gives
        text = _value(element, names)
        if text is None:
            return []
        known = isinstance(element, ast.Constant) or (
            isinstance(element, ast.Name) and element.id in names
        )
        words.append(Word(text, element.lineno, unresolved=not known))
    return _flags(words, path, condition)


def _launch_string(node: ast.Constant, path: str, condition: str) -> list[Setting]:
    """A string holding a shell command line that starts a server (``shell=True``,
    ``shlex.split``, a notebook helper's script): read as the shell reader reads a script,
    exports before the launch included. A string that starts no server says nothing."""
    text = str(node.value)
    starts = False
    for line in text.replace("\\\n", " ").split("\n"):
        try:
            words = lex(line, node.lineno, lambda _name: None)
        except (ParseError, ValueError):
            continue
        if find_launch(words) is not None:
            starts = True
            break
    if not starts:
        return []
    try:
        found = shell_settings(text, where=path, first_line=node.lineno)
    except ParseError:
        return []
    return [dataclasses.replace(s, condition=_and(condition, s.condition)) for s in found]


def _flags(words: list[Word], path: str, condition: str) -> list[Setting]:
    launch = find_launch(words)
    if launch is None:
        return []
    return [
        Setting(key, value, Scope.FLAG, f"{path}:{line}", condition=condition)
        for key, value, line in flag_values(launch.args)
    ]
