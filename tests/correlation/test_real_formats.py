"""The scenario situations written as real files (SGLang log, DSV4 doc with its changelog,
Prometheus text, harness JSON Lines) and read back through the ingest parsers: the culprit
still ranks first."""

from __future__ import annotations

import dataclasses

import pytest

from tests.correlation.livestory import World, simulate, world_inputs
from tests.correlation.realformat import parse_inputs, render
from tests.correlation.situations import SITUATIONS, scenario
from timeline.correlation import keys
from timeline.correlation.engine import analyze
from timeline.correlation.types import Inputs, Result

# The DST night needs the log parser's resolution of repeated local times (the ingest half of
# issue 13); it runs in test_scenarios.py on engine inputs meanwhile.
REAL = sorted(set(SITUATIONS) - {"dst_night"})


def _read(world: World) -> Inputs:
    files = render(world)
    inputs = parse_inputs(files, world.scenario.tz)
    if world.scenario.logs and not inputs.starts:
        # Until the log parser emits server_start events and crash symptoms (the ingest half of
        # issue 13), the starts come from the same simulation as the log text.
        built = world_inputs(world)
        inputs = dataclasses.replace(inputs, starts=built.starts, errors=built.errors)
    return inputs


def _analyse(name: str, seed: int) -> tuple[World, Result]:
    world = simulate(scenario(name, seed))
    return world, analyze(_read(world))


@pytest.mark.parametrize("name", REAL)
def test_the_culprit_ranks_first_when_read_from_real_files(name):
    world, result = _analyse(name, 21)

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


def test_the_doc_records_are_dated_in_the_servers_time_zone():
    world = simulate(scenario("deploy_at_restart", 22, tz="Asia/Kolkata"))
    inputs = parse_inputs(render(world), world.scenario.tz)

    recorded = sorted(c.at for c in inputs.changes)
    expected = sorted(at.replace(second=0, microsecond=0) for at, *_ in world.records)
    assert recorded == expected
