"""Issue 13's situations, one test each: the culprit ranks first, for the right reasons.

Each scenario is played out by tests/correlation/livestory.py (restarts, requests, metrics, the
symptoms the culprit causes) from fixed seeds; bench/accuracy.py draws other seeds.
"""

from __future__ import annotations

import pytest

from evidence.vocabulary import SymptomKind
from tests.correlation.livestory import World, simulate, world_inputs
from tests.correlation.situations import scenario
from timeline.correlation import keys
from timeline.correlation.engine import analyze
from timeline.correlation.types import Result

SEEDS = (11, 12, 13)


def _run(name: str, seed: int) -> tuple[World, Result]:
    world = simulate(scenario(name, seed))
    return world, analyze(world_inputs(world))


def _top(world: World, result: Result) -> str:
    fields = frozenset(world.starts[0][1]) if world.starts else frozenset()
    top = result.suspects[0].change
    return keys.canonical(top.key, top.scope, fields)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_change_recorded_hours_before_is_dated_by_the_restart_that_deployed_it(seed):
    world, result = _run("deploy_at_restart", seed)

    assert _top(world, result) == world.scenario.culprit
    live = result.suspects[0].live
    assert live is not None and live.recorded_at is not None
    deploy = world.scenario.plans[-1].at
    assert live.live_at == deploy and live.recorded_at < deploy
    # ServerArgs never shows env vars: those are assumed live at the first start after the record.
    words = "assumed live from the start at" if live.key.isupper() else "went live at the start at"
    assert result.suspects[0].reasons[0].startswith(words)
    assert live.assumed == live.key.isupper()
    assert result.last_good is not None and result.last_good < deploy


@pytest.mark.parametrize("seed", SEEDS)
def test_a_change_committed_but_not_deployed_at_first_bad_is_no_suspect(seed):
    world, result = _run("committed_not_deployed", seed)

    assert _top(world, result) == world.scenario.culprit
    ((_, unrun_key, _),) = world.scenario.unrun
    assert unrun_key not in {s.live.key for s in result.suspects if s.live}
    shown = keys.display(unrun_key)
    reason = next(e.reason for e in result.excluded if e.change.key == shown)
    assert "documented, not deployed" in reason
    assert any(shown in line and "documented, not deployed" in line for line in result.drift)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_hand_launched_flag_is_drift_sourced_from_the_log_line(seed):
    world, result = _run("hand_launched_drift", seed)

    assert _top(world, result) == world.scenario.culprit
    top = result.suspects[0]
    assert top.sources == (f"live:{top.live.live_where}",) if top.live else False
    assert top.live is not None and top.live.recorded_at is None
    assert any("drift" in r for r in top.reasons)
    assert any(
        line.startswith(top.change.key) and "no doc or commit" in line for line in result.drift
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_scheduling_named_decoys_that_ran_cleanly_rank_below_the_culprit(seed):
    world, result = _run("decoys_ran_cleanly", seed)

    assert _top(world, result) == world.scenario.culprit
    decoys = [s for s in result.suspects[1:] if s.live is not None]
    assert decoys
    for decoy in decoys:
        assert any("without a symptom" in line for line in decoy.live.evidence_against)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_fix_attempt_after_first_bad_that_did_not_help_clears_the_reverted_key(seed):
    world, result = _run("fix_attempt", seed)

    assert _top(world, result) == world.scenario.culprit
    cleared = result.suspects[-1]
    assert cleared.live is not None and cleared.live.verdict == "cleared"
    assert any("while it ran its good value" in line for line in cleared.live.evidence_against)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_revert_that_stopped_the_symptoms_and_a_restore_that_brought_them_back_convict(seed):
    world, result = _run("revert_and_restore", seed)

    assert _top(world, result) == world.scenario.culprit
    top = result.suspects[0].live
    assert top is not None and top.verdict == "convicted"
    assert any(line.startswith("reverted to") for line in top.evidence_for)
    assert any(line.startswith("restored to") for line in top.evidence_for)
    # The decoy stayed live through the clean interval after the revert: cleared.
    assert all(s.live and s.live.verdict == "cleared" for s in result.suspects[1:])


@pytest.mark.parametrize("seed", SEEDS)
def test_crash_only_symptoms_give_a_first_bad_and_the_crash_is_never_the_cause(seed):
    world, result = _run("crash_only", seed)

    assert _top(world, result) == world.scenario.culprit
    assert result.symptoms and result.symptoms[0].kind == world.scenario.symptom
    assert result.first_bad == world.crashes[0][0]
    assert any("a crash is a symptom, never a cause" in w for w in result.warnings)
    assert all(s.change.key for s in result.suspects)


@pytest.mark.parametrize("seed", SEEDS)
def test_logs_without_metrics_read_load_and_dropped_requests_from_the_log(seed):
    world, result = _run("logs_without_metrics", seed)

    assert _top(world, result) == world.scenario.culprit
    assert {s.kind for s in result.symptoms} == {SymptomKind.DROPPED_REQUEST}
    assert "no metrics were given: wedges were not checked" in result.warnings


@pytest.mark.parametrize("seed", SEEDS)
def test_metrics_without_logs_work_as_before_and_say_what_could_not_be_known(seed):
    world, result = _run("metrics_without_logs", seed)

    assert _top(world, result) == world.scenario.culprit
    assert result.restarts == () and result.suspects[0].live is None
    assert "no server logs were given: dropped requests were not checked" in result.warnings


@pytest.mark.parametrize("seed", SEEDS)
def test_no_harness_results(seed):
    world, result = _run("no_harness", seed)

    assert _top(world, result) == world.scenario.culprit
    assert "no harness results were given: model quality was not assessed" in result.warnings
    assert result.ruled_out == ()


@pytest.mark.parametrize("seed", SEEDS)
def test_a_dst_night_does_not_move_the_first_bad_moment(seed):
    world, result = _run("dst_night", seed)

    assert _top(world, result) == world.scenario.culprit
    deploy = world.scenario.plans[-1].at
    assert result.first_bad is not None
    assert abs(result.first_bad - (deploy + world.scenario.trigger)).total_seconds() < 300


@pytest.mark.parametrize("seed", SEEDS)
def test_many_changes_recorded_in_one_minute_leave_only_what_ran_differently(seed):
    world, result = _run("many_changes_one_minute", seed)

    assert _top(world, result) == world.scenario.culprit
    unrun = {keys.display(k) for _, k, _ in world.scenario.unrun}
    assert unrun.isdisjoint(s.change.key for s in result.suspects)
    assert len(result.suspects) == 2
