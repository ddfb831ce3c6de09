"""Deployment docs read as a shell would (issue 14 A): one small doc or snippet per shape.

Each case is a shape a real guide had (see tests/fixtures/real/README.md) that used to give
wrong settings: clients taken for the server, function locals, arithmetic, ``+=``, text
blocks, test-command prefixes, a control experiment's exports, unresolved conditionals,
``${VAR,,}``, ``docker run IMAGE --flags``, argument arrays, ``<placeholders>``, and several
launches collapsed into one.
"""

from __future__ import annotations

import pytest

from ingest.parsers.configfiles import diff_settings
from ingest.parsers.markdown import document_settings, markdown_settings, tokenize
from ingest.parsers.shell import shell_settings
from ingest.parsers.types import UTC, ParseError, Setting

LAUNCH = "python3 -m sglang.launch_server"


def sh(text: str) -> list[tuple[str, str | None]]:
    return [(s.key, s.value) for s in shell_settings(text, where="s.sh")]


def full(text: str) -> list[tuple[str, str | None, str, str]]:
    """(key, value, condition, profile) of a Markdown doc's settings."""
    return [(s.key, s.value, s.condition, s.profile) for s in markdown_settings(text, path="d.md")]


def block(body: str, lang: str = "bash") -> str:
    return f"```{lang}\n{body}```\n\n"


# --- what launches a server -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "python3 -m sglang.benchmark.serving --backend sglang --port 30000 --num-prompts 1",
        "python3 -m sglang.bench_serving --dataset-name random --request-rate 4",
        "python -m sglang.test.run_eval --port 30000 --eval-name gpqa",
        "python -m sglang_router.launch_router --pd-disaggregation --port 8000",
        "python3 -m pytest -q test/registered/attention/test_deepseek_v4.py",
        "docker build . --target vllm-openai --tag vllm/vllm-openai",
        "echo python3 -m sglang.launch_server --tp 8",
        "docker run --rm ubuntu:24.04 --version",
    ],
)
def test_clients_benchmarks_routers_and_other_commands_are_not_launches(command: str) -> None:
    assert sh(command + "\n") == []


VLLM_IMAGE = "docker run --gpus all -v /m:/m -p 8000:8000 --ipc=host vllm/vllm-openai:latest"
SGLANG_IMAGE = "docker run --gpus all --shm-size 32g lmsysorg/sglang:latest"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (f"{LAUNCH} --tp 8", [("--tp", "8")]),
        (
            "python -m vllm.entrypoints.openai.api_server --model m --tp 2",
            [("--model", "m"), ("--tp", "2")],
        ),
        ("sglang serve --model-path m --tp 8", [("--model-path", "m"), ("--tp", "8")]),
        (
            "vllm serve deepseek-ai/DeepSeek-V4 -tp 8",
            [("--model", "deepseek-ai/DeepSeek-V4"), ("-tp", "8")],
        ),
        (f"sudo -E numactl --interleave=all nohup {LAUNCH} --tp 8", [("--tp", "8")]),
        # docker run IMAGE --flags: the image's entrypoint is the server
        (f"{VLLM_IMAGE} --model /m --max-len 8", [("--model", "/m"), ("--max-len", "8")]),
        # docker run IMAGE COMMAND: the command after the image
        (f"{SGLANG_IMAGE} {LAUNCH} --tp 8", [("--tp", "8")]),
        (f"docker run img:1 bash -c '{LAUNCH} --tp 4'", [("--tp", "4")]),
        # an image not known as a server's, given a model: still a server
        (
            "docker run my/inference:v1 --model-path /m --tp 2",
            [("--model-path", "/m"), ("--tp", "2")],
        ),
    ],
)
def test_server_launches_give_their_flags(command: str, expected: list[tuple[str, str]]) -> None:
    assert sh(command + "\n") == expected


@pytest.mark.parametrize(
    ("text", "launched"),
    [
        # The vLLM recipe for AMD GPUs: a shell in the image to work in, the server comes later.
        ("docker run -it --rm -e SHELL=/bin/bash --network=host rocm/vllm:latest\n", False),
        ("docker run --interactive --tty -e A=1 vllm/vllm-openai\n", False),
        # Detached with a tty, or given flags: the image's entrypoint starts the server.
        ("docker run -dit -e A=1 vllm/vllm-openai\n", True),
        ("docker run -it -e A=1 vllm/vllm-openai --model m\n", True),
    ],
)
def test_an_interactive_docker_run_without_a_command_is_no_launch(
    text: str, launched: bool
) -> None:
    launches = [s for s in shell_settings(text, where="s.sh") if s.scope == "env"]
    assert bool(launches) == launched


def test_docker_env_and_launch_prefixes_are_the_servers_environment() -> None:
    text = (
        'docker run -e SGLANG_ENABLE_PDL=1 --env "HF_TOKEN=<secret>" --env=NCCL_DEBUG=WARN \\\n'
        "  lmsysorg/sglang:latest python3 -m sglang.launch_server --tp 8\n"
        "CUDA_VISIBLE_DEVICES=0 python3 -m pytest -q tests/\n"
    )
    assert sh(text) == [("SGLANG_ENABLE_PDL", "1"), ("NCCL_DEBUG", "WARN"), ("--tp", "8")]


# --- variables ------------------------------------------------------------------------------------


def test_function_locals_and_the_commands_of_a_function_are_not_settings() -> None:
    text = (
        "run_case() {\n"
        '  local name="$1"\n'
        '  local input_len="$2"\n'
        "  RESULT=$name.jsonl\n"
        '  python3 -m sglang.benchmark.serving --random-input-len "${input_len}" --seed 42\n'
        "}\n"
        "run_case short 16\n"
        "export A=1\n"
    )
    assert sh(text) == [("A", "1")]


def test_a_launch_inside_a_function_takes_what_the_function_exports() -> None:
    text = (
        "export MODEL=/m\n"
        "start() {\n"
        "  local tp=8\n"
        "  export SGLANG_ENABLE_PDL=1\n"
        f'  {LAUNCH} --model-path "$MODEL" --tp "$tp"\n'
        "}\n"
    )
    assert sh(text) == [
        ("MODEL", "/m"),
        ("SGLANG_ENABLE_PDL", "1"),
        ("--model-path", "/m"),
        ("--tp", "8"),
    ]


def test_a_tests_or_and_and_stay_in_its_condition() -> None:
    """`||` inside `[[ ]]` is the test's own operator, not a command separator (the Ascend
    guide's `if [[ "$LOCAL_HOST1" == "${P_IP[$i]}" || "$LOCAL_HOST2" == "${P_IP[$i]}" ]]`)."""
    text = 'if [[ "$HOST" == "a" || "$HOST" == "b" && -n "$X" ]]; then\n  export MODE=prefill\nfi\n'
    (setting,) = shell_settings(text, where="s.sh")
    assert setting.condition == 'if [[ "$HOST" == "a" || "$HOST" == "b" && -n "$X" ]]'


def test_a_launch_inside_a_loop_takes_what_the_loop_body_sets() -> None:
    """A multi-node script launches in a loop, each role exporting its own values first (the
    Ascend DeepSeek guide of sglang's docs): the launch runs with the body's values, not the
    document's earlier ones; after the loop the document's stand."""
    text = (
        "export HCCL_BUFFSIZE=720 TASK_QUEUE_ENABLE=0\n"
        "for i in $(seq 0 3); do\n"
        '  if [[ "$LOCAL_HOST" == "${D_IP[$i]}" ]]; then\n'
        "    export HCCL_BUFFSIZE=650\n"
        "    TASK_QUEUE_ENABLE=1\n"  # exported before: still exported
        "    MODE=decode\n"  # not exported: a variable of the body
        f'    {LAUNCH} --disaggregation-mode "$MODE"\n'
        "  fi\n"
        "done\n"
        f"{LAUNCH} --tp 8\n"
    )
    settings = shell_settings(text, where="s.sh")
    loop, after = sorted({s.profile for s in settings if s.profile})
    assert [(s.key, s.value) for s in settings if s.profile == loop] == [
        ("HCCL_BUFFSIZE", "650"),
        ("TASK_QUEUE_ENABLE", "1"),
        ("--disaggregation-mode", "decode"),
    ]
    assert [(s.key, s.value) for s in settings if s.profile == after] == [
        ("HCCL_BUFFSIZE", "720"),
        ("TASK_QUEUE_ENABLE", "0"),
        ("--tp", "8"),
    ]


def test_values_only_a_run_knows_are_not_settings_and_arithmetic_on_numbers_resolves() -> None:
    text = (
        "readiness_deadline=$((SECONDS + READINESS_TIMEOUT_SEC))\n"
        "HOST_IP=$(hostname -I | awk '{print $1}')\n"
        "STAMP=`date +%s`\n"
        "export TP=$((4 * 2))\n"
        "x=$(cd $(dirname $0); pwd)\n"
        f'{LAUNCH} --tp "$TP" --host "$HOST_IP"\n'
    )
    assert sh(text) == [("TP", "8"), ("--tp", "8"), ("--host", "$(hostname -I | awk '{print $1}')")]


def test_appends_grow_a_variable_and_are_no_setting_of_their_own() -> None:
    text = (
        'export NCCL_FLAGS="a"\n'
        'NCCL_FLAGS+=",b"\n'
        f'{LAUNCH} --x "$NCCL_FLAGS"\n'
        'FATAL_PATTERN="Traceback"\n'
        'FATAL_PATTERN+="|out of memory"\n'
    )
    assert sh(text) == [("NCCL_FLAGS", "a,b"), ("--x", "a,b")]


def test_parameter_expansions_resolve() -> None:
    text = (
        'export MODEL_VARIANT="Pro"\n'
        'export SERVED="deepseek-v4-${MODEL_VARIANT,,}"\n'
        'export UPPER="${MODEL_VARIANT^^}"\n'
        'export PORT="${PORT:-30000}"\n'
        'export LIBS="/cuda/lib:${LD_LIBRARY_PATH:-}"\n'
        'export BASE="${MODEL_PATH:-/models}/x"\n'
        'export FILE="/a/b/model.safetensors"\n'
        'export NAME="${FILE##*/}" DIR="${FILE%/*}" LEN="${#MODEL_VARIANT}"\n'
        'export ALT="${MODEL_VARIANT:+set}" REQ="${MODEL_VARIANT:?needed}"\n'
        'export UNKNOWN="${NOT_SET_HERE}"\n'
    )
    assert sh(text) == [
        ("MODEL_VARIANT", "Pro"),
        ("SERVED", "deepseek-v4-pro"),
        ("UPPER", "PRO"),
        ("PORT", "30000"),
        ("LIBS", "/cuda/lib:"),
        ("BASE", "/models/x"),
        ("FILE", "/a/b/model.safetensors"),
        ("NAME", "model.safetensors"),
        ("DIR", "/a/b"),
        ("LEN", "3"),
        ("ALT", "set"),
        ("REQ", "Pro"),
        ("UNKNOWN", "${NOT_SET_HERE}"),
    ]


def test_a_plain_variable_feeds_flags_but_only_exported_ones_reach_the_server() -> None:
    text = f"MEM=0.9\nexport PDL=1\n{LAUNCH} --mem-fraction-static $MEM\n"
    assert sh(text) == [("PDL", "1"), ("--mem-fraction-static", "0.9")]
    assert sh("MEM=0.9\nexport PDL=1\n") == [("MEM", "0.9"), ("PDL", "1")]  # no launch: all


def test_an_unquoted_variable_is_split_into_words_and_a_quoted_one_is_not() -> None:
    text = f'EXTRA="--dp 8 --enable-dp-attention"\n{LAUNCH} --tp 8 $EXTRA --name "a b"\n'
    assert sh(text) == [
        ("--tp", "8"),
        ("--dp", "8"),
        ("--enable-dp-attention", "true"),
        ("--name", "a b"),
    ]


def test_a_script_block_of_its_own_does_not_set_the_documents_variables() -> None:
    doc = block("#!/bin/bash\nexport EVAL_ONLY=1\nPORT=30000\n", "") + block(
        f'{LAUNCH} --port "${{PORT:-8000}}"\n'
    )
    assert full(doc) == [("--port", "8000", "", "")]


# --- blocks ---------------------------------------------------------------------------------------


def test_text_blocks_are_what_a_reader_sees_not_settings() -> None:
    doc = (
        block("kv_cache_dtype='fp4_e2m1'\n--kv-cache-dtype fp8_e4m3\n", "text")
        + block("MODE=fast\n", "txt")
        + block("A=1\nB=2\n", "env")
    )
    assert full(doc) == [("A", "1", "", ""), ("B", "2", "", "")]


def test_an_env_block_is_exported_to_the_launch_that_follows() -> None:
    doc = block("SGLANG_ENABLE_PDL=1\n", "env") + block(f"{LAUNCH} --tp 8\n")
    assert full(doc) == [("SGLANG_ENABLE_PDL", "1", "", ""), ("--tp", "8", "", "")]


def test_exports_after_the_last_launch_do_not_override_it_and_are_named() -> None:
    doc = (
        block('export KV_LABEL="nvfp4"\n')
        + block(f"{LAUNCH} --kv-cache-dtype fp4_e2m1\n")
        + "Control experiment:\n\n"
        + block('export KV_LABEL="fp8"\nexport SERVER_LOG=/tmp/fp8.log\n')
    )
    settings, warnings = document_settings(tokenize(doc), "d.md")
    assert [(s.key, s.value) for s in settings] == [
        ("KV_LABEL", "nvfp4"),
        ("--kv-cache-dtype", "fp4_e2m1"),
    ]
    assert warnings == [
        "2 variable(s) exported after the last server launch reach no launch and are not read "
        "as settings: KV_LABEL, SERVER_LOG"
    ]


# --- conditions -----------------------------------------------------------------------------------


def test_a_condition_on_known_values_resolves_to_the_branch_a_shell_takes() -> None:
    text = (
        'export MODEL_VARIANT="Pro"\n'
        'if [[ "${MODEL_VARIANT}" == "Pro" ]]; then\n'
        '  export MEM_FRACTION_STATIC="0.92"\n'
        "else\n"
        '  export MEM_FRACTION_STATIC="0.85"\n'
        "fi\n"
        f'{LAUNCH} --mem-fraction-static "${{MEM_FRACTION_STATIC}}"\n'
    )
    settings = shell_settings(text, where="s.sh")
    assert [(s.key, s.value, s.condition) for s in settings] == [
        ("MODEL_VARIANT", "Pro", ""),
        ("MEM_FRACTION_STATIC", "0.92", 'if [[ "${MODEL_VARIANT}" == "Pro" ]]'),
        ("--mem-fraction-static", "0.92", ""),
    ]


def test_a_condition_on_unknown_values_gives_each_branch_with_its_condition() -> None:
    text = (
        'if [ "$GPU" = b200 ]; then\n'
        "  MEM=0.92\n"
        'elif [ "$GPU" = h200 ]; then\n'
        "  MEM=0.88\n"
        "else\n"
        "  MEM=0.85\n"
        "fi\n"
        f"{LAUNCH} --tp 8 --mem-fraction-static $MEM\n"
    )
    flags = [(s.key, s.value, s.condition) for s in shell_settings(text, where="s.sh")]
    opener = 'if [ "$GPU" = b200 ]'
    assert flags == [
        ("--tp", "8", ""),
        ("--mem-fraction-static", "0.92", opener),
        ("--mem-fraction-static", "0.88", f'elif [ "$GPU" = h200 ] of {opener}'),
        ("--mem-fraction-static", "0.85", f"else of {opener}"),
    ]


def test_a_decided_case_and_test_chain_run_only_what_a_shell_would() -> None:
    text = (
        "GPU=h200\n"
        'case "$GPU" in\n'
        "  b200) export SGLANG_ENABLE_PDL=1 ;;\n"
        "  h*) export SGLANG_ENABLE_PDL=0 ;;\n"
        "esac\n"
        '[ "$GPU" = b200 ] && export ONLY_B200=1\n'
        '[ "$GPU" = h200 ] && export ONLY_H200=1\n'
        '[ "$OTHER" = x ] && export MAYBE=1\n'
        f"{LAUNCH} --tp 8\n"
    )
    settings = shell_settings(text, where="s.sh")
    assert [(s.key, s.value, s.condition) for s in settings] == [
        ("SGLANG_ENABLE_PDL", "0", 'case "$GPU" in h*)'),
        ("ONLY_H200", "1", '[ "$GPU" = h200 ] &&'),
        ("MAYBE", "1", '[ "$OTHER" = x ] &&'),
        ("--tp", "8", ""),
    ]


# --- argument arrays and placeholders -------------------------------------------------------------


def test_launch_arguments_built_in_an_array_are_its_flags_each_at_its_line() -> None:
    text = (
        "args=(\n"
        "  serve\n"
        "  --model-path /m   # the checkpoint\n"
        '  --tp "$TP"\n'
        ")\n"
        'if [ "${HICACHE:-0}" = 1 ]; then\n'
        "  args+=(--enable-hierarchical-cache --hicache-ratio 2.75)\n"
        "fi\n"
        'exec sglang "${args[@]}"\n'
    )
    settings = shell_settings(text, where="s.sh", env={"TP": "16"})
    assert [(s.key, s.value, s.where) for s in settings] == [
        ("--model-path", "/m", "s.sh:3"),
        ("--tp", "16", "s.sh:4"),
    ]
    settings = shell_settings(text, where="s.sh", env={"TP": "16", "HICACHE": "1"})
    assert [s.key for s in settings][-2:] == ["--enable-hierarchical-cache", "--hicache-ratio"]


def test_an_array_extended_under_an_unknown_condition_gives_its_extra_flags_that_condition() -> (
    None
):
    text = (
        "ARGS=(--tp 8)\n"
        'if [[ "$ENABLE_MTP" == "1" ]]; then\n'
        "  ARGS+=(--speculative-algorithm NEXTN)\n"
        "fi\n"
        'python3 -m sglang.launch_server "${ARGS[@]}"\n'
    )
    settings = shell_settings(text, where="s.sh")
    assert [(s.key, s.value, s.condition) for s in settings] == [
        ("--tp", "8", ""),
        ("--speculative-algorithm", "NEXTN", 'if [[ "$ENABLE_MTP" == "1" ]]'),
    ]


def test_arguments_echoed_into_a_string_and_spliced_are_the_launches_flags() -> None:
    text = 'args=$(echo serve --tp 16 --dp 2)\nsglang "${args[@]}"\n'
    assert sh(text) == [("--tp", "16"), ("--dp", "2")]


def test_a_placeholder_stays_the_value_it_is_not_a_redirection() -> None:
    text = "sglang serve --model-path <model> --port <port> --host 0.0.0.0\n"
    assert sh(text) == [("--model-path", "<model>"), ("--port", "<port>"), ("--host", "0.0.0.0")]
    assert sh("docker run --gpus all lmsysorg/sglang:latest sglang serve <use args below>\n") == []


# --- several launches -----------------------------------------------------------------------------


def test_several_launches_are_kept_apart_as_profiles() -> None:
    doc = (
        "# PD\n\n"
        + block("export MODEL=/m\nexport SGLANG_ENABLE_PDL=1\n")
        + "## Prefill\n\n"
        + block(f"{LAUNCH} --model-path $MODEL --disaggregation-mode prefill --tp 8\n")
        + "## Decode\n\n"
        + block(
            f"export DECODE_ONLY=1\n{LAUNCH} --model-path $MODEL --disaggregation-mode decode "
            "--tp 16\n"
        )
        + "## Alternatives\n\n"
        + block(f"# Pure TP\n{LAUNCH} --tp 8\n\n# With DP\n{LAUNCH} --tp 8 --dp 8\n")
        + "## Alternatives\n\n"
        + block(f"{LAUNCH} --tp 4\n")
        + block(f"{LAUNCH} --tp 2\n")
    )  # fmt: skip
    rows = full(doc)
    assert ("MODEL", "/m", "", "") in rows and ("SGLANG_ENABLE_PDL", "1", "", "") in rows
    assert ("--tp", "8", "", "prefill") in rows
    assert ("--tp", "16", "", "decode") in rows
    # The Decode section launched a server: its export stays there, not in the Alternatives.
    assert ("DECODE_ONLY", "1", "", "Pure TP") not in rows
    assert ("DECODE_ONLY", "1", "", "prefill") not in rows
    assert ("--dp", "8", "", "With DP") in rows
    assert ("DECODE_ONLY", "1", "", "decode") in rows
    profiles = {p for *_, p in rows}
    assert profiles == {
        "",
        "prefill",
        "decode",
        "Pure TP",
        "With DP",
        "Alternatives",
        "Alternatives 2",
    }


def test_launches_in_a_function_are_named_after_it() -> None:
    text = f"start_prefill() {{\n  {LAUNCH} --tp 8\n}}\nstart_decode() {{ {LAUNCH} --tp 16; }}\n"
    settings = shell_settings(text, where="s.sh")
    assert [(s.key, s.value, s.profile) for s in settings] == [
        ("--tp", "8", "start_prefill"),
        ("--tp", "16", "start_decode"),
    ]


def test_profiles_are_diffed_apart() -> None:
    at = __import__("datetime").datetime(2026, 11, 20, tzinfo=UTC)
    before = [Setting("--tp", "8", "flag", "d.md:3", profile="prefill"),
              Setting("--tp", "8", "flag", "d.md:9", profile="decode")]  # fmt: skip
    after = [Setting("--tp", "8", "flag", "d.md:3", profile="prefill"),
             Setting("--tp", "16", "flag", "d.md:9", profile="decode")]  # fmt: skip
    (change,) = diff_settings(before, after, at=at, source="doc", ref="d.md@2")
    assert (change.key, change.old, change.new, change.condition) == (
        "--tp",
        "8",
        "16",
        "launch decode",
    )


def test_expansions_nested_too_deep_are_a_parse_error_at_their_line() -> None:
    text = "export A=1\nX=" + "$(echo " * 600 + "a" + ")" * 600 + "\n"
    with pytest.raises(ParseError) as err:
        shell_settings(text, where="s.sh")
    assert (err.value.line, err.value.message) == (
        2,
        "expected expansions nested a few levels deep; this command nests too deep",
    )


def test_a_launch_under_a_profiler_a_timeout_or_a_job_launcher_is_read_without_their_options() -> (
    None
):
    """Shapes from public guides: a launch profiled with Nsight Systems (its own options before
    the command), bounded by ``timeout``, or started by ``srun``; their options are not the
    server's."""
    nsys = (
        "nsys profile -t cuda,nvtx,osrt -o sglang.out --delay 300 --duration 70 "
        f"{LAUNCH} --model deepseek-ai/DeepSeek-R1 --tp 8\n"
    )
    assert sh(nsys) == [("--model", "deepseek-ai/DeepSeek-R1"), ("--tp", "8")]
    assert sh(f"timeout 600 {LAUNCH} --tp 8\n") == [("--tp", "8")]
    assert sh("timeout -s KILL --preserve-status 10m sglang serve --tp 2\n") == [("--tp", "2")]
    assert sh(f"srun --nodes=2 -n 2 --ntasks-per-node 1 {LAUNCH} --tp 16\n") == [("--tp", "16")]
    # Their other uses launch nothing.
    assert sh("nsys stats report.nsys-rep\nmpirun -np 2 python bench.py --tp 4\n") == []


def test_sglang_serve_reads_its_positional_model_as_the_model_path() -> None:
    """``sglang serve deepseek-ai/DeepSeek-V4-Flash --tp 4`` (SGLang's DeepSeek-V4 cookbook):
    the model is a setting as ``--model`` (the server's ``model_path``)."""
    assert sh("sglang serve deepseek-ai/DeepSeek-V4-Flash --tp 4\n") == [
        ("--model", "deepseek-ai/DeepSeek-V4-Flash"),
        ("--tp", "4"),
    ]


def test_a_placeholder_after_a_flags_value_is_not_part_of_it() -> None:
    """SGLang's DeepSeek-V4 cookbook: ``--model-path deepseek-ai/DeepSeek-V4-Flash \\`` then
    ``<other args>`` on the next line."""
    text = (
        "SGLANG_DSV4_COMPRESS_STATE_DTYPE=bf16 \\\n"
        "sglang serve \\\n"
        "  --model-path deepseek-ai/DeepSeek-V4-Flash \\\n"
        "  <other args>\n"
    )
    assert sh(text) == [
        ("SGLANG_DSV4_COMPRESS_STATE_DTYPE", "bf16"),
        ("--model-path", "deepseek-ai/DeepSeek-V4-Flash"),
    ]
    assert sh("sglang serve --cuda-graph-bs 1 2 4 --port <port>\n") == [
        ("--cuda-graph-bs", "1 2 4"),
        ("--port", "<port>"),
    ]


def test_exports_of_an_alternative_section_that_launched_do_not_reach_the_next() -> None:
    """SGLang's Ascend NPU guide: "1 x Atlas" (exports, a launch), then "2 x Atlas" (other
    exports, its own launches). The first section's exports had reached the second's prefill
    launch, which sets none of them. A section that only sets variables still carries them on,
    and an export that reaches no launch is still said."""
    doc = (
        "## Examples\n\n"
        + block("export MODEL_PATH=/models/ds\n")
        + "### 1 x Atlas\n\n"
        + block(f"export SGLANG_ENABLE_SPEC_V2=1\n{LAUNCH} --model-path $MODEL_PATH --tp 16\n"
                "export AFTER_ONLY=1\n")
        + "### 2 x Atlas\n\n"
        + block(f"{LAUNCH} --model-path $MODEL_PATH --disaggregation-mode prefill --tp 8\n")
        + block(f"export SGLANG_ENABLE_SPEC_V2=1\n{LAUNCH} --disaggregation-mode decode --tp 8\n")
    )  # fmt: skip
    rows = full(doc)
    assert ("SGLANG_ENABLE_SPEC_V2", "1", "", "1 x Atlas") in rows
    assert ("SGLANG_ENABLE_SPEC_V2", "1", "", "decode") in rows
    assert not [r for r in rows if r[0] == "SGLANG_ENABLE_SPEC_V2" and r[3] == "prefill"]
    # The parent section's variable reaches both sections' launches.
    assert ("--model-path", "/models/ds", "", "1 x Atlas") in rows
    assert ("--model-path", "/models/ds", "", "prefill") in rows
    from ingest.parsers.markdown import document_settings, tokenize

    _, warnings = document_settings(tokenize(doc), "d.md")
    assert any("reach no launch" in w and "AFTER_ONLY" in w for w in warnings)


def test_an_alias_the_doc_defines_is_expanded_and_a_note_after_a_backslash_is_read_past() -> None:
    """SGLang's AMD guide: ``alias drun='docker run ... \\`` (over several lines) in one block,
    then ``drun ... sglang_image python3 -m sglang.launch_server ...``; and a wrapped launch with
    ``--model-path deepseek-ai/DeepSeek-V3 \\ # <- here`` marking one of its lines. Both had
    given no settings (the second one a model path with trailing blanks, its other flags
    dropped without a word)."""
    doc = (
        "## Setup\n\n"
        + block("alias drun='docker run -it --rm --network=host \\\n  --ipc=host -v /d:/d'\n")
        + "## Launch\n\n"
        + block(
            "drun -p 30000:30000 \\\n"
            '    --env "HF_HOME=/data/hf" \\\n'
            "    sglang_image \\\n"
            f"    {LAUNCH} \\\n"
            "    --model-path deepseek-ai/DeepSeek-V3 \\ # <- here\n"
            "    --tp 8 \\\n"
            "    --port 30000\n"
        )
    )  # fmt: skip
    rows = full(doc)
    assert ("--model-path", "deepseek-ai/DeepSeek-V3", "", "") in rows
    assert ("--tp", "8", "", "") in rows and ("--port", "30000", "", "") in rows
    assert ("HF_HOME", "/data/hf", "", "") in rows
    from ingest.parsers.markdown import document_settings, tokenize

    _, warnings = document_settings(tokenize(doc), "d.md")
    assert warnings == ["d.md:15: read `\\ # <- here` as a line continuation with a note after it"]


def test_a_block_of_flags_alone_is_said_not_read() -> None:
    """SGLang's DeepSeek-V4 cookbook shows recipe fragments (``--moe-a2a-backend deepep \\``,
    ``--deepep-mode auto \\`` ...) to add to a launch: no launch to give them to, so they are no
    settings, and the warning says so instead of nothing."""
    from ingest.parsers.markdown import document_settings, tokenize

    doc = "## EPLB\n\n" + block(
        "--moe-a2a-backend deepep \\\n--deepep-mode auto \\\n--enable-waterfill\n"
    )
    settings, warnings = document_settings(tokenize(doc), "d.md")
    assert settings == []
    assert warnings == [
        "1 command(s) of server flags alone, with no program to launch (lines 4): a fragment to "
        "add to a launch, not read as settings"
    ]


def test_a_sentence_above_a_launch_is_a_note_not_its_name() -> None:
    """SGLang's DeepSeek-V4 cookbook: ``# Please use the latest main branch for this feature.``
    right above a launch had become the launch's name; its section names it instead."""
    doc = (
        "## Waterfill\n\n"
        + block(f"{LAUNCH} --tp 8\n")
        + "## Context parallel\n\n"
        + block(f"# Please use the latest main branch for this feature.\n{LAUNCH} --tp 4\n")
        + "## Short\n\n"
        + block(f"# With DP\n{LAUNCH} --tp 2 --dp 2\n")
    )
    profiles = {p for *_, p in full(doc)}
    assert profiles == {"Waterfill", "Context parallel", "With DP"}
