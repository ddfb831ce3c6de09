"""Python launch scripts as config files: the environment they set and the servers they start.

The shapes are those of launchers in public repositories (a `subprocess.Popen` word list with
`--model-path` from a module constant and a GPU count computed at run time; a notebook helper
given a shell script as one string with an `export` before the launch); the text here is ours.
"""

from __future__ import annotations

import pytest

from evidence.vocabulary import Scope
from ingest.parsers.configfiles import extract_settings, file_kind, is_config_path
from ingest.parsers.pyconfig import python_settings
from ingest.parsers.types import ParseError

LAUNCHER = """\
import os
import subprocess

import torch

MODEL = "deepseek-ai/DeepSeek-V4"
os.environ["SGLANG_SM120_MMA_TARGET_CTAS"] = "512"
os.environ.setdefault("NCCL_DEBUG", "WARN")
os.environ.update({"SGLANG_ENABLE_PDL": True}, SGLANG_LOG_LEVEL="info")
if torch.cuda.get_device_capability()[0] >= 12:
    os.environ["SGLANG_ATTN_BACKEND"] = "flashinfer"
else:
    os.environ["SGLANG_ATTN_BACKEND"] = "fa3"


def main(extra):
    cmd = [
        "python", "-m", "sglang.launch_server",
        "--model-path", MODEL,
        "--tp", str(torch.cuda.device_count()),
        "--max-running-requests", 256,
        "--enable-metrics",
        *extra,
    ]
    subprocess.Popen(cmd, env={**os.environ, "CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    subprocess.run(["python", "-m", "sglang.bench_serving", "--num-prompts", "10"])
    print("usage: export FOO=1 and run")  # a string that starts no server says nothing


if __name__ == "__main__":
    main([])
"""


def _by_key(settings):  # type: ignore[no-untyped-def]
    return {(s.key, s.scope): (s.value, s.where, s.condition) for s in settings}


def test_a_python_launcher_gives_its_environment_and_its_servers_flags() -> None:
    found = _by_key(python_settings("launch_dsv4.py", LAUNCHER))
    assert found == {
        ("SGLANG_SM120_MMA_TARGET_CTAS", Scope.ENV): ("512", "launch_dsv4.py:7", ""),
        ("NCCL_DEBUG", Scope.ENV): ("WARN", "launch_dsv4.py:8", ""),
        ("SGLANG_ENABLE_PDL", Scope.ENV): ("true", "launch_dsv4.py:9", ""),
        ("SGLANG_LOG_LEVEL", Scope.ENV): ("info", "launch_dsv4.py:9", ""),
        ("SGLANG_ATTN_BACKEND", Scope.ENV): (
            "fa3",
            "launch_dsv4.py:13",
            "if not (torch.cuda.get_device_capability()[0] >= 12)",
        ),
        # the server's flags: a module constant read as its value, a count the run computes
        # kept as written; the benchmark client's are not a server's
        ("--model-path", Scope.FLAG): ("deepseek-ai/DeepSeek-V4", "launch_dsv4.py:19", ""),
        ("--tp", Scope.FLAG): ("str(torch.cuda.device_count())", "launch_dsv4.py:20", ""),
        ("--max-running-requests", Scope.FLAG): ("256", "launch_dsv4.py:21", ""),
        ("--enable-metrics", Scope.FLAG): ("true", "launch_dsv4.py:22", ""),
        ("CUDA_VISIBLE_DEVICES", Scope.ENV): ("0,1,2,3", "launch_dsv4.py:25", ""),
    }
    both = [s for s in python_settings("l.py", LAUNCHER) if s.key == "SGLANG_ATTN_BACKEND"]
    assert [(s.value, s.condition) for s in both] == [
        ("flashinfer", "if torch.cuda.get_device_capability()[0] >= 12"),
        ("fa3", "if not (torch.cuda.get_device_capability()[0] >= 12)"),
    ]


def test_a_shell_script_in_a_string_is_read_as_the_shell_reader_reads_it() -> None:
    text = (
        "from helpers import launch_server_cmd\n"
        "\n"
        'proc, port = launch_server_cmd("""\n'
        "export SGLANG_SM120_MMA_TARGET_CTAS=512\n"
        "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4 --tp 8\n"
        '""")\n'
    )
    found = [(s.key, s.value, s.where) for s in python_settings("run_notebook.py", text)]
    assert found == [
        ("SGLANG_SM120_MMA_TARGET_CTAS", "512", "run_notebook.py:4"),
        ("--model-path", "deepseek-ai/DeepSeek-V4", "run_notebook.py:5"),
        ("--tp", "8", "run_notebook.py:5"),
    ]


def test_which_python_files_are_launchers_and_a_broken_one_names_its_line() -> None:
    for path in (
        "launch_dsv4.py",
        "deploy/deploy_sglang.py",
        "serve.py",
        "scripts/run_server.py",
        "run.py",
        "start-dsv4.py",
    ):
        assert file_kind(path) == "python", path
    for path in ("src/app.py", "tests/run_test.py", "setup.py", "launch.pyc", "runtime.py"):
        assert not is_config_path(path), path
    with pytest.raises(ParseError) as err:
        extract_settings("launch.py", "import os\nos.environ['A'] = (\n")
    assert err.value.file == "launch.py" and err.value.line in (2, 3)
    assert "expected Python source" in err.value.message
    # A Python 2 module with a launcher's name that names no environment and no server (a
    # package's run.py in an old history, as Flask's has): nothing, not an error.
    assert extract_settings("flask/run.py", "def run():\n    print 'serving'\n") == []
