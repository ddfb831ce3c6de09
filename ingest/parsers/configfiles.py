"""Settings in config files of a deploy repository, and the changes between two versions.

Pure: path and text in, :class:`Setting` values out. A git reader fetches the files for which
:func:`is_config_path` is true, reads each version with :func:`extract_settings` and turns two
versions into changes with :func:`diff_settings`.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import posixpath
import re
import shlex
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from evidence.vocabulary import Scope, Source

from . import jsontext, secrets
from .markdown import markdown_settings
from .pyconfig import python_settings
from .shell import ShellReader, expand_vars, shell_settings
from .text import key_value
from .types import UTC, ConfigChangeRecord, ParseError, Setting

__all__ = [
    "diff_settings",
    "extract_settings",
    "file_kind",
    "generated_data",
    "is_config_path",
    "setting_condition",
]

_SHELL_SUFFIXES = (".sh", ".bash", ".zsh")
_SCRIPT_PREFIXES = ("launch", "run", "start")
# (the word alone or followed by a separator: `run_server.py`, `deploy-dsv4.py`, not
# `runtime.py` or `server.py`)
_PYTHON_LAUNCHER = re.compile(rf"(?:{'|'.join((*_SCRIPT_PREFIXES, 'serve', 'deploy'))})(?:[_-].*)?")
_MARKDOWN_SUFFIXES = (".md", ".markdown")
_YAML_SUFFIXES = (".yaml", ".yml")
# Lock files and other files tools write: their names say so, their contents are resolved
# dependency trees, not settings anyone chose (on real repositories they made 30-60% of the
# "config changes").
_NOT_CONFIG = frozenset(
    {"package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock", "poetry.lock",
     "cargo.lock", "gemfile.lock", "composer.lock", "pipfile.lock", "uv.lock", "pdm.lock",
     "bun.lock", "flake.lock", "deno.lock", "packages.lock.json", "podfile.lock", "mix.lock",
     "go.sum", "go.work.sum", ".terraform.lock.hcl", "selection.json"}
)  # fmt: skip
_NOT_CONFIG_SUFFIXES = (".lock", "-lock.json", "-lock.yaml", ".lock.json", ".min.json", ".map")
_NOT_CONFIG_DIRS = frozenset(
    {"node_modules", "bower_components", ".yarn", "__generated__",
     # a project's CI, its tests' fixtures: no server's configuration
     ".github", ".gitlab", ".circleci", ".buildkite", "tests", "test", "__tests__", "testdata",
     "fixtures"}
)  # fmt: skip
# Tools' own settings (docs site, linters, CI services), not a server's.
_NOT_SERVER_CONFIG = frozenset(
    {"mkdocs.yml", "mkdocs.yaml", ".pre-commit-config.yaml", ".readthedocs.yaml",
     ".readthedocs.yml", "codecov.yml", ".codecov.yml", "renovate.json", ".markdownlint.json",
     ".markdownlint.yaml", ".yamllint", ".yamllint.yaml", "dependabot.yml", ".gitlab-ci.yml",
     ".travis.yml", "tox.ini", ".golangci.yml", ".eslintrc.json", "tsconfig.json"}
)  # fmt: skip
# Hand-written configuration is kilobytes; a structured file this big is data.
MAX_CONFIG_CHARS = 256 * 1024
_MINIFIED_LINE = 2000  # a JSON file whose lines average longer than this was written by a tool
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_TOML_LINE = re.compile(r"at line (\d+)")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
# libyaml's parser when PyYAML was built with it: the same nodes and marks, ~10x quicker
# (a repository's history reads thousands of YAML versions).
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=65536)  # a history asks about the same paths thousands of times
def _kind(path: str) -> str:
    name = posixpath.basename(path).lower()
    if name in _NOT_CONFIG or name in _NOT_SERVER_CONFIG or name.endswith(_NOT_CONFIG_SUFFIXES):
        return ""
    if _NOT_CONFIG_DIRS.intersection(path.split("/")[:-1]):
        return ""
    if name.endswith(_MARKDOWN_SUFFIXES):
        return "markdown"
    if name == ".env" or name.endswith(".env") or name.startswith(".env."):
        return "dotenv"
    if name.endswith(_SHELL_SUFFIXES):
        return "shell"
    if name.endswith(_YAML_SUFFIXES):
        return "yaml"
    if name.endswith(".toml"):
        return "toml"
    if name.endswith(".json"):
        return "json"
    # Extensionless launch scripts: `launch`, `run_server`, `start-dsv4`.
    if "." not in name and name.startswith(_SCRIPT_PREFIXES):
        return "shell"
    # Launchers written in Python: `launch_dsv4.py`, `deploy_sglang.py`, `serve.py`.
    if name.endswith(".py") and _PYTHON_LAUNCHER.fullmatch(name[:-3]):
        return "python"
    return ""


def file_kind(path: str) -> str:
    """How a config file is read: ``markdown``, ``dotenv``, ``shell``, ``yaml``, ``toml``,
    ``json`` or ``python``; "" for a file that is not configuration."""
    return _kind(path)


def is_config_path(path: str) -> bool:
    """Whether a file's contents can assert settings (scripts, .env, YAML/TOML/JSON, Markdown,
    Python launchers)."""
    return bool(_kind(path))


def generated_data(path: str, text: str) -> str:
    """Why a file with a config name holds generated data rather than settings ("" if it does
    not): huge, minified, or an icon font's glyph table (IcoMoon, Fontello)."""
    kind = _kind(path)
    if kind not in ("json", "yaml", "toml"):
        return ""
    if len(text) > MAX_CONFIG_CHARS:
        return f"{len(text):,} characters, over the {MAX_CONFIG_CHARS:,} of a hand-written file"
    if kind != "json":
        return ""
    lines = text.count("\n") + 1
    if len(text) > 2 * _MINIFIED_LINE and len(text) / lines > _MINIFIED_LINE:
        return "minified JSON"
    head = text[:4096]
    if '"IcoMoonType"' in head or ('"glyphs"' in text and '"css_prefix_text"' in text):
        return "an icon font's glyph table"
    return ""


def extract_settings(path: str, text: str) -> list[Setting]:
    """The settings one version of a file asserts; ``[]`` for a file that is not config.

    Malformed YAML/TOML/JSON/.env raises ParseError naming the line where one is known.
    """
    text = text.removeprefix("\ufeff")
    try:
        return _extract(_kind(path), path, text)
    except RecursionError as exc:
        raise ParseError(
            path, 0, "expected nesting a parser can follow; this file nests too deep"
        ) from exc


def _extract(kind: str, path: str, text: str) -> list[Setting]:
    if kind == "markdown":
        return markdown_settings(text, path=path)
    if kind == "shell":
        return shell_settings(text, where=path)
    if kind == "dotenv":
        return _dotenv_settings(path, text)
    if kind == "python":
        return python_settings(path, text)
    if kind == "yaml":
        return _yaml_settings(path, text)
    if kind == "toml":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            found = _TOML_LINE.search(str(exc))
            raise ParseError(
                path, int(found.group(1)) if found else 0, f"expected valid TOML: {exc}"
            ) from exc
        return _plain_settings(path, data)
    if kind == "json":
        try:
            data = jsontext.loads(text, path)  # deep nesting, huge numbers: a line error
        except json.JSONDecodeError as exc:
            raise ParseError(
                path, exc.lineno, f"expected valid JSON: {exc.msg} (column {exc.colno})"
            ) from exc
        return _plain_settings(path, data)
    return []


# --- .env ----------------------------------------------------------------------------------------


def _dotenv_settings(path: str, text: str) -> list[Setting]:
    out: list[Setting] = []
    env: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        pair = key_value(line, _ENV_NAME, spaced=True)
        if pair is None:
            raise ParseError(
                path, lineno, f"expected KEY=VALUE (a variable name, '=', a value), got {raw!r}"
            )
        name, rest = pair
        value = _dotenv_value(rest.strip(), path, lineno)
        if not rest.strip().startswith("'"):
            value = expand_vars(value, env)
        env[name] = value
        out.append(Setting(name, value, Scope.ENV, f"{path}:{lineno}"))
    return out


def _dotenv_value(rest: str, path: str, lineno: int) -> str:
    if rest[:1] in ("'", '"'):
        try:
            words = shlex.split(rest, comments=True)
        except ValueError as exc:
            raise ParseError(
                path, lineno, f"expected a closing {rest[0]} on the same line ({exc})"
            ) from exc
        if len(words) != 1:
            raise ParseError(
                path, lineno, "expected one quoted value, then nothing but a # comment"
            )
        return words[0]
    # Unquoted: an inline comment starts at " #".
    cut = rest.find(" #")
    return (rest[:cut] if cut >= 0 else rest).strip()


# --- YAML ----------------------------------------------------------------------------------------


def yaml_launch_settings(path: str, text: str, *, first_line: int = 1) -> list[Setting]:
    """What a YAML manifest in a doc's code block (starting at ``first_line``) runs: its
    containers' environment and the flags of the server its command/args launch. Not every
    key of it: a doc's manifest is an example deployment, and its names, labels and ports are
    no server configuration. Malformed YAML raises ParseError at the doc's line."""
    return _yaml_settings(path, "\n" * (first_line - 1) + text, launches_only=True)


def _yaml_settings(path: str, text: str, *, launches_only: bool = False) -> list[Setting]:
    try:
        documents = [d for d in yaml.compose_all(text, Loader=_YAML_LOADER) if d is not None]
        walker = _YamlWalker(path, multi=len(documents) > 1)
        for index, document in enumerate(documents):
            walker.unit = walker.doc_unit = None  # each document is a unit of its own
            walker.walk(document, f"{index}" if walker.multi else "")
        walker.name_launches(launches_only=launches_only)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "a well-formed document"
        raise ParseError(
            path,
            mark.line + 1 if mark is not None else 0,
            f"expected valid YAML: {what}"
            + (f" (column {mark.column + 1})" if mark is not None else ""),
        ) from exc
    except yaml.YAMLError as exc:
        raise ParseError(path, 0, f"expected valid YAML: {exc}") from exc
    return walker.env_settings if launches_only else walker.settings + walker.env_settings


@dataclass
class _Unit:
    """One part of a manifest that deploys one thing: a list item (a role of a RoleBasedGroup,
    a container, a k8s List's resource), a compose service, or else the document. Its launches,
    each with the keys above it and the container it is in, and its environment blocks."""

    name: str
    line: int
    # (keys above it, its container's line, its settings, the name a script gave it)
    launches: list[tuple[tuple[str, ...], int, list[Setting], str]] = field(default_factory=list)
    env: list[tuple[int, list[Setting]]] = field(default_factory=list)


class _YamlWalker:
    """Flattens YAML nodes to dotted keys, keeping each value's line for ``where``."""

    def __init__(self, path: str, *, multi: bool) -> None:
        self.path = path
        self.multi = multi
        self.settings: list[Setting] = []
        self.env_settings: list[Setting] = []
        self.constructor = yaml.SafeLoader("")
        self.units: list[_Unit] = []
        self.unit: _Unit | None = None  # the unit being walked
        self.doc_unit: _Unit | None = None  # the document's, for what lies in no unit
        self.keys: tuple[str, ...] = ()  # the mapping keys above the node being walked

    def _enter(self, node: yaml.Node) -> _Unit:
        name = ""
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if (
                    isinstance(key_node, yaml.ScalarNode)
                    and key_node.value == "name"
                    and isinstance(value_node, yaml.ScalarNode)
                ):
                    name = str(value_node.value)
        unit = _Unit(name=name, line=node.start_mark.line + 1)
        self.units.append(unit)
        return unit

    def _in_unit(self, node: yaml.Node, walk: Any) -> None:
        """Walk ``node`` inside a unit: a new one when none is open."""
        if self.unit is not None:
            walk()
            return
        self.unit = self._enter(node)
        try:
            walk()
        finally:
            self.unit = None

    def name_launches(self, *, launches_only: bool) -> None:
        """Several launches in one manifest (prefill and decode roles, a leader and its
        workers): each is a profile of its own, with the environment of its container and of
        its unit; a unit's environment that reaches no launch is no server's (a router's) and is
        left out of a doc's block (``launches_only``). One launch: nothing changes."""
        launches = [(u, launch) for u in self.units for launch in u.launches]
        if len(launches) < 2:
            return
        bases = []
        for unit, (keys, _container, settings, given) in launches:
            flags = {x.key: x.value for x in settings if x.scope == Scope.FLAG}
            base = (
                given
                or flags.get("--disaggregation-mode")
                or unit.name
                or f"launch at line {unit.line}"
            )
            # A LeaderWorkerSet's leaderTemplate / workerTemplate (or a RoleBasedGroup role's
            # patchLeaderTemplate / patchWorkerTemplate): which of the group this one is.
            role = next(
                (r for k in reversed(keys) for r in ("leader", "worker") if r in k.lower()), ""
            )
            bases.append((str(base), role))
        names: list[str] = []
        seen: dict[str, int] = {}
        per_base = Counter(b for b, _ in bases)
        for base, role in bases:
            name = f"{base} {role}" if per_base[base] > 1 and role else base
            seen[name] = seen.get(name, 0) + 1
            names.append(name if seen[name] == 1 else f"{name} {seen[name]}")
        # Each unit's environment: its containers' own, and what lies in none of its launches'
        # containers (a template's), which reaches all of them. Found once per unit.
        own: dict[tuple[int, int], list[Setting]] = {}
        shared: dict[int, list[Setting]] = {}
        for unit in {id(u): u for u, _ in launches}.values():
            containers = {c for _, c, _, _ in unit.launches}
            shared[id(unit)] = [x for at, b in unit.env if at not in containers for x in b]
            for at, b in unit.env:
                if at in containers:
                    own.setdefault((id(unit), at), []).extend(b)
        named: list[Setting] = []
        for (unit, (_keys, container, settings, _given)), name in zip(launches, names, strict=True):
            env = [*own.get((id(unit), container), []), *shared[id(unit)]]
            named.extend(replace(x, profile=name) for x in [*env, *settings])
        # Environment of units that launch nothing.
        idle = (
            []
            if launches_only
            else [x for u in self.units if not u.launches for _, b in u.env for x in b]
        )
        self.env_settings = idle + named

    def value(self, node: yaml.Node) -> Any:
        return self.constructor.construct_object(node, deep=True)

    def where(self, node: yaml.Node) -> str:
        return f"{self.path}:{node.start_mark.line + 1}"

    def walk(self, node: yaml.Node, prefix: str, *, record: bool = True) -> None:
        """Record scalars (and lists as JSON) under dotted keys; find env blocks and commands.

        Lists are one setting each, but their items are still searched (``record=False``):
        a k8s container's ``env`` and ``command`` sit inside the ``containers`` list.
        """
        if isinstance(node, yaml.MappingNode):
            self.constructor.flatten_mapping(node)  # resolves `<<: *anchor` merges
            commands: dict[str, yaml.Node] = {}
            here = node.start_mark.line + 1  # the container (mapping) a launch or env is in
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = str(key_node.value)
                dotted = f"{prefix}.{key}" if prefix else key
                if key in ("env", "environment"):
                    self._env(here, self.env_block(value_node))
                if key in ("command", "args", "entrypoint"):
                    commands[key] = value_node
                if key in _SCRIPT_KEYS:
                    self._launched(here, self.script(value_node))
                keys = self.keys
                self.keys = (*keys, key)
                try:
                    if self.keys[-2:-1] == ("services",) and self.unit is None:
                        # A compose service is a unit of its own.
                        self._in_unit(
                            value_node,
                            lambda v=value_node, d=dotted: self.walk(v, d, record=record),
                        )
                    else:
                        self.walk(value_node, dotted, record=record)
                finally:
                    self.keys = keys
            if commands:
                self._launched(here, self.launch(commands))
        elif isinstance(node, yaml.SequenceNode):
            if record:
                self.settings.append(
                    Setting(prefix, _render(self.value(node)), Scope.FILE, self.where(node))
                )
            for item in node.value:
                self._in_unit(item, lambda i=item: self.walk(i, prefix, record=False))
        elif isinstance(node, yaml.ScalarNode) and prefix and record:
            self.settings.append(
                Setting(prefix, _render(self.value(node)), Scope.FILE, self.where(node))
            )

    def _env(self, container: int, settings: list[Setting]) -> None:
        self.env_settings.extend(settings)
        if settings:
            unit = self.unit or self._document_unit()
            unit.env.append((container, settings))

    def _launched(self, container: int, settings: list[Setting]) -> None:
        self.env_settings.extend(settings)
        profiles = list(dict.fromkeys(x.profile for x in settings if x.profile))
        if profiles:
            # A script that launches several servers (its reader named them): each a launch
            # of its own, with what the script shares among them.
            unit = self.unit or self._document_unit()
            common = [x for x in settings if not x.profile]
            for name in profiles:
                mine = [replace(x, profile="") for x in settings if x.profile == name]
                unit.launches.append((self.keys, container, common + mine, name))
        elif any(x.scope == Scope.FLAG for x in settings):
            unit = self.unit or self._document_unit()
            unit.launches.append((self.keys, container, settings, ""))
        elif settings:
            (self.unit or self._document_unit()).env.append((container, settings))

    def _document_unit(self) -> _Unit:
        """What lies outside any list item or service: the document's own unit."""
        if self.doc_unit is None:
            self.doc_unit = _Unit(name="", line=1)
            self.units.append(self.doc_unit)
        return self.doc_unit

    def env_block(self, node: yaml.Node) -> list[Setting]:
        """A k8s ``env:`` list or a compose ``environment:`` map or list, each entry at its line."""
        if isinstance(node, yaml.MappingNode):
            return [
                s
                for key_node, value_node in node.value
                for s in _env_block({key_node.value: self.value(value_node)}, self.where(key_node))
            ]
        if isinstance(node, yaml.SequenceNode):
            return [
                s for item in node.value for s in _env_block([self.value(item)], self.where(item))
            ]
        return []

    def script(self, node: yaml.Node) -> list[Setting]:
        """Settings of a shell script kept in YAML (dstack's ``commands:``, a CI job's
        ``script:``, SkyPilot's ``run:``): a string or a list of strings, run in one shell, each
        line at its own line where the YAML shows it (a ``|`` block starts on the next line)."""
        parts = node.value if isinstance(node, yaml.SequenceNode) else [node]
        scripts = [p for p in parts if isinstance(p, yaml.ScalarNode) and isinstance(p.value, str)]
        if not scripts:
            return []
        reader = ShellReader(where=self.path)
        try:
            for part in scripts:
                block = part.style in ("|", ">")
                reader.feed(part.value, first_line=part.start_mark.line + 1 + block)
        except ParseError:
            return []  # not shell after all (a bot's `commands: ["don't panic"]`): no launch
        settings, _ = reader.result()
        return settings

    def launch(self, commands: Mapping[str, yaml.Node]) -> list[Setting]:
        """Flags of a server launched by a container's ``command``/``args`` (k8s, compose)."""
        words: list[str] = []
        line = 0
        for key in ("entrypoint", "command", "args"):
            node = commands.get(key)
            if node is None:
                continue
            line = line or node.start_mark.line + 1
            value = self.value(node)
            if isinstance(value, list):
                words.extend(str(v) for v in value)
            elif isinstance(value, str):
                words.extend(shlex.split(value) if _splits(value) else value.split())
        # `sh -c "python3 -m sglang.launch_server ..."`: the script is the last word.
        if len(words) >= 3 and posixpath.basename(words[0]) in _SHELLS and words[1] == "-c":
            return shell_settings(words[2], where=self.path, first_line=line)
        return [
            Setting(s.key, s.value, s.scope, f"{self.path}:{line}", s.condition)
            for s in shell_settings(shlex.join(words), where=self.path)
        ]


# YAML keys holding a shell script run as is (dstack, GitLab CI, SkyPilot, GitHub Actions).
_SCRIPT_KEYS = frozenset({"commands", "script", "run"})


def _splits(value: str) -> bool:
    try:
        shlex.split(value)
    except ValueError:
        return False
    return True


def _env_block(value: Any, where: str) -> list[Setting]:
    """Environment variables of a k8s ``env:`` list, a compose ``environment:`` map or list."""
    out: list[Setting] = []
    if isinstance(value, dict):
        for name, val in value.items():
            if isinstance(name, str) and _ENV_NAME.fullmatch(name) and not isinstance(val, dict):
                out.append(Setting(name, _render(val), Scope.ENV, where))
    elif isinstance(value, list):
        for entry in value:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str) and "value" in entry:
                out.append(Setting(entry["name"], _render(entry["value"]), Scope.ENV, where))
            elif isinstance(entry, str) and (pair := key_value(entry, _ENV_NAME)) is not None:
                out.append(Setting(pair[0], pair[1], Scope.ENV, where))
    return out


# --- TOML / JSON ---------------------------------------------------------------------------------


def _plain_settings(path: str, data: Any) -> list[Setting]:
    """Flatten parsed TOML/JSON. These parsers report no positions, so ``where`` is the path."""
    out: list[Setting] = []
    env: list[Setting] = []

    def walk(value: Any, prefix: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                dotted = f"{prefix}.{key}" if prefix else str(key)
                if key in ("env", "environment"):
                    env.extend(_env_block(inner, path))
                walk(inner, dotted)
        elif prefix:
            out.append(Setting(prefix, _render(value), Scope.FILE, path))

    walk(data, "")
    return out + env


def _render(value: Any) -> str:
    """A scalar as text: strings as they are, everything else as JSON would write it; a
    secret inside (a k8s env entry's value, the word after ``--api-key`` in a command list)
    as its fingerprint (secrets.scrub)."""
    value = secrets.scrub(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):  # YAML !!binary
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return json.dumps(value, ensure_ascii=False, default=_json_default)


def _json_default(value: Any) -> str:
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value)


# --- diff ----------------------------------------------------------------------------------------


def diff_settings(
    before: Iterable[Setting],
    after: Iterable[Setting],
    *,
    at: dt.datetime,
    source: Source,
    ref: str,
) -> list[ConfigChangeRecord]:
    """Changes from one state to the next, sorted by key.

    A setting's identity is (profile, key, condition): the launches of a document with several
    are diffed apart. When one state names an identity twice the last one wins. Introduced keys
    have ``old=None``, removed keys ``new=None``; unchanged keys yield nothing. A change's
    ``condition`` is :func:`setting_condition` (the launch, then the shell condition). ``at``
    must be aware; it is stored in UTC.
    """
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("diff_settings needs an aware datetime for `at`")
    at = at.astimezone(UTC)
    old_state = {(s.key, s.profile, s.condition): s for s in before}
    new_state = {(s.key, s.profile, s.condition): s for s in after}
    out: list[ConfigChangeRecord] = []
    for identity in sorted(old_state.keys() | new_state.keys()):
        old = old_state.get(identity)
        new = new_state.get(identity)
        if old is not None and new is not None and old.value == new.value:
            continue
        current = new if new is not None else old
        assert current is not None  # the identity came from one of the two states
        out.append(
            ConfigChangeRecord(
                key=identity[0],
                old=old.value if old is not None else None,
                new=new.value if new is not None else None,
                at=at,
                scope=current.scope,
                source=source,
                ref=ref,
                where=current.where,
                condition=setting_condition(current),
            )
        )
    return out


def setting_condition(setting: Setting) -> str:
    """What a setting depends on, in words: ``launch decode; if [ "$GPU" = b200 ]``."""
    launch = f"launch {setting.profile}" if setting.profile else ""
    return "; ".join(part for part in (launch, setting.condition) if part)
