import datetime as dt
import re

from tests.correlation.builders import at, change, healthy_metrics
from timeline.correlation.suspects import rank_changes
from timeline.correlation.symptoms import load_from_metrics, prepare_metrics
from timeline.correlation.types import Params, Symptom

PARAMS = Params()
WEDGE = Symptom("wedge", at(15), at(16), "wedge for 1 h")


def _load(start=None, end=None):
    wedges = ((at(15), at(16)),)
    metrics = healthy_metrics(start or at(6), end or at(20), wedges)
    return load_from_metrics(prepare_metrics(metrics))


FIRST_BAD, LAST_GOOD, UNTIL = at(15), at(8), at(20)


def _rank(changes, symptoms=(WEDGE,), first_bad=FIRST_BAD, last_good=LAST_GOOD, load=None):
    return rank_changes(changes, list(symptoms), first_bad, last_good, load, PARAMS, UNTIL)


def _keys(ranking):
    return [s.change.key for s in ranking.suspects]


def test_a_scheduling_key_outranks_a_neutral_one_which_outranks_logging():
    ranking = _rank(
        [
            change("LOG_LEVEL", "info", "debug", at(13)),
            change("--mem-fraction-static", "0.85", "0.88", at(13)),
            change("--max-running-requests", "64", "128", at(13)),
        ]
    )

    assert _keys(ranking) == ["--max-running-requests", "--mem-fraction-static", "LOG_LEVEL"]
    assert "high relevance (+2)" in ranking.suspects[0].reasons[0]
    assert "low relevance" in ranking.suspects[2].reasons[0]


def test_a_new_key_outranks_a_tweak_of_an_existing_one():
    ranking = _rank(
        [
            change("SGLANG_FOO_B", "0", "1", at(13)),
            change("SGLANG_FOO_A", None, "1", at(13)),
        ]
    )

    assert _keys(ranking) == ["SGLANG_FOO_A", "SGLANG_FOO_B"]
    assert ranking.suspects[0].reasons[1].startswith("a new setting")


def test_a_change_closer_to_the_first_symptom_ranks_higher():
    ranking = _rank(
        [change("SGLANG_FOO_A", "0", "1", at(9)), change("SGLANG_FOO_B", "0", "1", at(14))]
    )

    assert _keys(ranking) == ["SGLANG_FOO_B", "SGLANG_FOO_A"]
    assert "1 h before the first bad moment" in ranking.suspects[0].reasons[2]
    assert "86% of the way" in ranking.suspects[0].reasons[2]


def test_symptom_free_load_since_a_change_lowers_its_score():
    c = change("SGLANG_FOO_A", "0", "1", at(10))
    busy = _rank([c], load=_load())
    idle = _rank([c], load=_load(start=at(15)))

    assert busy.suspects[0].score < idle.suspects[0].score
    assert busy.suspects[0].reasons[3].startswith("served 5 h of load without a symptom")
    assert idle.suspects[0].reasons[3].startswith("served 0 s of load")


def test_a_revert_after_which_the_symptom_recurred_strongly_lowers_the_change():
    chunked = change("--chunked-prefill-size", "8192", "16384", at(13, 40))
    overlap = change("--enable-overlap-schedule", "false", "true", at(13, 40))
    revert = change("--chunked-prefill-size", "16384", "8192", at(16, 30))
    recurred = Symptom("wedge", at(16, 55), at(18), "wedge for 1 h 5 min")

    ranking = _rank([chunked, overlap, revert], symptoms=(WEDGE, recurred))

    assert _keys(ranking) == ["--enable-overlap-schedule", "--chunked-prefill-size"]
    assert ranking.suspects[1].reasons[4] == (
        "reverted to '8192' at 2026-11-20 16:30 UTC and the wedge recurred at "
        "2026-11-20 16:55 UTC (-3)"
    )


def test_a_revert_that_stopped_the_symptoms_under_load_strongly_raises_the_change():
    a = change("SGLANG_FOO_A", "0", "1", at(13))
    b = change("SGLANG_FOO_B", "0", "1", at(13))
    revert = change("SGLANG_FOO_A", "1", "0", at(16, 10))

    ranking = _rank([a, b, revert], load=_load())

    assert _keys(ranking) == ["SGLANG_FOO_A", "SGLANG_FOO_B"]
    assert "no symptom followed in 3 h 50 min of load (+3)" in ranking.suspects[0].reasons[4]


def test_a_revert_with_too_little_load_after_it_proves_nothing():
    a = change("SGLANG_FOO_A", "0", "1", at(13))
    revert = change("SGLANG_FOO_A", "1", "0", at(19, 30))

    ranking = _rank([a, revert], load=_load())

    assert "too little to tell (+0)" in ranking.suspects[0].reasons[4]


def test_restoring_a_reverted_change_and_seeing_the_symptom_return_raises_it():
    a = change("SGLANG_FOO_A", "0", "1", at(13))
    b = change("SGLANG_FOO_B", "0", "1", at(13))
    revert = change("SGLANG_FOO_A", "1", "0", at(16, 10))
    restore = change("SGLANG_FOO_A", "0", "1", at(16, 40))
    returned = Symptom("wedge", at(17, 30), at(18), "wedge for 30 min")

    ranking = _rank([a, b, revert, restore], symptoms=(WEDGE, returned), load=_load())

    assert _keys(ranking) == ["SGLANG_FOO_A", "SGLANG_FOO_B"]
    assert (
        ranking.suspects[0]
        .reasons[4]
        .endswith(
            "restored to '1' at 2026-11-20 16:40 UTC and the wedge returned at "
            "2026-11-20 17:30 UTC (+1.5)"
        )
    )


def test_every_suspect_has_one_reason_per_factor_each_with_its_points():
    ranking = _rank(
        [change("SGLANG_FOO_A", None, "1", at(13)), change("LOG_LEVEL", "a", "b", at(14))],
        load=_load(),
    )

    for suspect in ranking.suspects:
        assert len(suspect.reasons) == 5
        points = [float(re.search(r"\(([+-][\d.]+)\)$", r).group(1)) for r in suspect.reasons]
        assert round(sum(points), 3) == suspect.score


def test_scores_are_rounded_to_three_decimals():
    ranking = _rank([change("SGLANG_FOO_A", "0", "1", at(13, 7))], load=_load())

    score = ranking.suspects[0].score
    assert score == round(score, 3)


def test_ties_put_the_later_change_first_then_order_by_key():
    # window 08:00-16:00: proximity 0.25 at 10:00 and 0.75 at 14:00; all neutral keys
    ranking = rank_changes(
        [
            change("SGLANG_FOO_NEW", None, "1", at(10)),  # 0.5 + 1.0 + 0.25
            change("SGLANG_FOO_GONE", "1", None, at(14)),  # 0.5 + 0.5 + 0.75
            change("SGLANG_FOO_BBB", None, "1", at(10)),
        ],
        [Symptom("wedge", at(16), None, "wedge")],
        at(16),
        at(8),
        None,
        PARAMS,
    )

    assert [s.score for s in ranking.suspects] == [1.75, 1.75, 1.75]
    assert _keys(ranking) == ["SGLANG_FOO_GONE", "SGLANG_FOO_BBB", "SGLANG_FOO_NEW"]


def test_changes_outside_the_window_are_excluded_each_with_a_reason():
    ranking = _rank(
        [
            change("LOG_LEVEL", "info", "debug", at(7)),
            change("--mem-fraction-static", "0.85", "0.88", at(8)),
            change("--chunked-prefill-size", "8192", "16384", at(13)),
            change("--chunked-prefill-size", "16384", "8192", at(16, 30)),
        ]
    )

    reasons = {(e.change.key, e.change.at): e.reason for e in ranking.excluded}
    assert _keys(ranking) == ["--chunked-prefill-size"]
    assert "before the last known good moment" in reasons[("LOG_LEVEL", at(7))]
    assert "when the last known good state began" in reasons[("--mem-fraction-static", at(8))]
    after = reasons[("--chunked-prefill-size", at(16, 30))]
    assert "after the first bad moment" in after
    assert "counts as revert evidence for the change at 2026-11-20 13:00 UTC" in after


def test_without_a_last_good_every_change_up_to_first_bad_is_a_suspect():
    ranking = _rank(
        [
            change("A", None, "1", at(6)),
            change("B", None, "1", at(15)),
            change("C", None, "1", at(17)),
        ],
        last_good=None,
    )

    assert sorted(_keys(ranking)) == ["A", "B"]
    assert [e.change.key for e in ranking.excluded] == ["C"]


def test_without_a_first_bad_moment_nothing_is_ranked():
    ranking = _rank([change("A", None, "1", at(9))], symptoms=(), first_bad=None)

    assert ranking.suspects == []
    assert ranking.excluded[0].reason == "no first bad moment is known, so no change can be ranked"


def test_for_harness_failures_model_settings_are_the_relevant_ones():
    failure = Symptom("harness_failure", at(15), None, "harness stability/agentic fail")

    ranking = _rank(
        [
            change("--tokenizer-path", "v1", "v2", at(13)),
            change("--max-running-requests", "64", "128", at(13)),
        ],
        symptoms=(failure,),
    )

    assert _keys(ranking) == ["--tokenizer-path", "--max-running-requests"]
    assert "relevant to harness failures" in ranking.suspects[0].reasons[0]


def test_exposure_reason_admits_when_there_is_no_load_data():
    ranking = _rank([change("A", "0", "1", at(13))], load=None)

    assert (
        ranking.suspects[0].reasons[3]
        == "no load data, so its symptom-free exposure is unknown (+0)"
    )


def test_suspects_keep_the_sources_of_their_change():
    c = change("K", None, "1", at(13), "doc:DSV4_DEPLOY.md@ab12", "commit:9f3e")

    assert _rank([c]).suspects[0].sources == ("doc:DSV4_DEPLOY.md@ab12", "commit:9f3e")


def test_the_stable_load_param_scales_the_exposure_penalty():
    c = change("SGLANG_FOO_A", "0", "1", at(14))
    short = rank_changes(
        [c], [WEDGE], at(15), at(8), _load(), Params(stable_load_min=dt.timedelta(hours=1))
    )
    long = rank_changes(
        [c], [WEDGE], at(15), at(8), _load(), Params(stable_load_min=dt.timedelta(hours=4))
    )

    assert short.suspects[0].score < long.suspects[0].score
