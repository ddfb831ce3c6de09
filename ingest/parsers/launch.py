"""Server launch commands: which commands start a model server, and what they pass it.

Pure. A launch is, after wrappers (``exec``, ``nohup``, ``sudo``, ``env A=1``, ``numactl ...``,
``timeout 600``, a profiler or job launcher with options of its own: ``nsys profile ...``,
``srun ...``, ``mpirun ...``):

* ``python -m sglang.launch_server ...``, ``python -m vllm.entrypoints.openai.api_server ...``,
  ``python -m dynamo.sglang ...`` and ``python launch_server.py ...``; any other module
  (``sglang.benchmark.serving``, ``sglang.bench_serving``, ``sglang.test.run_eval``,
  ``sglang_router.launch_router``) is a client, a benchmark or a router, not the server;
* ``sglang serve ...``, ``vllm serve MODEL ...`` (its ``MODEL`` is read as ``--model MODEL``);
* programs that are servers themselves (``text-generation-launcher``, ``trtllm-serve``, ...;
  ``trtllm-serve MODEL`` too gives ``--model MODEL``);
* ``docker run [options] IMAGE ...`` (or podman): the command after the image when there is
  one, else the flags after the image, which the image's entrypoint takes, when the image is a
  server's (``vllm/vllm-openai``, ``lmsysorg/sglang``, TGI, Triton ...) or the flags name a model.

Its ``env`` holds the ``KEY=VALUE`` words that set the server's environment there and then
(``env A=1``, ``docker run -e A=1``); the shell reader adds the command's own prefixes.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .shell_words import Word, lex

_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?|pypy3?")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_ENV_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")

# `python -m MODULE`: the modules that are model servers (or a server's worker).
SERVER_MODULES = frozenset(
    {
        "sglang.launch_server",
        "sglang.srt.server",
        "vllm.entrypoints.openai.api_server",
        "vllm.entrypoints.api_server",
        "dynamo.sglang",
        "dynamo.vllm",
        "lmdeploy.serve.openai.api_server",
    }
)
_SERVER_SCRIPTS = frozenset({"launch_server.py", "api_server.py"})
# Programs that are servers themselves: every `--flag` after the program name is a setting.
_SERVER_PROGRAMS = frozenset(
    {"text-generation-launcher", "trtllm-serve", "llama-server", "tritonserver"}
)
# `vllm serve MODEL --flags`, `sglang serve --flags`.
_SERVE_SUBCOMMANDS = frozenset({"vllm", "sglang"})
# `trtllm-serve [serve] MODEL --flags`; these subcommands start something else, with no model.
_TRTLLM_NOT_A_MODEL = frozenset({"disaggregated", "disaggregated_mpi_worker"})
# Images whose entrypoint is a model server (`docker run IMAGE --flags`).
_SERVER_IMAGES = re.compile(
    r"vllm|sglang|text-generation-inference|tritonserver|tensorrt-llm|trtllm|llama\.cpp|"
    r"llama-server|lmdeploy",
    re.IGNORECASE,
)
_MODEL_FLAGS = frozenset({"--model", "--model-path", "--model-id", "--model_path"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
_CONTAINER_PROGRAMS = frozenset({"docker", "podman", "nvidia-docker"})

# `docker run` options that take the next word as their value.
_DOCKER_VALUE_OPTIONS = frozenset(
    {"-v", "--volume", "-p", "--publish", "-e", "--env", "--env-file", "--name", "--network",
     "--net", "--ipc", "--shm-size", "--gpus", "--runtime", "-w", "--workdir", "-u", "--user",
     "--entrypoint", "--ulimit", "--device", "--mount", "-l", "--label", "--restart", "--cpus",
     "-m", "--memory", "--memory-swap", "-h", "--hostname", "--add-host", "--cap-add",
     "--cap-drop", "--security-opt", "--pid", "--platform", "--pull", "--log-driver",
     "--log-opt", "--tmpfs", "--cpuset-cpus", "--cpuset-mems", "--group-add", "--dns",
     "--expose", "--stop-signal", "--stop-timeout", "--cgroupns", "--uts", "--userns",
     "--volumes-from", "--link", "--cidfile", "--device-cgroup-rule", "--health-cmd",
     "--health-interval", "--health-retries", "--health-timeout", "--ip", "--mac-address",
     "--storage-opt", "--sysctl", "--annotation", "--attach", "-a", "--cpu-shares", "-c",
     "--oom-score-adj", "--shm", "--network-alias", "--init-path"}
)  # fmt: skip
_SUDO_VALUE_OPTIONS = frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"})
_TIMEOUT_VALUE_OPTIONS = frozenset({"-s", "--signal", "-k", "--kill-after"})
# Programs that run a command after options of their own, too many to list (profilers, job
# launchers): `nsys profile -o out --delay 300 python3 -m sglang.launch_server ...`,
# `srun --nodes=2 --ntasks-per-node=1 python ...`. The command starts at the first word that
# starts a server (an interpreter, `sglang serve`, a server program, a container run).
_RUNNERS = {
    "nsys": frozenset({"profile", "launch"}),
    "ncu": frozenset(),
    "srun": frozenset(),
    "mpirun": frozenset(),
    "mpiexec": frozenset(),
}


@dataclass(frozen=True)
class Launch:
    """A server launch: what starts it, the words it is given, and environment it is given."""

    program: str
    args: tuple[Word, ...]
    env: tuple[Word, ...] = ()


def find_launch(words: Sequence[Word]) -> Launch | None:
    """The server launch ``words`` make (the command without its prefix assignments), or
    None when the command launches no model server."""
    env: list[Word] = []
    i = _skip_wrappers(words, 0, env)
    if i >= len(words):
        return None
    base = posixpath.basename(words[i].text)
    nxt = words[i + 1].text if i + 1 < len(words) else ""
    if _PYTHON.fullmatch(base):
        return _python_launch(words, i, env)
    if base in _SERVE_SUBCOMMANDS and nxt == "serve":
        args = words[i + 2 :]
        # (`sglang serve MODEL` reads its positional as --model-path, as vllm's as --model.)
        args = _model_as_flag(args)
        return Launch(f"{base} serve", tuple(args), tuple(env))
    if base in _SERVER_PROGRAMS:
        args = words[i + 1 :]
        if base == "trtllm-serve":
            if args and args[0].text == "serve":
                args = args[1:]
            if not (args and args[0].text in _TRTLLM_NOT_A_MODEL):
                args = _model_as_flag(args)
        return Launch(base, tuple(args), tuple(env))
    if base in _CONTAINER_PROGRAMS:
        return _container_launch(words, i + 1, env)
    return None


def _model_as_flag(args: Sequence[Word]) -> Sequence[Word]:
    """``MODEL --flags`` as ``--model MODEL --flags``.

    ``vllm serve`` and ``trtllm-serve`` take the model as their first positional word and read it
    as ``--model``. Flags skip positionals, so without this two launches that differ only in
    their model would look the same. An elided model (``vllm serve ... --flag``) names nothing,
    and with no positional at all no model is made up.
    """
    if not args or _is_flag(args[0].text) or not any(c.isalnum() for c in args[0].text):
        return args
    if args[0].placeholder or args[0].text.startswith("<"):
        return args  # `sglang serve <use args below>`: text for the reader, not a model
    # One `--model=MODEL` word, so that a second positional is not read as part of its value.
    return [replace(args[0], text=f"--model={args[0].text}"), *args[1:]]


def _skip_wrappers(words: Sequence[Word], i: int, env: list[Word]) -> int:
    """Index of the program after ``exec``, ``nohup``, ``sudo -E``, ``env A=1``, ``nice -n
    5``, ``numactl --membind=0``, ``taskset -c 0-7``, ``uv run`` ...; collects env words."""
    n = len(words)
    while i < n:
        word = words[i].text
        if word in ("exec", "nohup", "command", "builtin", "time", "stdbuf", "nice"):
            i += 1
            if word == "nice" and i < n and words[i].text == "-n":
                i += 2
            while word == "stdbuf" and i < n and words[i].text.startswith("-"):
                i += 1
            continue
        if word == "sudo":
            i += 1
            while i < n and words[i].text.startswith("-"):
                i += 2 if words[i].text in _SUDO_VALUE_OPTIONS else 1
            continue
        if word == "env":
            i += 1
            while i < n and (words[i].text.startswith("-") or _ENV_WORD.match(words[i].text)):
                if words[i].text in ("-u", "--unset", "-C", "--chdir"):
                    i += 2
                    continue
                if _ENV_WORD.match(words[i].text):
                    env.append(words[i])
                i += 1
            continue
        if word in ("numactl", "taskset"):
            i += 1
            while i < n and words[i].text.startswith("-"):
                glued = "=" in words[i].text or len(words[i].text) > 2 and word == "taskset"
                i += 1 if glued or words[i].text in ("-a", "--all") else 2
            if word == "taskset" and i < n and not words[i].text.startswith("-"):
                i += 1  # the CPU mask
            continue
        if word == "timeout":
            i += 1
            while i < n and words[i].text.startswith("-"):
                glued = "=" in words[i].text or words[i].text not in _TIMEOUT_VALUE_OPTIONS
                i += 1 if glued else 2
            i += 1  # the duration
            continue
        if word in _RUNNERS:
            subcommands = _RUNNERS[word]
            i += 1
            if subcommands:
                if i >= n or words[i].text not in subcommands:
                    return n  # `nsys stats report.nsys-rep`: no command
                i += 1
            start = next((j for j in range(i, n) if _starts_server(words, j)), None)
            if start is None:
                return n
            i = start
            continue
        if word in ("uv", "poetry", "pipenv") and i + 1 < n and words[i + 1].text == "run":
            i += 2
            continue
        if word == "conda" and i + 1 < n and words[i + 1].text == "run":
            i += 2
            while i < n and words[i].text.startswith("-"):
                i += 2 if words[i].text in ("-n", "--name", "-p", "--prefix") else 1
            continue
        return i
    return i


def _starts_server(words: Sequence[Word], i: int) -> bool:
    """Whether the command words[i:] could be a launch (what find_launch goes on to read)."""
    base = posixpath.basename(words[i].text)
    nxt = words[i + 1].text if i + 1 < len(words) else ""
    return bool(
        _PYTHON.fullmatch(base)
        or (base in _SERVE_SUBCOMMANDS and nxt == "serve")
        or base in _SERVER_PROGRAMS
        or (base in _CONTAINER_PROGRAMS and nxt == "run")
    )


def _python_launch(words: Sequence[Word], i: int, env: list[Word]) -> Launch | None:
    j = i + 1
    # Interpreter options (`-u`, `-O`, `-X dev`) come before `-m`.
    while j < len(words) and words[j].text.startswith("-") and words[j].text != "-m":
        j += 2 if words[j].text in ("-X", "-W") else 1
    if j >= len(words):
        return None
    if words[j].text == "-m" and j + 1 < len(words):
        module = words[j + 1].text
        if module in SERVER_MODULES or module.rsplit(".", 1)[-1] == "launch_server":
            return Launch(module, tuple(words[j + 2 :]), tuple(env))
        return None
    script = posixpath.basename(words[j].text)
    if script in _SERVER_SCRIPTS:
        return Launch(script, tuple(words[j + 1 :]), tuple(env))
    return None


def _container_launch(words: Sequence[Word], i: int, env: list[Word]) -> Launch | None:
    n = len(words)
    if i < n and words[i].text == "container":
        i += 1
    if i >= n or words[i].text != "run":
        return None
    i += 1
    interactive = False
    while i < n and words[i].text.startswith("-"):
        option = words[i].text
        name, eq, value = option.partition("=")
        if name == "--interactive" or (
            not name.startswith("--") and "i" in name and "t" in name and "d" not in name
        ):
            interactive = True
        if name in ("-e", "--env") and (eq or i + 1 < n):
            setting = value if eq else words[i + 1].text
            if _ENV_WORD.match(setting) and not (words[i + 1].placeholder if not eq else False):
                env.append(Word(setting, words[i].line if eq else words[i + 1].line))
        i += 1 if eq or name not in _DOCKER_VALUE_OPTIONS else 2
    if i >= n:
        return None
    image = words[i]
    rest = list(words[i + 1 :])
    if not rest and interactive:
        return None  # `docker run -it IMAGE`: a shell in the image to work in, no server yet
    if rest and not rest[0].text.startswith("-") and not rest[0].placeholder:
        if posixpath.basename(rest[0].text) in _SHELLS and len(rest) >= 3 and rest[1].text == "-c":
            rest = lex(rest[2].text, rest[2].line, lambda _name: None)
        inner = find_launch(rest)
        if inner is None:
            return None
        return Launch(inner.program, inner.args, (*env, *inner.env))
    flags = {w.text.split("=", 1)[0] for w in rest}
    if _SERVER_IMAGES.search(image.text) or flags & _MODEL_FLAGS:
        return Launch(image.text, tuple(rest), tuple(env))
    return None


def launch_flags(words: Sequence[str]) -> list[tuple[str, str]] | None:
    """The ``(flag, value)`` pairs of a server launch command, or None if it launches no server.

    ``words`` are already split (e.g. a Kubernetes ``command`` + ``args`` list). A flag without
    a value gets ``"true"``; several values after one flag are joined with spaces.
    """
    found = find_launch([Word(w, 0) for w in words])
    if found is None:
        return None
    return [(key, value) for key, value, _ in flag_values(found.args)]


def _is_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and not _NUMBER.fullmatch(word)


def flag_values(words: Sequence[Word]) -> list[tuple[str, str, int]]:
    """``--flag value``, ``--flag=value`` and bare ``--flag`` (value "true"), in order.

    Words before the first flag are positional and skipped (:func:`find_launch` has already
    turned the model of ``vllm serve MODEL`` into ``--model MODEL``); a
    ``<placeholder>`` value stays as written (the doc leaves it to the reader).
    """
    out: list[tuple[str, str, int]] = []
    k = 0
    while k < len(words):
        word, line = words[k].text, words[k].line
        k += 1
        if not _is_flag(word):
            continue  # a positional argument
        if word.startswith("--") and "=" in word:
            key, value = word.split("=", 1)
            out.append((key, value, line))
            continue
        values: list[str] = []
        while k < len(words) and not _is_flag(words[k].text):
            if values and words[k].placeholder:
                break  # `--model-path m <other args>`: the reader's part, not this flag's
            values.append(words[k].text)
            k += 1
        out.append((word, " ".join(values) if values else "true", line))
    return out
