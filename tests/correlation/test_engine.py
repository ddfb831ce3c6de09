import dataclasses
import datetime as dt
import json

import pytest

from tests.correlation.builders import at, change, healthy_metrics, request, run, span
from tests.correlation.story import local, story_inputs
from timeline.correlation.engine import analyze, result_to_json
from timeline.correlation.types import Change, Inputs, LogSpan, Marks, Request

CTAS = "SGLANG_SM120_MMA_TARGET_CTAS"


# --- the DSV4 story -----------------------------------------------------------------------------


def test_the_dsv4_story_finds_the_new_cta_setting_as_top_suspect():
    result = analyze(story_inputs())
    data = result_to_json(result, "dsv4-wedge")

    assert data["first_bad"] == "2026-11-20T23:39:58+00:00"
    assert data["last_good"] == local(9, 30).isoformat()
    top = data["suspects"][0]
    assert (top["key"], top["old"], top["new"]) == (CTAS, None, "512")
    assert top["at"] == local(13, 10).isoformat()
    assert [s.split(":")[0] for s in top["sources"]] == ["doc", "commit"]
    assert len(top["reasons"]) == 5
    # The story's logs hold no server start: the one thing the engine says it could not know.
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("no server start was logged")


def test_the_dsv4_story_last_good_reason_is_the_0930_state_and_its_load():
    result = analyze(story_inputs())

    assert result.last_good_reason.startswith(
        "the configuration in force from 2026-11-20 17:30 UTC carried load for 3 h 35 min "
        "without a symptom"
    )
    assert "request 9f2c-dropped-1 never finished" in result.first_bad_reason


def test_the_dsv4_story_excludes_the_decoys_and_uses_the_useless_revert_against_chunked_prefill():
    result = analyze(story_inputs())
    excluded = {(e.change.key, e.change.at): e.reason for e in result.excluded}
    suspects = {s.change.key: s for s in result.suspects}

    assert "before the last known good moment" in excluded[("LOG_LEVEL", local(8, 40))]
    assert "last known good state began" in excluded[("--mem-fraction-static", local(9, 30))]
    assert "after the first bad moment" in excluded[("--chunked-prefill-size", local(16, 30))]
    assert set(suspects) == {CTAS, "--tokenizer-path", "METRICS_PORT", "--chunked-prefill-size"}
    chunked = suspects["--chunked-prefill-size"]
    assert "the wedge recurred at" in chunked.reasons[4]
    assert chunked.score < suspects[CTAS].score


def test_the_dsv4_story_rules_out_model_quality_from_the_green_harness():
    result = analyze(story_inputs())

    [ruled_out] = result.ruled_out
    assert ruled_out.hypothesis == "model quality"
    assert ruled_out.evidence[0].startswith("17 harness runs from")
    assert "suites: stability" in ruled_out.evidence[0]
    assert "scores ranged from 0.93 to 0.93" in ruled_out.evidence
    assert len(ruled_out.refs) == 17


def test_the_dsv4_story_finds_both_wedges_and_the_dropped_requests():
    result = analyze(story_inputs())

    wedges = [s for s in result.symptoms if s.kind == "wedge"]
    dropped = [s for s in result.symptoms if s.kind == "dropped_request"]
    assert [w.at for w in wedges] == [local(15, 40), local(16, 55)]
    assert [d.at for d in dropped][:2] == [local(15, 39, 58), local(15, 40, 3)]
    assert result.symptoms == tuple(sorted(result.symptoms, key=lambda s: s.at))


def test_operator_marks_override_both_moments():
    result = analyze(story_inputs(Marks(last_good=local(13, 20), first_bad=local(15, 0))))

    assert result.first_bad == local(15, 0)
    assert result.last_good == local(13, 20)
    assert [s.change.key for s in result.suspects] == ["--chunked-prefill-size", "METRICS_PORT"]


# --- result_to_json -----------------------------------------------------------------------------


def test_result_to_json_has_exactly_the_documented_shape_and_is_serialisable():
    data = result_to_json(analyze(story_inputs()), "dsv4-wedge")

    assert set(data) == {
        "incident",
        "first_bad",
        "first_bad_reason",
        "last_good",
        "last_good_reason",
        "warnings",
        "suspects",
        "excluded",
        "ruled_out",
        "bisect",
        "drift",
        "restarts",
    }
    # Without server starts there is no live story: the lists are empty, suspects carry no "live".
    assert data["bisect"] == data["drift"] == data["restarts"] == []
    assert set(data["suspects"][0]) == {"key", "old", "new", "at", "score", "sources", "reasons"}
    assert set(data["excluded"][0]) == {"key", "old", "new", "at", "reason"}
    assert set(data["ruled_out"][0]) == {"hypothesis", "evidence"}
    scores = [s["score"] for s in data["suspects"]]
    assert scores == sorted(scores, reverse=True)
    assert json.loads(json.dumps(data)) == data


def test_result_to_json_writes_null_for_unknown_moments():
    data = result_to_json(analyze(Inputs()), "empty")

    assert data["first_bad"] is None and data["last_good"] is None
    assert data["suspects"] == [] and data["ruled_out"] == []


# --- graceful degradation -----------------------------------------------------------------------


def _warnings(inputs: Inputs) -> str:
    return "\n".join(analyze(inputs).warnings)


def test_without_metrics_it_says_wedges_were_not_checked():
    inputs = dataclasses.replace(story_inputs(), series=())

    result = analyze(inputs)

    assert "no metrics were given: wedges were not checked" in result.warnings
    # the dropped requests still find the first bad moment, and logs still show the load
    assert result.first_bad == local(15, 39, 58)
    assert result.last_good == local(9, 30)
    assert "load read from server log requests" in result.last_good_reason


def test_without_server_logs_it_says_dropped_requests_were_not_checked():
    inputs = dataclasses.replace(story_inputs(), requests=(), log_spans=())

    result = analyze(inputs)

    assert "no server logs were given: dropped requests were not checked" in result.warnings
    assert result.first_bad == local(15, 40)  # the wedge


def test_without_harness_results_model_quality_is_not_assessed():
    result = analyze(dataclasses.replace(story_inputs(), harness=()))

    assert "no harness results were given: model quality was not assessed" in result.warnings
    assert result.ruled_out == ()


def test_without_changes_it_says_there_is_nothing_to_rank():
    result = analyze(dataclasses.replace(story_inputs(), changes=()))

    assert "no configuration changes were given: there is nothing to rank" in result.warnings
    assert result.suspects == () and result.last_good is None
    assert result.first_bad == local(15, 39, 58)


def test_without_symptoms_first_bad_is_unknown_and_nothing_is_a_suspect():
    inputs = Inputs(
        changes=(change("A", None, "1", at(8)), change("B", None, "1", at(12))),
        series=healthy_metrics(at(8), at(16)),
        requests=(request("ok", at(9), at(9, 1)),),
        log_spans=(span(at(8), at(16)),),
        harness=(run(at(9)), run(at(10))),
    )

    result = analyze(inputs)

    assert result.first_bad is None
    assert result.suspects == ()
    assert len(result.excluded) == 2
    assert any("no symptom was found" in w and "no change is ranked" in w for w in result.warnings)


def test_the_same_change_recorded_far_apart_by_two_sources_is_reported_as_clock_skew():
    inputs = dataclasses.replace(
        story_inputs(),
        changes=story_inputs().changes
        + (Change(1, CTAS, None, "512", local(14, 25), "env", ("commit:late",)),),
    )

    text = _warnings(inputs)

    assert f"{CTAS} -> '512' is recorded by doc+commit at 2026-11-20 21:10 UTC" in text
    assert "the sources disagree by 75 minutes" in text


def test_a_wedge_before_the_first_log_line_is_reported_as_clock_skew():
    inputs = Inputs(
        changes=(change("A", None, "1", at(6)),),
        series=healthy_metrics(at(8), at(12), wedges=((at(8, 30), at(9)),)),
        log_spans=(LogSpan(1, at(10), at(12)),),
        requests=(Request(2, "r", at(10, 5), at(10, 6)),),
    )

    text = _warnings(inputs)

    assert "the wedge at 2026-11-20 08:30 UTC is before the first server log line" in text


def test_requests_whose_fate_the_log_cannot_show_are_reported_not_counted():
    inputs = Inputs(
        requests=(request("tail", at(11, 55), None),),
        log_spans=(span(at(8), at(12)),),
    )

    result = analyze(inputs)

    assert result.symptoms == ()
    assert any("1 request(s) never finished" in w and "tail" in w for w in result.warnings)


def test_without_a_qualifying_last_good_it_warns_and_ranks_every_earlier_change():
    inputs = dataclasses.replace(story_inputs(), marks=Marks())
    inputs = dataclasses.replace(
        inputs, params=dataclasses.replace(inputs.params, stable_load_min=dt.timedelta(hours=9))
    )

    result = analyze(inputs)

    assert result.last_good is None
    assert any("every change up to the first bad moment is a suspect" in w for w in result.warnings)
    assert result.suspects[0].change.key == CTAS
    assert [e.change.at for e in result.excluded] == [local(16, 30)]


def test_one_green_run_is_too_few_to_rule_out_model_quality():
    inputs = Inputs(
        series=healthy_metrics(at(8), at(12), wedges=((at(10), at(10, 30)),)),
        harness=(run(at(10, 10)),),
    )

    result = analyze(inputs)

    assert result.ruled_out == ()
    assert any("too few to rule out model quality" in w for w in result.warnings)


def test_a_failing_run_in_the_window_keeps_model_quality_open():
    inputs = Inputs(
        series=healthy_metrics(at(8), at(12), wedges=((at(10), at(10, 30)),)),
        harness=(run(at(9)), run(at(10, 10)), run(at(10, 20), "fail", 0.2)),
    )

    result = analyze(inputs)

    assert result.ruled_out == ()
    assert sorted(s.kind for s in result.symptoms) == ["harness_failure", "wedge"]


def test_every_time_the_engine_returns_is_aware_utc():
    result = analyze(story_inputs())

    times = [result.first_bad, result.last_good]
    times += [s.at for s in result.symptoms] + [s.change.at for s in result.suspects]
    assert all(t is not None and t.utcoffset() == dt.timedelta(0) for t in times)


def test_a_naive_time_is_refused_rather_than_read_as_local_time():
    naive = Change(1, "K", None, "1", dt.datetime(2026, 11, 20, 13, 10), "env", ("commit:x",))

    with pytest.raises(ValueError, match=r"change K \(ref 1\): expected an aware UTC datetime"):
        analyze(Inputs(changes=(naive,)))


def test_changes_shipped_together_with_the_top_suspect_are_named_as_inseparable():
    inputs = dataclasses.replace(
        story_inputs(),
        changes=story_inputs().changes
        + (Change(1, "SGLANG_CUDA_GRAPH_MAX_BS", None, "64", local(13, 11), "env", ("commit:x",)),),
    )

    result = analyze(inputs)
    text = " ".join(result.warnings)

    assert result.suspects[0].change.key in (CTAS, "SGLANG_CUDA_GRAPH_MAX_BS")
    assert "arrived together with" in text
    assert "revert them one at a time" in text


def test_the_story_alone_has_no_together_warning():
    assert not any("arrived together" in w for w in analyze(story_inputs()).warnings)
