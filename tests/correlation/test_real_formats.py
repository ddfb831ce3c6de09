"""The scenario situations written as real files (SGLang log, DSV4 doc with its changelog,
Prometheus text, harness JSON Lines) and read back through the ingest parsers: the culprit
still ranks first."""

from __future__ import annotations

import pytest

from tests.correlation.livestory import World, simulate
from tests.correlation.realformat import parse_inputs, render
from tests.correlation.situations import SITUATIONS, scenario
from timeline.correlation import keys
from timeline.correlation.engine import analyze
from timeline.correlation.types import Result

# The DST night needs the log parser's resolution of repeated local times (the ingest half of
# issue 13); it runs in test_scenarios.py on engine inputs meanwhile.
REAL = sorted(set(SITUATIONS) - {"dst_night"})


def _analyse(name: str, seed: int) -> tuple[World, Result]:
    world = simulate(scenario(name, seed))
    return world, analyze(parse_inputs(render(world), world.scenario.tz))


@pytest.mark.parametrize("name", REAL)
def test_the_culprit_ranks_first_when_read_from_real_files(name):
    world, result = _analyse(name, 21)

    if world.scenario.logs:
        assert result.restarts and result.suspects[0].live is not None
    if world.crashes:
        at_first = {s.kind for s in result.symptoms if s.at == result.first_bad}
        assert world.scenario.symptom in at_first
    fields = frozenset(world.starts[0][1])
    top = result.suspects[0].change
    assert keys.canonical(top.key, top.scope, fields) == world.scenario.culprit


def test_the_files_are_the_real_formats():
    world = simulate(scenario("deploy_at_restart", 21))
    files = render(world)

    log = files["logs/server.log"].decode()
    assert "] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V4', " in log
    assert "] The server is fired up and ready to roll!" in log
    assert "## Changelog" in files["docs/DSV4_DEPLOY.md"].decode()
    assert files["metrics/sglang.prom"].startswith(b"# TYPE sglang:num_running_reqs gauge\n")
    inputs = parse_inputs(files, world.scenario.tz)
    assert len(inputs.requests) == len(world.requests)
    assert {c.key for c in inputs.changes} >= {"SGLANG_ENABLE_PDL"}
    # The log parser reads every start with its ServerArgs, as logged.
    assert len(inputs.starts) == len(world.starts)
    assert inputs.starts[0].server_args["chunked_prefill_size"] == "8192"
    assert inputs.starts[0].server_args["model_path"] == "'deepseek-ai/DeepSeek-V4'"


def test_the_doc_records_are_dated_in_the_servers_time_zone():
    world = simulate(scenario("deploy_at_restart", 22, tz="Asia/Kolkata"))
    inputs = parse_inputs(render(world), world.scenario.tz)

    recorded = sorted(c.at for c in inputs.changes)
    expected = sorted(at.replace(second=0, microsecond=0) for at, *_ in world.records)
    assert recorded == expected
