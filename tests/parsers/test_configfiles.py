"""Config files of the deploy repository: which ones count, their settings, and diffs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from ingest.parsers.configfiles import (
    diff_settings,
    extract_settings,
    generated_data,
    is_config_path,
)
from ingest.parsers.types import UTC, ConfigChangeRecord, ParseError, Setting

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "docs"


def read(name: str) -> list[Setting]:
    return extract_settings(name, (FIXTURES / name).read_text(encoding="utf-8"))


def s(key: str, value: str, scope: str, where: str, condition: str = "") -> Setting:
    return Setting(key, value, scope, where, condition)


# --- which files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "launch.sh",
        "deploy/run_server.bash",
        "bin/launch",
        "start-dsv4",
        ".env",
        "deploy/prod.env",
        ".env.production",
        "k8s/deployment.yaml",
        "compose.yml",
        "router.toml",
        "config/router.json",
        "docs/DSV4_DEPLOY.md",
    ],
)
def test_config_paths_are_recognised(path: str) -> None:
    assert is_config_path(path)


@pytest.mark.parametrize(
    "path",
    # (run.py and launch_x.py are Python launchers, read by pyconfig; runtime.py and server.py
    # only begin like one)
    ["package-lock.json", "web/package-lock.json", "runtime.py", "README", "main.go", "server.py"],
)
def test_other_paths_are_not_config(path: str) -> None:
    assert not is_config_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "pnpm-lock.yaml",
        "web/pnpm-lock.yaml",
        "npm-shrinkwrap.json",
        "poetry.lock",
        "yarn.lock",
        "Cargo.lock",
        "Pipfile.lock",
        "composer.lock",
        "flake.lock",
        "packages.lock.json",
        "static/app.min.json",
        "static/icons/selection.json",
        "web/node_modules/left-pad/package.json",
    ],
)
def test_lock_files_and_generated_data_are_not_config(path: str) -> None:
    """On real repositories these made 30-60% of the "config changes" (issue 14)."""
    assert not is_config_path(path)


def test_huge_minified_and_icon_font_json_are_generated_data() -> None:
    assert generated_data("config/router.json", '{"router": {"policy": "cache_aware"}}') == ""
    assert generated_data("deploy/app.yaml", "a: 1\n") == ""
    huge = "{" + ",\n".join(f'"k{i}": {i}' for i in range(30_000)) + "}"
    assert generated_data("data/table.json", huge).endswith("the 262,144 of a hand-written file")
    minified = "{" + ",".join(f'"k{i}":{i}' for i in range(2_000)) + "}"
    assert generated_data("web/manifest.json", minified) == "minified JSON"
    icomoon = '{"IcoMoonType": "selection", "icons": [{"icon": {"paths": ["M0 0"]}}]}'
    fontello = '{"name": "", "css_prefix_text": "icon-", "glyphs": [{"code": 59392}]}'
    assert generated_data("fonts/icons.json", icomoon) == "an icon font's glyph table"
    assert generated_data("fontello/config.json", fontello) == "an icon font's glyph table"
    assert generated_data("launch.sh", minified) == ""  # only structured data files


def test_unknown_file_yields_no_settings() -> None:
    assert extract_settings("src/main.go", "package main\n") == []


# --- each format (golden) ------------------------------------------------------------------------


def test_launch_script_settings() -> None:
    case = 'case "$GPU" in'
    # Issue 14: MODEL_PATH (line 5) is not exported, so the server does not see it; its value
    # is in --model-path.
    assert read("launch.sh") == [
        s("SGLANG_SM120_MMA_TARGET_CTAS", "512", "env", "launch.sh:6"),
        s("NCCL_SOCKET_IFNAME", "eth0", "env", "launch.sh:7"),
        s("SGLANG_ENABLE_PDL", "1", "env", "launch.sh:10", f"{case} b200)"),
        s("SGLANG_ENABLE_PDL", "0", "env", "launch.sh:11", f"{case} *)"),
        s("PYTHONUNBUFFERED", "1", "env", "launch.sh:14"),
        s("--model-path", "deepseek-ai/DeepSeek-V4", "flag", "launch.sh:15"),
        s("--tokenizer-path", "/models/dsv4-tok-v2", "flag", "launch.sh:16"),
        s("--tp", "8", "flag", "launch.sh:17"),
        s("--mem-fraction-static", "0.88", "flag", "launch.sh:18"),
        s("--chunked-prefill-size", "16384", "flag", "launch.sh:19"),
        s("--enable-metrics", "true", "flag", "launch.sh:20"),
        s("--port", "30000", "flag", "launch.sh:21"),
    ]


def test_dotenv_settings() -> None:
    assert read("deploy.env") == [
        s("METRICS_PORT", "9401", "env", "deploy.env:2"),
        s("LOG_LEVEL", "debug", "env", "deploy.env:3"),
        s("HF_HOME", "/models/hf cache", "env", "deploy.env:4"),
        s("SERVED_NAME", "dsv4-${LOG_LEVEL}", "env", "deploy.env:5"),
        s("METRICS_URL", "http://localhost:9401/metrics", "env", "deploy.env:6"),
        s("EMPTY", "", "env", "deploy.env:7"),
    ]


def test_dotenv_line_that_is_not_an_assignment_names_the_line() -> None:
    with pytest.raises(ParseError) as err:
        extract_settings(".env", "A=1\nthis is not an assignment\n")
    assert (err.value.file, err.value.line) == (".env", 2)
    assert err.value.message.startswith("expected KEY=VALUE")


def test_dotenv_unterminated_quote_names_the_line() -> None:
    with pytest.raises(ParseError) as err:
        extract_settings("prod.env", 'A="open\n')
    assert err.value.line == 1


def test_k8s_manifest_is_flattened_and_its_env_and_launch_args_read() -> None:
    settings = read("deployment.yaml")
    file_scope = [(x.key, x.value, x.where) for x in settings if x.scope == "file"]
    assert file_scope[:5] == [
        ("apiVersion", "apps/v1", "deployment.yaml:2"),
        ("kind", "Deployment", "deployment.yaml:3"),
        ("metadata.name", "dsv4", "deployment.yaml:5"),
        ("metadata.labels.app", "dsv4", "deployment.yaml:7"),
        ("spec.replicas", "1", "deployment.yaml:9"),
    ]
    key, containers, where = file_scope[5]
    assert (key, where) == ("spec.template.spec.containers", "deployment.yaml:13")
    assert containers.startswith('[{"name": "sglang", "image": "lmsysorg/sglang:v0.5.6"')
    assert len(file_scope) == 6
    assert [x for x in settings if x.scope != "file"] == [
        s("SGLANG_SM120_MMA_TARGET_CTAS", "512", "env", "deployment.yaml:23"),
        s("--model-path", "deepseek-ai/DeepSeek-V4", "flag", "deployment.yaml:15"),
        s("--tp", "8", "flag", "deployment.yaml:15"),
        s("--enable-metrics", "true", "flag", "deployment.yaml:15"),
    ]


def test_compose_file_merges_anchors_and_reads_environment_maps_and_lists() -> None:
    assert read("compose.yaml") == [
        s("x-common.restart", "unless-stopped", "file", "compose.yaml:2"),
        s("x-common.shm_size", "32g", "file", "compose.yaml:3"),
        s("services.sglang.restart", "unless-stopped", "file", "compose.yaml:2"),
        s("services.sglang.shm_size", "32g", "file", "compose.yaml:3"),
        s("services.sglang.image", "lmsysorg/sglang:v0.5.6", "file", "compose.yaml:7"),
        s(
            "services.sglang.command",
            "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4 --tp 8",
            "file",
            "compose.yaml:8",
        ),
        s("services.sglang.environment.LOG_LEVEL", "info", "file", "compose.yaml:10"),
        s("services.sglang.environment.SGLANG_ENABLE_PDL", "1", "file", "compose.yaml:11"),
        s("services.sglang.ports", '["30000:30000"]', "file", "compose.yaml:12"),
        s("services.metrics.image", "prom/prometheus:v3.0.0", "file", "compose.yaml:14"),
        s("services.metrics.environment", '["METRICS_PORT=9400"]', "file", "compose.yaml:16"),
        s("services.metrics.enabled", "true", "file", "compose.yaml:17"),
        s("services.metrics.note", "null", "file", "compose.yaml:18"),
        s("LOG_LEVEL", "info", "env", "compose.yaml:10"),
        s("SGLANG_ENABLE_PDL", "1", "env", "compose.yaml:11"),
        s("--model-path", "deepseek-ai/DeepSeek-V4", "flag", "compose.yaml:8"),
        s("--tp", "8", "flag", "compose.yaml:8"),
        s("METRICS_PORT", "9400", "env", "compose.yaml:16"),
    ]


def test_toml_settings() -> None:
    assert read("server.toml") == [
        s("title", "dsv4 router", "file", "server.toml"),
        s("server.port", "30000", "file", "server.toml"),
        s("server.timeout", "12.5", "file", "server.toml"),
        s("server.started", "2026-11-20T07:30:00-08:00", "file", "server.toml"),
        s("server.env.LOG_LEVEL", "info", "file", "server.toml"),
        s("backends", '[{"url": "http://node1:30000"}]', "file", "server.toml"),
        s("LOG_LEVEL", "info", "env", "server.toml"),
    ]


def test_json_settings() -> None:
    assert read("router.json") == [
        s("model", "deepseek-ai/DeepSeek-V4", "file", "router.json"),
        s("scheduling.policy", "lpm", "file", "router.json"),
        s("scheduling.max_running_requests", "256", "file", "router.json"),
        s("scheduling.pdl", "true", "file", "router.json"),
        s("gpus", "[0, 1, 2, 3]", "file", "router.json"),
        s("env.SGLANG_SM120_MMA_TARGET_CTAS", "512", "file", "router.json"),
        s("SGLANG_SM120_MMA_TARGET_CTAS", "512", "env", "router.json"),
    ]


def test_markdown_file_is_read_as_a_deployment_doc() -> None:
    settings = extract_settings("docs/DSV4_DEPLOY.md", "```bash\nexport A=1\n```\n")
    assert settings == [s("A", "1", "env", "docs/DSV4_DEPLOY.md:2")]


def test_multi_document_yaml_prefixes_keys_with_the_document_index() -> None:
    text = "kind: Service\n---\nkind: Deployment\n"
    assert extract_settings("all.yaml", text) == [
        s("0.kind", "Service", "file", "all.yaml:1"),
        s("1.kind", "Deployment", "file", "all.yaml:3"),
    ]


def test_empty_yaml_has_no_settings() -> None:
    assert extract_settings("empty.yaml", "# nothing yet\n") == []


# --- malformed files -----------------------------------------------------------------------------


def test_malformed_yaml_names_the_line() -> None:
    with pytest.raises(ParseError) as err:
        read("malformed.yaml")
    assert (err.value.file, err.value.line) == ("malformed.yaml", 5)
    assert err.value.message.startswith("expected valid YAML")


def test_malformed_toml_names_the_line() -> None:
    with pytest.raises(ParseError) as err:
        extract_settings("router.toml", "[server]\nport = 30000\ntimeout 12\n")
    assert (err.value.file, err.value.line) == ("router.toml", 3)
    assert err.value.message.startswith("expected valid TOML")


def test_malformed_json_names_the_line() -> None:
    with pytest.raises(ParseError) as err:
        extract_settings("router.json", '{\n  "a": 1,\n  "b": \n}\n')
    assert (err.value.file, err.value.line) == ("router.json", 4)
    assert err.value.message.startswith("expected valid JSON")


def test_shell_script_with_an_unterminated_quote_names_the_line() -> None:
    with pytest.raises(ParseError) as err:
        extract_settings("launch.sh", 'export A=1\nexport B="open\nexport C=3\n')
    assert (err.value.file, err.value.line) == ("launch.sh", 2)


# --- diff ----------------------------------------------------------------------------------------

AT = dt.datetime(2026, 11, 20, 13, 12, tzinfo=ZoneInfo("America/Los_Angeles"))


def test_diff_reports_introduced_removed_and_changed_keys_sorted() -> None:
    before = [
        s("--tp", "8", "flag", "launch.sh:10"),
        s("--tokenizer-path", "/models/dsv4-tok-v1", "flag", "launch.sh:11"),
        s("OLD_ONLY", "1", "env", "launch.sh:3"),
    ]
    after = [
        s("--tp", "8", "flag", "launch.sh:11"),
        s("--tokenizer-path", "/models/dsv4-tok-v2", "flag", "launch.sh:12"),
        s("SGLANG_SM120_MMA_TARGET_CTAS", "512", "env", "launch.sh:4"),
    ]
    changes = diff_settings(before, after, at=AT, source="commit", ref="abc123")
    at = dt.datetime(2026, 11, 20, 21, 12, tzinfo=UTC)
    assert changes == [
        ConfigChangeRecord(
            "--tokenizer-path",
            "/models/dsv4-tok-v1",
            "/models/dsv4-tok-v2",
            at,
            "flag",
            "commit",
            "abc123",
            where="launch.sh:12",
        ),
        ConfigChangeRecord("OLD_ONLY", "1", None, at, "env", "commit", "abc123", "launch.sh:3"),
        ConfigChangeRecord(
            "SGLANG_SM120_MMA_TARGET_CTAS",
            None,
            "512",
            at,
            "env",
            "commit",
            "abc123",
            "launch.sh:4",
        ),
    ]
    assert changes[0].at.tzinfo is UTC


def test_diff_identity_includes_the_condition() -> None:
    before = [
        s("PDL", "1", "env", "a:1", "if b200"),
        s("PDL", "0", "env", "a:3", "else of if b200"),
    ]
    after = [s("PDL", "1", "env", "a:1", "if b200"), s("PDL", "2", "env", "a:3", "else of if b200")]
    (change,) = diff_settings(before, after, at=AT, source="doc", ref="d@1")
    assert (change.key, change.old, change.new, change.condition) == (
        "PDL",
        "0",
        "2",
        "else of if b200",
    )


def test_diff_last_assignment_of_a_key_wins() -> None:
    before = [s("A", "1", "env", "x:1"), s("A", "2", "env", "x:5")]
    after = [s("A", "2", "env", "x:1")]
    assert diff_settings(before, after, at=AT, source="commit", ref="r") == []


def test_diff_of_identical_states_is_empty_and_naive_time_is_refused() -> None:
    same = [s("A", "1", "env", "x:1")]
    assert diff_settings(same, same, at=AT, source="commit", ref="r") == []
    with pytest.raises(ValueError, match="aware"):
        diff_settings(same, [], at=dt.datetime(2026, 11, 20, 13, 12), source="commit", ref="r")


def test_story_launch_script_commit_introduces_the_ctas_setting() -> None:
    after_text = (FIXTURES / "launch.sh").read_text(encoding="utf-8")
    before_text = after_text.replace("export SGLANG_SM120_MMA_TARGET_CTAS=512\n", "")
    changes = diff_settings(
        extract_settings("launch.sh", before_text),
        extract_settings("launch.sh", after_text),
        at=AT,
        source="commit",
        ref="c0ffee",
    )
    assert [(c.key, c.old, c.new, c.scope) for c in changes] == [
        ("SGLANG_SM120_MMA_TARGET_CTAS", None, "512", "env")
    ]


def test_a_shell_script_kept_in_yaml_is_read_as_the_shell_reads_it() -> None:
    """dstack's ``commands:`` (a list of scripts run in one shell), as in dstack's DeepSeek-V4
    example: the launch's flags and the env list, each at its own line."""
    text = (
        "type: service\n"
        "name: deepseek-v4\n"
        "env:\n"
        "  - SGLANG_JIT_DEEPGEMM_PRECOMPILE=0\n"
        "commands:\n"
        "  - export SGLANG_ENABLE_PDL=1\n"
        "  - |\n"
        "    sglang serve \\\n"
        "      --model-path deepseek-ai/DeepSeek-V4-Pro \\\n"
        "      --tp 8\n"
        "port: 30000\n"
    )
    env_and_flags = [
        (x.key, x.value, x.where)
        for x in extract_settings(".dstack.yml", text)
        if x.scope in ("env", "flag")
    ]
    assert env_and_flags == [
        ("SGLANG_JIT_DEEPGEMM_PRECOMPILE", "0", ".dstack.yml:4"),
        ("SGLANG_ENABLE_PDL", "1", ".dstack.yml:6"),
        ("--model-path", "deepseek-ai/DeepSeek-V4-Pro", ".dstack.yml:9"),
        ("--tp", "8", ".dstack.yml:10"),
    ]


RBG = """\
apiVersion: workloads.x-k8s.io/v1alpha1
kind: RoleBasedGroup
spec:
  roles:
    - name: prefill
      leaderWorkerSet:
        patchLeaderTemplate:
          spec:
            containers:
            - command: [python3, -m, sglang.launch_server, --disaggregation-mode, prefill,
                        --chunked-prefill-size, "131072", --deepep-mode, normal]
      template:
        spec:
          containers:
          - name: sglang
            env:
            - name: SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT
              value: "1000"
    - name: decode
      leaderWorkerSet:
        patchLeaderTemplate:
          spec:
            containers:
            - command: [python3, -m, sglang.launch_server, --disaggregation-mode, decode,
                        --dp-size, "8"]
        patchWorkerTemplate:
          spec:
            containers:
            - command: [python3, -m, sglang.launch_server, --disaggregation-mode, decode,
                        --dp-size, "32"]
      template:
        spec:
          containers:
          - name: sglang
            env:
            - name: MC_TE_METRIC
              value: "true"
    - name: router
      template:
        spec:
          containers:
          - name: router
            command: [python3, -m, sglang_router.launch_router, --pd-disaggregation]
            env:
            - name: ROUTER_ONLY
              value: "1"
"""


def test_each_launch_of_a_multi_role_manifest_is_a_profile_with_its_own_environment() -> None:
    """A RoleBasedGroup (the shape of SGLang's rbg PD guide): prefill and decode roles, decode
    with a leader and a worker whose flags differ. Each launch is a profile with its role's
    environment; read as one they had merged, the last value of each flag winning (the
    prefill's chunked prefill size and deepep mode were lost, its env credited to decode)."""
    from ingest.parsers.configfiles import yaml_launch_settings

    got = {(x.profile, x.key, x.value) for x in yaml_launch_settings("d.md", RBG, first_line=10)}
    assert {
        ("prefill", "--disaggregation-mode", "prefill"),
        ("prefill", "--chunked-prefill-size", "131072"),
        ("prefill", "--deepep-mode", "normal"),
        ("prefill", "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", "1000"),
        ("decode leader", "--dp-size", "8"),
        ("decode worker", "--dp-size", "32"),
        ("decode leader", "MC_TE_METRIC", "true"),
        ("decode worker", "MC_TE_METRIC", "true"),
    } <= got
    assert not [g for g in got if g[0] == "prefill" and g[1] in ("--dp-size", "MC_TE_METRIC")]
    assert not [g for g in got if g[1] == "ROUTER_ONLY"]  # a router is no server
    # The same manifest in a repository: each launch apart too, diffed per profile.
    in_repo = extract_settings("k8s/rbg.yaml", RBG)
    assert ("decode worker", "--dp-size", "32") in {(x.profile, x.key, x.value) for x in in_repo}
    assert ("", "ROUTER_ONLY", "1") in {(x.profile, x.key, x.value) for x in in_repo}
    before = [x for x in in_repo if x.key != "--dp-size" or x.profile != "decode worker"]
    (change,) = diff_settings(
        before, in_repo, at=dt.datetime(2026, 11, 20, tzinfo=UTC), source="repo", ref="abc"
    )
    assert (change.key, change.old, change.new) == ("--dp-size", None, "32")
    assert "decode worker" in change.condition


def test_a_leader_and_its_workers_and_two_compose_services_are_launches_apart() -> None:
    lws = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
spec:
  leaderWorkerTemplate:
    leaderTemplate:
      spec:
        containers:
        - command: [python3, -m, sglang.launch_server, --disaggregation-mode, prefill,
                    --node-rank, "0"]
          env:
          - {name: MC_TE_METRIC, value: "false"}
    workerTemplate:
      spec:
        containers:
        - command: [python3, -m, sglang.launch_server, --disaggregation-mode, prefill,
                    --node-rank, "1"]
          env:
          - {name: MC_TE_METRIC, value: "true"}
"""
    got = {(x.profile, x.key, x.value) for x in extract_settings("lws.yaml", lws)}
    assert {
        ("prefill leader", "MC_TE_METRIC", "false"),
        ("prefill worker", "MC_TE_METRIC", "true"),
        ("prefill leader", "--node-rank", "0"),
        ("prefill worker", "--node-rank", "1"),
    } <= got
    compose = """\
services:
  prefill:
    command: python3 -m sglang.launch_server --disaggregation-mode prefill --tp 8
    environment: {SGLANG_PREFILL_ONLY: "1"}
  decode:
    command: python3 -m sglang.launch_server --disaggregation-mode decode --tp 16
"""
    got = {(x.profile, x.key, x.value) for x in extract_settings("compose.yaml", compose)}
    assert {
        ("prefill", "--tp", "8"),
        ("prefill", "SGLANG_PREFILL_ONLY", "1"),
        ("decode", "--tp", "16"),
    } <= got
    assert ("decode", "SGLANG_PREFILL_ONLY", "1") not in got


def test_a_script_launching_two_servers_keeps_them_apart_beside_other_launches() -> None:
    """A CI job whose step starts a prefill and a decode server, and another step with a third
    launch: three profiles, not the two servers' flags merged under one name. Text under
    ``commands:`` that is not shell (a bot's list) is no launch and no error."""
    ci = (
        "jobs:\n  pd:\n    steps:\n      - name: servers\n        run: |\n"
        "          python3 -m sglang.launch_server --disaggregation-mode prefill "
        "--chunked-prefill-size 8192 &\n"
        "          python3 -m sglang.launch_server --disaggregation-mode decode "
        "--cuda-graph-max-bs 64 &\n"
        "      - name: baseline\n        run: python3 -m sglang.launch_server --tp 8\n"
    )
    got = {
        (x.profile, x.key, x.value) for x in extract_settings("ci.yaml", ci) if x.scope == "flag"
    }
    assert got == {
        ("prefill", "--disaggregation-mode", "prefill"),
        ("prefill", "--chunked-prefill-size", "8192"),
        ("decode", "--disaggregation-mode", "decode"),
        ("decode", "--cuda-graph-max-bs", "64"),
        ("baseline", "--tp", "8"),
    }
    bot = extract_settings("bot.yaml", 'name: bot\ncommands: ["don\'t panic", help]\n')
    assert [(x.key, x.scope) for x in bot] == [("name", "file"), ("commands", "file")]
