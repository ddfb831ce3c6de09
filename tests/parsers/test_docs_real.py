"""Golden tests on real deployment guides (verbatim excerpts; provenance in
tests/fixtures/real/README.md). Each golden file holds every setting a guide yields and the
warnings; the tests below say, in words, what issue 14 found wrong in each guide.

Set UPDATE_GOLDENS=1 to rewrite the golden files after a deliberate change, then read the diff.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from ingest.parsers.docs import parse_markdown_doc
from ingest.parsers.markdown import document_settings, tokenize
from ingest.parsers.types import UTC, ParseContext, Setting
from tests.parsers.golden import assert_golden

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "docs"
DSV4 = "sglang_deepseek_v4_nvfp4_sm90.md"
DSV32 = "sglang_deepseek_v32.md"
VLLM_DOCKER = "vllm_docker.md"
RBG_PD = "sglang_rbg_deepseekv32_pd.md"
ASCEND = "sglang_ascend_npu_deepseek.md"
AMD = "sglang_amd_gpu.md"


def read(name: str) -> tuple[list[Setting], list[str]]:
    return document_settings(tokenize((REAL / name).read_text(encoding="utf-8")), name)


def golden(name: str) -> None:
    settings, warnings = read(name)
    assert_golden({"settings": settings, "warnings": warnings}, REAL / f"{name}.expected.json")


def by_key(settings: list[Setting]) -> dict[str, list[str | None]]:
    out: dict[str, list[str | None]] = {}
    for s in settings:
        out.setdefault(s.key, []).append(s.value)
    return out


def test_dsv4_nvfp4_guide_golden() -> None:
    golden(DSV4)


def test_dsv4_nvfp4_guide_yields_the_launch_and_its_environment_only() -> None:
    settings, warnings = read(DSV4)
    keys = by_key(settings)
    # The benchmark client's flags (python3 -m sglang.benchmark.serving) are not the server's.
    for client_flag in ("--backend", "--num-prompts", "--random-input-len", "--dataset-name"):
        assert client_flag not in keys
    # Function locals, arithmetic, `+=`, test-command prefixes, `text` blocks: not settings.
    for not_a_setting in (
        "name",
        "input_len",
        "readiness_deadline",
        "FATAL_PATTERN",
        "CUDA_VISIBLE_DEVICES",
        "kv_cache_dtype",
        "fp4_kv_cache_recipe",
    ):
        assert not_a_setting not in keys
    assert not any("$((" in (s.value or "") for s in settings)
    # The flag's value set in both branches of the if/else resolves: MODEL_VARIANT is "Pro".
    assert keys["--mem-fraction-static"] == ["0.92"]
    assert keys["MEM_FRACTION_STATIC"] == ["0.92"]
    # ${MODEL_VARIANT,,} is expanded.
    assert keys["--served-model-name"] == ["deepseek-v4-pro"]
    # The FP8 control's exports come after the launch: they do not override the primary ones.
    assert keys["KV_LABEL"] == ["nvfp4"]
    assert keys["--kv-cache-dtype"] == ["fp4_e2m1"]
    assert {s.profile for s in settings} == {""}  # one launch
    assert len(settings) == 59  # 129 before issue 14, 67 of them not settings
    assert warnings == [
        "4 variable(s) exported after the last server launch reach no launch and are not read "
        "as settings: BASE_URL, KV_LABEL, READINESS_TIMEOUT_SEC, SERVER_LOG"
    ]


def test_dsv32_guide_golden() -> None:
    golden(DSV32)


def test_dsv32_guide_keeps_each_launch_apart() -> None:
    settings, _ = read(DSV32)
    profiles = {s.profile for s in settings}
    assert profiles == {
        "Launch with TP + DP (Recommended)",
        "Launch with EP + DP",
        "Launch with Pure TP",
        "Multi-token Prediction",
        "prefill",
        "decode",
        "Launch with EP + DP 2",
    }
    prefill = {s.key: s.value for s in settings if s.profile == "prefill"}
    decode = {s.key: s.value for s in settings if s.profile == "decode"}
    assert prefill["--disaggregation-bootstrap-port"] == "8998"
    assert "--disaggregation-bootstrap-port" not in decode
    keys = by_key(settings)
    # The router, the eval and the benchmark script are not servers; the AIME script block
    # (#! /bin/bash) runs in a process of its own.
    for not_a_setting in ("--pd-disaggregation", "--eval-name", "--num-shots", "PORT", "MODEL"):
        assert not_a_setting not in keys
    assert "NEMO_SKILLS_DISABLE_UNCOMMITTED_CHANGES_CHECK" not in keys


def test_vllm_docker_guide_golden() -> None:
    golden(VLLM_DOCKER)


def test_vllm_docker_guide_reads_the_flags_after_the_image() -> None:
    settings, _ = read(VLLM_DOCKER)
    assert [(s.key, s.value) for s in settings] == [("--model", "mistralai/Mistral-7B-v0.1")]
    # `DOCKER_BUILDKIT=1 docker build` is a build, and `HUGGING_FACE_HUB_TOKEN=<secret>` a
    # placeholder: neither is a setting. The second launch (`vllm/vllm-openai <args...>`)
    # gives nothing, but it is a launch of its own.
    assert settings[0].profile == "Use vLLM's Official Docker Image"


def test_a_real_guide_given_a_time_is_a_configuration_state() -> None:
    at = dt.datetime(2026, 7, 14, 12, tzinfo=UTC)
    data = (REAL / DSV4).read_bytes()
    result = parse_markdown_doc(data, ParseContext(name=DSV4, default_time=at))
    assert result.events[0].attrs["state"] is True
    assert len(result.config_changes) == 59
    assert all(c.old is None and c.at == at and c.source == "doc" for c in result.config_changes)


def test_rbg_pd_guide_golden() -> None:
    golden(RBG_PD)


def test_rbg_pd_guide_keeps_each_role_and_its_env_apart() -> None:
    """One RoleBasedGroup YAML block with a prefill role, a decode role (leader and worker)
    and a router: it had become one profile named "decode", the prefill's values lost to the
    decode's and its env credited to decode."""
    settings, _ = read(RBG_PD)
    by_profile: dict[str, dict[str, str | None]] = {}
    for s in settings:
        by_profile.setdefault(s.profile, {})[s.key] = s.value
    assert set(by_profile) == {"prefill", "decode leader", "decode worker"}
    prefill, leader, worker = (by_profile[p] for p in ("prefill", "decode leader", "decode worker"))
    assert prefill["--disaggregation-mode"] == "prefill"
    assert (prefill["--chunked-prefill-size"], prefill["--deepep-mode"]) == ("131072", "normal")
    assert prefill["SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT"] == "1000000000"
    assert leader["--disaggregation-mode"] == worker["--disaggregation-mode"] == "decode"
    assert (leader["--dp-size"], worker["--dp-size"]) == ("8", "32")
    assert "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT" not in leader


def test_ascend_guide_golden() -> None:
    golden(ASCEND)


def test_ascend_guide_keeps_each_hardware_sections_exports_to_itself() -> None:
    """Three alternative sections (1, 2 and 4 x Atlas 800I A3), each exporting then launching:
    the first section's exports had reached the second's prefill launch."""
    settings, _ = read(ASCEND)
    env = {(s.profile, s.key): s.value for s in settings if s.scope == "env"}
    mixed = "Running DeepSeek in PD mixed mode on 1 x Atlas 800I A3."
    assert env[(mixed, "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK")] == "32"
    assert ("prefill", "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK") not in env
    assert ("prefill", "SGLANG_ENABLE_SPEC_V2") not in env
    assert env[("decode", "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK")] == "88"
    assert ("prefill 2", "SGLANG_ENABLE_SPEC_V2") not in env


def test_amd_guide_golden() -> None:
    golden(AMD)


def test_amd_guide_launches_through_its_alias() -> None:
    """Both launches go through ``alias drun='docker run ...'``; the second marks a line with
    ``\\ # <- here``. They had given no settings."""
    settings, warnings = read(AMD)
    v3 = {s.key: s.value for s in settings if s.profile == "Running DeepSeek-V3"}
    assert v3 == {
        "--model-path": "deepseek-ai/DeepSeek-V3",
        "--tp": "8",
        "--trust-remote-code": "true",
        "--host": "0.0.0.0",
        "--port": "30000",
    }
    assert any("line continuation with a note after it" in w for w in warnings)
