"""Deployment docs: settings from shell blocks and tables, changes from the changelog."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence.vocabulary import EventKind, Lane
from ingest.parsers.changelog import changelog_changes
from ingest.parsers.docs import looks_like_markdown_doc, parse_markdown_doc
from ingest.parsers.launch import launch_flags
from ingest.parsers.markdown import document_settings, markdown_settings, tokenize
from ingest.parsers.shell import shell_settings
from ingest.parsers.shell_commands import strip_console_prompts
from ingest.parsers.types import (
    UTC,
    ConfigChangeRecord,
    ParseContext,
    ParseError,
    Setting,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "docs"
PST = ZoneInfo("America/Los_Angeles")
DOC = "DSV4_DEPLOY.md"
IF_B200 = 'if [ "$GPU" = b200 ]'


def doc_text() -> str:
    return (FIXTURES / DOC).read_text(encoding="utf-8")


def env(key: str, value: str, line: int, condition: str = "") -> Setting:
    return Setting(key, value, "env", f"{DOC}:{line}", condition)


def flag(key: str, value: str, line: int) -> Setting:
    return Setting(key, value, "flag", f"{DOC}:{line}")


def md(text: str) -> list[Setting]:
    return markdown_settings(text, path="t.md")


def pairs(settings: list[Setting]) -> list[tuple[str, str | None]]:
    return [(s.key, s.value) for s in settings]


# --- the DSV4 deployment doc (golden) ------------------------------------------------------------


def test_deploy_doc_yields_exactly_its_shell_and_table_settings() -> None:
    assert markdown_settings(doc_text(), path=DOC) == [
        env("MODEL_PATH", "deepseek-ai/DeepSeek-V4", 18),
        env("TOKENIZER_PATH", "/models/dsv4-tok-v1", 19),
        env("SGLANG_SM120_MMA_TARGET_CTAS", "512", 20),
        env("NCCL_IB_DISABLE", "0", 21),
        env("NCCL_SOCKET_IFNAME", "eth0", 21),
        env("SGLANG_ENABLE_PDL", "1", 28, IF_B200),
        env("SGLANG_ENABLE_PDL", "0", 30, f"else of {IF_B200}"),
        flag("--model-path", "deepseek-ai/DeepSeek-V4", 38),
        flag("--tokenizer-path", "/models/dsv4-tok-v1", 39),
        flag("--tp", "8", 40),
        flag("--mem-fraction-static", "0.88", 41),
        flag("--chunked-prefill-size", "8192", 42),
        flag("--enable-metrics", "true", 43),
        flag("--host", "0.0.0.0", 44),
        flag("--port", "30000", 44),
        # Issue 14: `export METRICS_PORT=9400` (line 50) comes after the only launch, in a
        # console block that checks the server: it reaches no server, so it is no setting.
        env("SGLANG_SM120_MMA_TARGET_CTAS", "512", 73),
        flag("--mem-fraction-static", "0.88", 74),
        Setting("served model name", "dsv4", "table", f"{DOC}:75"),
    ]


def test_deploy_doc_changelog_yields_dated_changes_in_utc() -> None:
    changes = changelog_changes(doc_text(), path=DOC, ref="DSV4_DEPLOY.md@abc", tz=PST)
    initial = "2026-11-20 07:30 initial version: --tp 8, --mem-fraction-static 0.85"
    raise_note = "2026-11-20 09:30 raise --mem-fraction-static from 0.85 to 0.88 (more KV cache)"
    ctas_note = "2026-11-20 13:10 set SGLANG_SM120_MMA_TARGET_CTAS=512 (pdl)"

    def change(key: str, old: str | None, new: str, hour: int, minute: int, line: int, note: str):
        return ConfigChangeRecord(
            key=key,
            old=old,
            new=new,
            at=dt.datetime(2026, 11, 20, hour, minute, tzinfo=UTC),
            scope="flag" if key.startswith("--") else "env",
            source="changelog",
            ref="DSV4_DEPLOY.md@abc",
            where=f"{DOC}:{line}",
            note=note,
        )

    assert changes == [
        change("--tp", None, "8", 15, 30, 84, initial),
        change("--mem-fraction-static", None, "0.85", 15, 30, 84, initial),
        change("--mem-fraction-static", "0.85", "0.88", 17, 30, 85, raise_note),
        change("SGLANG_SM120_MMA_TARGET_CTAS", None, "512", 21, 10, 86, ctas_note),
    ]


def test_prose_mentioning_a_setting_is_not_an_assignment() -> None:
    keys = {s.key for s in markdown_settings(doc_text(), path=DOC)}
    assert "SGLANG_OPT_FP8_WO_A_GEMM" not in keys
    assert "SGLANG_ENABLE_JIT_DEEPGEMM" not in keys
    assert "NCCL_DEBUG" not in keys  # prose, and a table row with an empty value


def test_prose_in_paragraphs_and_list_items_yields_nothing() -> None:
    text = (
        "# Notes\n\nDo not set `SGLANG_OPT_FP8_WO_A_GEMM=1`.\n\n"
        "- with the default `X=true` everything works\n"
        "- run `python3 -m sglang.launch_server --tp 8` by hand\n\n"
        "> export QUOTED=1\n"
    )
    assert md(text) == []


def test_comments_and_echoed_text_in_a_shell_block_are_not_settings() -> None:
    text = '```bash\n# export COMMENTED=1\necho "ECHOED=1"  # NOT=1\nREAL=1 # trailing\n```\n'
    assert pairs(md(text)) == [("REAL", "1")]


def test_output_lines_of_a_console_block_are_not_settings() -> None:
    keys = [s.key for s in markdown_settings(doc_text(), path=DOC)]
    assert "LOG_LEVEL" not in keys


def test_code_blocks_in_other_languages_are_ignored() -> None:
    keys = [s.key for s in markdown_settings(doc_text(), path=DOC)]
    assert "PYTHON_VAR" not in keys
    assert "SGLANG_FAKE" not in keys


# --- shell blocks in Markdown --------------------------------------------------------------------


@pytest.mark.parametrize("info", ["bash", "sh", "shell", "console", "env", ""])
def test_every_shell_like_fence_is_read(info: str) -> None:
    body = "$ export A=1" if info == "console" else "export A=1"
    assert md(f"```{info}\n{body}\n```\n") == [Setting("A", "1", "env", "t.md:2")]


def test_variable_resolves_to_an_earlier_blocks_assignment() -> None:
    text = (
        "```bash\nexport MODEL_PATH=/models/dsv4\n```\n\nthen\n\n"
        '```bash\npython3 -m sglang.launch_server --model-path "${MODEL_PATH}" --tp 8\n```\n'
    )
    assert pairs(md(text)) == [
        ("MODEL_PATH", "/models/dsv4"),
        ("--model-path", "/models/dsv4"),
        ("--tp", "8"),
    ]


def test_unresolved_variable_is_kept_literally() -> None:
    text = '```bash\npython3 -m sglang.launch_server --model-path "${MODEL_PATH}"\n```\n'
    assert pairs(md(text)) == [("--model-path", "${MODEL_PATH}")]


def test_unterminated_fence_is_read_to_the_end_of_the_document() -> None:
    text = "# Doc\n\n```bash\nexport A=1\nexport B=2\n"
    assert md(text) == [
        Setting("A", "1", "env", "t.md:4"),
        Setting("B", "2", "env", "t.md:5"),
    ]


def test_fence_inside_a_list_item_keeps_its_line_numbers() -> None:
    text = "1. Export:\n\n   ```bash\n   export A=1\n   ```\n"
    assert md(text) == [Setting("A", "1", "env", "t.md:4")]


def test_text_block_that_is_not_shell_is_skipped_but_a_bash_block_is_an_error() -> None:
    assert md("```text\nit's fine, don't worry\n```\n") == []
    with pytest.raises(ParseError) as err:
        md("# T\n\n```bash\nexport A='unterminated\n```\n")
    assert err.value.line == 4
    assert "closing '" in err.value.message


def test_a_flag_line_without_a_trailing_backslash_continues_the_command_above() -> None:
    # From the vLLM recipe for DeepSeek-R1 on B200 (lines 419-429 cut to three flags,
    # https://github.com/vllm-project/recipes/blob/172aeb6358b071b9ec57cad0cbe22671aed32f4a/DeepSeek/DeepSeekR1-B200.md):
    # the launch line lost its `\`, and every flag below it was lost with it.
    text = (
        "# Serve\n\n```bash\n"
        "VLLM_USE_FLASHINFER_MOE_FP4=1 \\\n"
        "  vllm serve nvidia/DeepSeek-R1-FP4 \n"
        '    --quantization="modelopt_fp4" \\\n'
        "    --data-parallel-size=4\n"
        "```\n"
    )
    settings, warnings = document_settings(tokenize(text), "t.md")
    assert settings == [
        Setting("VLLM_USE_FLASHINFER_MOE_FP4", "1", "env", "t.md:4"),
        Setting("--model", "nvidia/DeepSeek-R1-FP4", "flag", "t.md:5"),
        Setting("--quantization", "modelopt_fp4", "flag", "t.md:6"),
        Setting("--data-parallel-size", "4", "flag", "t.md:7"),
    ]
    assert warnings == [
        't.md:6: `--quantization="modelopt_fp4"` continues the command above without a '
        "trailing backslash; read as part of it"
    ]


def test_each_flag_line_of_a_launch_without_backslashes_is_joined_and_named() -> None:
    # From the vLLM recipe for DeepSeek-V3.1 (lines 33-38, cut to two flags,
    # https://github.com/vllm-project/recipes/blob/8959cf64189c71d36e11c6a30335f923f261b1f7/DeepSeek/DeepSeek-V3_1.md):
    # no line has its `\`; the model is elided.
    text = (
        "```bash\nvllm serve ... \n    --enable-auto-tool-choice \n"
        "    --tool-call-parser deepseek_v31 \n```\n"
    )
    settings, warnings = document_settings(tokenize(text), "t.md")
    assert settings == [
        Setting("--enable-auto-tool-choice", "true", "flag", "t.md:3"),
        Setting("--tool-call-parser", "deepseek_v31", "flag", "t.md:4"),
    ]
    assert [w.split(":", 2)[1] for w in warnings] == ["3", "4"]


@pytest.mark.parametrize(
    "above",
    [
        "vllm serve /m\n",  # a blank line between
        "vllm serve /m\n# then",  # a comment
        "vllm serve /m &",
        "vllm serve /m;",
        "vllm serve /m &&",
        "vllm serve /m ||",
        "vllm serve /m |",
        "vllm serve /m  # the model",
        "cat > args <<EOF\n--tp 4\nEOF",  # a heredoc's body and its end
    ],
)
def test_a_flag_line_is_not_joined_to_a_command_that_has_ended(above: str) -> None:
    settings, warnings = document_settings(tokenize(f"```bash\n{above}\n--tp 8\n```\n"), "t.md")
    assert "--tp" not in [s.key for s in settings]
    # Not joined, and not dropped without a word either.
    (warning,) = warnings
    assert warning.startswith("1 command(s) of server flags alone, with no program to launch")


def test_a_rule_of_dashes_in_output_is_not_a_flag_line() -> None:
    text = "```\nTotal Token throughput (tok/s):  8536.59\n-----Time to First Token-----\n```\n"
    assert document_settings(tokenize(text), "t.md") == ([], [])


def test_a_lone_doc_reports_the_flag_lines_it_joined() -> None:
    data = b"# Doc\n\n```bash\nvllm serve /m\n  --tp 8\n```\n"
    ctx = ParseContext(name="d.md", default_time=dt.datetime(2026, 11, 20, tzinfo=UTC))
    result = parse_markdown_doc(data, ctx)
    assert result.warnings == [
        "d.md:5: `--tp` continues the command above without a trailing backslash; "
        "read as part of it"
    ]
    assert [(s["key"], s["where"]) for s in result.events[0].attrs["settings"]] == [
        ("--model", "d.md:4"),
        ("--tp", "d.md:5"),
    ]


@pytest.mark.parametrize(
    ("body", "language"),
    [
        # The DeepSeek-V3 README's citation: its `author={DeepSeek-AI},` lines read as shell
        # assignments.
        (
            "@misc{deepseekai2024deepseekv3technicalreport,\n"
            "      title={DeepSeek-V3 Technical Report},\n"
            "      author={DeepSeek-AI},\n      year={2024},\n}",
            "BibTeX",
        ),
        ('{\n  "MODEL_PATH": "/m",\n  "TP": 8\n}', "JSON"),
        ('{"env": ["A=1"]}', "JSON"),
        ('[\n  "--tp=8"\n]', "JSON"),
        ('[{"name": "A", "value": "1"}]', "JSON"),
        ('<?xml version="1.0"?>\n<config>\nA=1\n</config>', "XML/HTML"),
        ("<div>\nA=1\n</div>", "XML/HTML"),
        ("---\nA=1", "YAML"),
        ("env:\n  - name: A\n    value: x=1", "YAML"),
    ],
)
def test_an_unlabelled_block_in_another_language_is_skipped_with_a_warning(
    body: str, language: str
) -> None:
    text = f"# Cite\n\n```\n{body}\n```\n"
    assert document_settings(tokenize(text), "t.md") == (
        [],
        [f"skipped the unlabelled block at t.md:3: it reads as {language}, not shell"],
    )


@pytest.mark.parametrize(
    "body",
    [
        '[ "$GPU" = b200 ] && export A=1',
        '[[ -n "$X" ]] && export A=1',
        "{ export A=1; }",
        "export A=1 # author={me}",
    ],
)
def test_shell_that_opens_with_a_bracket_or_brace_is_still_read(body: str) -> None:
    settings, warnings = document_settings(tokenize(f"```\n{body}\n```\n"), "t.md")
    assert [s.key for s in settings] == ["A"]
    assert warnings == []


@pytest.mark.parametrize("info", ["bash", "env"])
def test_only_unlabelled_blocks_are_judged_by_their_opening(info: str) -> None:
    # A block labelled shell is taken at its word (a broken one is an error, not skipped).
    assert md(f"```{info}\n---\nA=1\n```\n") == [Setting("A", "1", "env", "t.md:3")]


def test_console_transcript_keeps_commands_and_continuations_only() -> None:
    text = "$ python3 -m sglang.launch_server \\\n>   --tp 8\nServer ready\n$ export A=1\n"
    assert strip_console_prompts(text) == (
        "python3 -m sglang.launch_server \\\n  --tp 8\n\nexport A=1\n"
    )


# --- tables --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "key", "value", "scope"),
    [
        ("| Variable | Value |", "`SGLANG_X`", "`512`", "env"),
        ("| Flag | Setting |", "`--tp`", "8", "flag"),
        ("| key | VALUE |", "served_name", "**dsv4**", "table"),
    ],
)
def test_key_value_tables_yield_settings(header: str, key: str, value: str, scope: str) -> None:
    columns = header.count("|") - 1
    text = f"{header}\n|{'---|' * columns}\n| {key} | {value} |{' x |' * (columns - 2)}\n"
    (setting,) = md(text)
    assert setting.key == key.strip("`")
    assert setting.value == value.strip("`*")
    assert setting.scope == scope
    assert setting.where == "t.md:3"


@pytest.mark.parametrize(
    "header",
    ["| Name | Default | Notes |", "| Environment Variable | Description | Default Value |"],
)
def test_a_table_of_defaults_is_not_settings(header: str) -> None:
    # A reference table of the software's defaults (the sweep's Ascend env-var list gave 14
    # settings) says what happens when nothing is set, not what the doc sets.
    columns = header.count("|") - 1
    text = f"{header}\n|{'---|' * columns}\n| `--port` |{' x |' * (columns - 2)} 30000 |\n"
    assert md(text) == []


@pytest.mark.parametrize("header", ["| Flag | Default | Value |", "| Variable | Value | Default |"])
def test_a_table_with_a_value_and_a_default_column_uses_the_value(header: str) -> None:
    cells = {"Default": "30000", "Value": "8080"}
    names = [h.strip() for h in header.strip("|").split("|")]
    row = "| `--port` |" + "".join(f" {cells[n]} |" for n in names[1:])
    text = f"{header}\n|---|---|---|\n{row}\n"
    assert md(text) == [Setting("--port", "8080", "flag", "t.md:3")]


def test_table_without_a_key_and_value_column_is_not_settings() -> None:
    assert md("| Symptom | Meaning |\n|---|---|\n| `X=1` | wedge |\n") == []


def test_huge_table_is_read_without_trouble() -> None:
    rows = "".join(f"| K_{i} | {i} |\n" for i in range(5000))
    settings = md("| Variable | Value |\n|---|---|\n" + rows)
    assert len(settings) == 5000
    assert settings[-1] == Setting("K_4999", "4999", "env", "t.md:5002")


# --- shell_settings directly ---------------------------------------------------------------------


def test_shell_snippet_reads_assignments_prefixes_quotes_and_launch_flags() -> None:
    text = (
        "export A=1 B='two words'\n"
        'C="x y"\n'
        "CUDA_VISIBLE_DEVICES=0,1 nohup python3 -u -m sglang.launch_server \\\n"
        "  --model-path=/m --tp 8 \\\n"
        "  --enable-metrics --cuda-graph-bs 1 2 4 > /tmp/log 2>&1 &\n"
    )
    assert shell_settings(text, where="s.sh", first_line=10) == [
        Setting("A", "1", "env", "s.sh:10"),
        Setting("B", "two words", "env", "s.sh:10"),
        # Issue 14: C is not exported, so the server launched below does not see it.
        Setting("CUDA_VISIBLE_DEVICES", "0,1", "env", "s.sh:12"),
        Setting("--model-path", "/m", "flag", "s.sh:13"),
        Setting("--tp", "8", "flag", "s.sh:13"),
        Setting("--enable-metrics", "true", "flag", "s.sh:14"),
        Setting("--cuda-graph-bs", "1 2 4", "flag", "s.sh:14"),
    ]


def test_commands_that_launch_no_server_yield_no_flags() -> None:
    text = "pip install --upgrade sglang\ncurl --retry 3 localhost\npython3 bench.py --n 5\n"
    assert shell_settings(text, where="s.sh") == []


@pytest.mark.parametrize(
    "command",
    [
        "vllm serve deepseek-ai/DeepSeek-V4 --tensor-parallel-size 8",
        "trtllm-serve deepseek-ai/DeepSeek-V4 --tensor-parallel-size 8",
        "trtllm-serve serve deepseek-ai/DeepSeek-V4 --tensor-parallel-size 8",
    ],
)
def test_the_positional_model_of_vllm_and_trtllm_serve_is_the_model_flag(command: str) -> None:
    # vllm reads `vllm serve MODEL` as --model MODEL; skipped, it left no setting naming the
    # model, so two launches of different models looked the same.
    assert shell_settings(command + "\n", where="s.sh") == [
        Setting("--model", "deepseek-ai/DeepSeek-V4", "flag", "s.sh:1"),
        Setting("--tensor-parallel-size", "8", "flag", "s.sh:1"),
    ]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("vllm serve --model /m --tp 2", [("--model", "/m"), ("--tp", "2")]),
        ("vllm serve \\\n  /m \\\n  --tp 2", [("--model", "/m"), ("--tp", "2")]),
        ("vllm serve /m extra --tp 2", [("--model", "/m"), ("--tp", "2")]),
        # no positional, or an elided one (`vllm serve ... --flag`): no model is made up
        ("vllm serve --tp 2", [("--tp", "2")]),
        ("vllm serve ... --tp 2", [("--tp", "2")]),
        ("trtllm-serve disaggregated -c disagg.yaml", [("-c", "disagg.yaml")]),
        ("sglang serve --model-path /m", [("--model-path", "/m")]),
    ],
)
def test_a_model_flag_stays_and_no_model_is_invented(
    command: str, expected: list[tuple[str, str]]
) -> None:
    assert pairs(shell_settings(command + "\n", where="s.sh")) == expected


def test_two_vllm_launches_that_differ_only_by_model_are_told_apart() -> None:
    # Cut down from the vLLM recipe for DeepSeek-V4 on AMD (Pro and Flash, one section each).
    serve = "```bash\nvllm serve deepseek-ai/DeepSeek-V4-{} \\\n  --port 8001\n```\n"
    text = f"## Pro\n\n{serve.format('Pro')}\n## Flash\n\n{serve.format('Flash')}"
    assert [(s.profile, s.key, s.value) for s in md(text)] == [
        ("Pro", "--model", "deepseek-ai/DeepSeek-V4-Pro"),
        ("Pro", "--port", "8001"),
        ("Flash", "--model", "deepseek-ai/DeepSeek-V4-Flash"),
        ("Flash", "--port", "8001"),
    ]


def test_single_quotes_prevent_expansion_and_defaults_apply() -> None:
    text = "A=1\nB='$A'\nC=\"$A\"\nD=${MISSING:-fallback}\nE=${A:-fallback}\n"
    assert pairs(shell_settings(text, where="s.sh")) == [
        ("A", "1"),
        ("B", "$A"),
        ("C", "1"),
        ("D", "fallback"),
        ("E", "1"),
    ]


def test_caller_env_resolves_references_and_is_not_modified() -> None:
    given = {"MODEL": "/m"}
    settings = shell_settings("X=${MODEL}\nMODEL=/other\n", where="s.sh", env=given)
    assert pairs(settings) == [("X", "/m"), ("MODEL", "/other")]
    assert given == {"MODEL": "/m"}


def test_prefix_assignment_holds_only_for_its_command() -> None:
    # Issue 14: `A=1 cmd` sets A for that command only; for any command but a server launch it
    # is no setting at all (test commands: `CUDA_VISIBLE_DEVICES=0 python3 -m pytest`).
    text = "A=1 true\necho\nB=${A}\n"
    assert pairs(shell_settings(text, where="s.sh")) == [("B", "${A}")]


def test_branch_assignment_resolves_after_fi_under_each_condition() -> None:
    # Issue 14: after `fi`, M holds a or b depending on the branch; N built from it resolves
    # to both, each under its condition (it stayed the literal "$M" before).
    text = 'if [ -n "$X" ]; then\n  M=a\nelse\n  M=b\nfi\nN=$M\n'
    settings = shell_settings(text, where="s.sh")
    assert [(s.key, s.value, s.condition) for s in settings] == [
        ("M", "a", 'if [ -n "$X" ]'),
        ("M", "b", 'else of if [ -n "$X" ]'),
        ("N", "a", 'if [ -n "$X" ]'),
        ("N", "b", 'else of if [ -n "$X" ]'),
    ]


def test_test_and_chain_marks_the_setting_conditional() -> None:
    (setting,) = shell_settings('[ "$GPU" = b200 ] && export PDL=1\n', where="s.sh")
    assert setting.condition == '[ "$GPU" = b200 ] &&'


def test_heredoc_body_is_not_read_as_commands() -> None:
    text = "cat <<'EOF' > x.env\nINSIDE=1\nEOF\nAFTER=1\n"
    assert pairs(shell_settings(text, where="s.sh")) == [("AFTER", "1")]


def test_unset_drops_an_earlier_assignment() -> None:
    assert pairs(shell_settings("A=1\nB=2\nunset A\n", where="s.sh")) == [("B", "2")]


def test_launch_flags_reads_a_split_command() -> None:
    words = ["python3", "-m", "sglang.launch_server", "--tp", "8", "--enable-metrics"]
    assert launch_flags(words) == [("--tp", "8"), ("--enable-metrics", "true")]
    assert launch_flags(["ls", "-la"]) is None


# --- changelog -----------------------------------------------------------------------------------


def log(*items: str, heading: str = "## Changelog") -> str:
    return "# Doc\n\n" + heading + "\n\n" + "".join(f"- {item}\n" for item in items)


def test_changelog_times_in_all_three_shapes_become_aware_utc() -> None:
    text = log(
        "2026-11-20 13:10 set A_X=1",
        "2026-11-20T13:10 set B_X=1",
        "2026-11-20 set C_X=1",
        "2026-11-20T13:10:00Z set D_X=1",
    )
    got = [c.at for c in changelog_changes(text, path="t.md", ref="r", tz=PST)]
    assert got == [
        dt.datetime(2026, 11, 20, 21, 10, tzinfo=UTC),
        dt.datetime(2026, 11, 20, 21, 10, tzinfo=UTC),
        dt.datetime(2026, 11, 20, 8, 0, tzinfo=UTC),
        dt.datetime(2026, 11, 20, 13, 10, tzinfo=UTC),
    ]
    assert all(at.tzinfo is UTC for at in got)


def test_changelog_old_and_new_values_from_words_and_arrows() -> None:
    text = log(
        "2026-11-20 08:40 LOG_LEVEL info -> debug",
        "2026-11-20 13:05 --tokenizer-path /models/dsv4-tok-v1 → /models/dsv4-tok-v2",
        "2026-11-20 13:40 bump --chunked-prefill-size to 16384",
        "2026-11-20 16:30 revert `--chunked-prefill-size=16384` -> 8192",
        "2026-11-20 17:00 add `--enable-metrics`",
    )
    got = [(c.key, c.old, c.new) for c in changelog_changes(text, path="t.md", ref="r", tz=PST)]
    assert got == [
        ("LOG_LEVEL", "info", "debug"),
        ("--tokenizer-path", "/models/dsv4-tok-v1", "/models/dsv4-tok-v2"),
        ("--chunked-prefill-size", None, "16384"),
        ("--chunked-prefill-size", "16384", "8192"),
        ("--enable-metrics", None, "true"),
    ]


def test_a_remark_in_parentheses_is_prose_not_the_flags_value() -> None:
    # An end-to-end review (stop 30) saw `set --enable-mixed-chunk (mix prefill into decode
    # batches)` read as --enable-mixed-chunk='mix', then "documented, not deployed" beside a
    # log that ran True.
    text = log(
        "2026-11-20 09:00 set --enable-mixed-chunk (mix prefill into decode batches)",
        "2026-11-20 09:05 set --disable-radix-cache (prefix cache corrupts)",
        "2026-11-20 09:10 set --chunked-prefill-size 8192 (was 4096)",
    )
    got = [(c.key, c.old, c.new) for c in changelog_changes(text, path="t.md", ref="r", tz=PST)]
    assert got == [
        ("--enable-mixed-chunk", None, "true"),
        ("--disable-radix-cache", None, "true"),
        ("--chunked-prefill-size", None, "8192"),
    ]


def test_changelog_remove_and_unset_give_no_new_value() -> None:
    text = log(
        "2026-11-20 17:00 remove SGLANG_SM120_MMA_TARGET_CTAS=512",
        "2026-11-20 17:01 unset NCCL_DEBUG, set NCCL_IB_DISABLE=1",
        "2026-11-20 17:02 `--enable-metrics` removed",
    )
    got = [(c.key, c.old, c.new) for c in changelog_changes(text, path="t.md", ref="r", tz=PST)]
    assert got == [
        ("SGLANG_SM120_MMA_TARGET_CTAS", None, None),
        ("NCCL_DEBUG", None, None),
        ("NCCL_IB_DISABLE", None, "1"),
        ("--enable-metrics", None, None),
    ]


def test_only_changelog_sections_and_dated_items_count() -> None:
    text = (
        "# Doc\n\n## Steps\n\n- 2026-11-20 10:00 set NOT_LOG=1\n\n"
        "## Change history\n\n- undated item SET_X=1\n- 2026-11-20 10:00 set IN_LOG=1\n"
        "- 2026-11-20\n\n### Details\n\n- 2026-11-20 11:00 set SUB=1\n\n"
        "## Later\n\n- 2026-11-20 12:00 set AFTER=1\n"
    )
    keys = [c.key for c in changelog_changes(text, path="t.md", ref="r", tz=UTC)]
    assert keys == ["IN_LOG", "SUB"]


def test_time_only_items_take_the_date_of_their_heading() -> None:
    text = "# Doc\n\n## Changelog\n\n### 2026-11-20\n\n- 13:10 set SGLANG_X=512\n"
    (change,) = changelog_changes(text, path="t.md", ref="r", tz=PST)
    assert change.at == dt.datetime(2026, 11, 20, 21, 10, tzinfo=UTC)
    assert change.where == "t.md:7"


def test_malformed_changelog_date_names_the_line() -> None:
    text = log("2026-11-20 09:30 set A_X=1", "2026-13-45 set B_X=1")
    with pytest.raises(ParseError) as err:
        changelog_changes(text, path="t.md", ref="r", tz=UTC)
    assert (err.value.file, err.value.line) == ("t.md", 6)
    assert "2026-13-45" in err.value.message


def test_malformed_changelog_time_names_the_line() -> None:
    with pytest.raises(ParseError) as err:
        changelog_changes(log("2026-11-20 25:61 set A_X=1"), path="t.md", ref="r", tz=UTC)
    assert err.value.line == 5


# --- a lone document -----------------------------------------------------------------------------


def test_lone_doc_is_one_revision_at_its_latest_changelog_time() -> None:
    data = (FIXTURES / DOC).read_bytes()
    result = parse_markdown_doc(data, ParseContext(name=DOC, tz=PST))
    (event,) = result.events
    key = f"{DOC}@{hashlib.sha256(data).hexdigest()[:12]}"
    assert result.kind == "markdown_doc"
    assert (event.kind, event.lane, event.key) == (EventKind.DOC_REVISION, Lane.DOCS, key)
    assert event.title == "DSV4_DEPLOY.md revision"
    assert event.at == dt.datetime(2026, 11, 20, 21, 12, tzinfo=UTC)  # the 13:12 item
    assert event.attrs["path"] == DOC
    assert event.attrs["sections"] == [
        "DSV4 deployment (SGLang)",
        "Prerequisites",
        "Environment",
        "Launch",
        "Settings reference",
        "Changelog",
    ]
    assert event.attrs["settings"][0] == {
        "key": "MODEL_PATH",
        "value": "deepseek-ai/DeepSeek-V4",
        "scope": "env",
        "where": f"{DOC}:18",
        "condition": "",
        "profile": "",
    }
    assert len(event.attrs["settings"]) == 18  # METRICS_PORT reaches no launch (issue 14)
    json.dumps(event.attrs)  # attrs must be JSON-serialisable
    assert "18 settings" in event.body
    assert [c.key for c in result.config_changes][-1] == "SGLANG_SM120_MMA_TARGET_CTAS"
    assert all(c.ref == key for c in result.config_changes)
    assert result.warnings == [
        "1 variable(s) exported after the last server launch reach no launch and are not read "
        "as settings: METRICS_PORT"
    ]


def test_lone_doc_warns_about_an_unlabelled_block_it_could_not_read() -> None:
    # (A `text` block is never read as shell since issue 14; unlabelled ones still are.)
    data = b"# Doc\n\n```\nit's ready\n```\n\n```bash\nexport A=1\n```\n"
    ctx = ParseContext(name="d.md", default_time=dt.datetime(2026, 11, 20, tzinfo=UTC))
    result = parse_markdown_doc(data, ctx)
    assert result.warnings == [
        "skipped the unlabelled block: d.md:4: unterminated single-quoted string: "
        "expected a closing ' before the end"
    ]
    assert result.events[0].attrs["settings"][0]["key"] == "A"


def test_lone_doc_uses_the_given_time_when_there_is_one() -> None:
    ctx = ParseContext(name="d.md", tz=PST, default_time=dt.datetime(2026, 11, 20, 7, 30))
    result = parse_markdown_doc(b"# Doc\n\n```bash\nexport A=1\n```\n", ctx)
    at = dt.datetime(2026, 11, 20, 15, 30, tzinfo=UTC)
    assert result.events[0].at == at
    # Issue 14: a lone doc given a time is the configuration in force then (it used to give
    # no change at all, so nothing could be diffed against it).
    assert result.events[0].attrs["state"] is True
    assert [(c.key, c.old, c.new, c.at, c.source) for c in result.config_changes] == [
        ("A", None, "1", at, "doc")
    ]


def test_lone_doc_without_any_time_is_an_error() -> None:
    with pytest.raises(ParseError) as err:
        parse_markdown_doc(b"# Doc\n\nexport A=1\n", ParseContext(name="d.md"))
    assert err.value.message.startswith("a lone document needs a time")


def test_undecodable_bytes_are_a_parse_error_with_the_line() -> None:
    with pytest.raises(ParseError) as err:
        parse_markdown_doc(b"# Doc\n\nbad \xff byte\n", ParseContext(name="d.md"))
    assert err.value.line == 3
    assert "UTF-8" in err.value.message


def test_markdown_is_recognised_by_name_or_by_a_heading() -> None:
    assert looks_like_markdown_doc("DSV4_DEPLOY.md", b"")
    assert looks_like_markdown_doc("notes", b"# DSV4\n\n## Launch\n\n```bash\n")
    assert not looks_like_markdown_doc("launch", b"#!/bin/bash\nexport A=1\n")
    assert not looks_like_markdown_doc("launch", b"# launch dsv4\nexport A=1\n")
    assert not looks_like_markdown_doc("server.log", b"[2026-11-20 15:39:58] Receive\n")


# --- robustness ---------------------------------------------------------------------------------

_PIECES = st.sampled_from(
    list("ab$ {}()=-_\"'\\#;&|<>\n`*[]:019\t.")
    + ["export ", "```bash\n", "```\n", "if ", "; then\n", "fi\n", "else\n", "case ", "esac"]
    + ["- 2026-11-20 ", "## Changelog\n", "--tp ", "python3 -m sglang.launch_server ", "<<EOF\n"]
    + ["EOF\n", "| Variable | Value |\n|---|---|\n", "2026-13-45 ", "X_Y=1 ", "-> ", "remove "]
    # what the shell reader follows since issue 14
    + ["$((", "$(", "${", ",,}", ":-", ":?", "+=", "args=(", "args+=(", '"${args[@]}"', "local "]
    + ["f() {", "}\n", "docker run ", "-e ", "vllm/vllm-openai ", "<port>", "[ ", " ] && "]
    + ["[[ ", " == ", "while ", "do\n", "done\n", "#!/bin/bash\n", "sglang serve ", "env "]
    + ["```text\n", "```env\n", "echo ", "2>&1 ", "--disaggregation-mode "]
)


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_any_text_gives_settings_or_a_parse_error_never_another_exception(text: str) -> None:
    try:
        parse_markdown_doc(text.encode(), ParseContext(name="f.md", default_time=None))
    except ParseError as exc:
        assert exc.file == "f.md"
    try:
        shell_settings(text, where="f.sh")
    except ParseError as exc:
        assert exc.line >= 1


def test_changed_sections_are_the_ones_edited_between_revisions() -> None:
    from ingest.parsers.markdown import changed_sections, sections

    before = (
        "# DSV4\n\nintro\n\n## Launch\n\n```bash\n# not a heading\nexport A=1\n```\n\n"
        "## Changelog\n\n- 2026-11-20 07:30 first\n"
    )
    after = before.replace("export A=1", "export A=1\nexport SGLANG_SM120_MMA_TARGET_CTAS=512")
    assert [t for t, _ in sections(after)] == ["DSV4", "Launch", "Changelog"]
    edited = changed_sections(before, after)
    assert edited.startswith("## Launch")
    assert "SGLANG_SM120_MMA_TARGET_CTAS=512" in edited
    assert "Changelog" not in edited
    assert changed_sections(None, after).count("##") == 2
    assert changed_sections(after, None) == ""


def test_a_markdown_doc_over_the_size_limit_is_refused_before_parsing() -> None:
    from ingest.parsers.markdown import MAX_MARKDOWN_BYTES

    huge = b"| Variable | Value |\n|---|---|\n" + b"| `A` | 1 |\n" * (MAX_MARKDOWN_BYTES // 12 + 1)
    with pytest.raises(ParseError, match="over the 2097152 byte limit"):
        parse_markdown_doc(huge, ParseContext(name="DSV4_HUGE.md", default_time=None))


# --- YAML manifests ------------------------------------------------------------------------------


def test_a_yaml_manifest_gives_its_servers_environment_and_flags_not_its_names() -> None:
    text = (
        "## Prefill\n\n```yaml\n"
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        "metadata:\n"
        "  name: dsv4-prefill\n"
        "spec:\n"
        "  replicas: 2\n"
        "  template:\n"
        "    spec:\n"
        "      containers:\n"
        "        - name: sglang\n"
        "          image: lmsysorg/sglang:latest\n"
        "          env:\n"
        "            - name: SGLANG_SM120_MMA_TARGET_CTAS\n"
        '              value: "512"\n'
        "          command: [python3, -m, sglang.launch_server]\n"
        "          args: [--tp, '8', --disaggregation-mode, prefill]\n"
        "```\n"
    )
    settings, warnings = document_settings(tokenize(text), "t.md")
    assert warnings == []
    assert [(s.key, s.value, s.scope, s.where, s.profile) for s in settings] == [
        ("SGLANG_SM120_MMA_TARGET_CTAS", "512", "env", "t.md:16", "prefill"),
        ("--tp", "8", "flag", "t.md:18", "prefill"),
        ("--disaggregation-mode", "prefill", "flag", "t.md:18", "prefill"),
    ]


def test_a_broken_yaml_block_is_skipped_with_a_warning() -> None:
    settings, warnings = document_settings(tokenize("```yaml\nenv: [a\n```\n"), "t.md")
    assert settings == []
    assert warnings[0].startswith("skipped the yaml block: t.md:")
    assert "expected valid YAML" in warnings[0]
