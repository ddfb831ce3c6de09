import datetime as dt

from tests.correlation.builders import at, change, healthy_metrics
from timeline.correlation.config_state import state_intervals
from timeline.correlation.symptoms import load_from_metrics, prepare_metrics
from timeline.correlation.types import Marks, Params, Symptom
from timeline.correlation.windows import find_first_bad, find_last_good

PARAMS = Params()
DROP = Symptom("dropped_request", at(15, 39, 58), None, "request 9f2c never finished", (7,))
WEDGE = Symptom("wedge", at(15, 40), at(16, 9), "wedge for 29 min")


def _load():
    return load_from_metrics(prepare_metrics(healthy_metrics(at(8), at(18))))


def test_first_bad_is_the_earliest_symptom_with_its_words():
    moment = find_first_bad([WEDGE, DROP], Marks())

    assert moment.at == at(15, 39, 58)
    assert "request 9f2c never finished" in moment.reason


def test_an_operator_first_bad_mark_overrides_the_symptoms():
    moment = find_first_bad([DROP], Marks(first_bad=at(15)))

    assert moment.at == at(15)
    assert "operator mark" in moment.reason


def test_no_symptom_means_first_bad_is_unknown():
    moment = find_first_bad([], Marks())

    assert moment.at is None
    assert "no symptom" in moment.reason


def test_last_good_is_the_start_of_the_latest_state_that_carried_load_without_a_symptom():
    changes = [
        change("A", None, "1", at(7, 30)),
        change("LOG_LEVEL", "info", "debug", at(8, 40)),
        change("--mem-fraction-static", "0.85", "0.88", at(9, 30)),
        change("--tokenizer-path", "v1", "v2", at(13, 5)),
        change("CTAS", None, "512", at(13, 10)),
    ]
    intervals = state_intervals(changes, until=at(18))

    moment = find_last_good(intervals, [DROP, WEDGE], _load(), at(15, 39, 58), Marks(), PARAMS)

    assert moment.at == at(9, 30)
    assert moment.reason.startswith(
        "the configuration in force from 2026-11-20 09:30 UTC carried load for 3 h 35 min "
        "without a symptom"
    )


def test_a_state_with_too_little_load_is_passed_over_for_an_earlier_one():
    changes = [
        change("A", None, "1", at(8)),
        change("B", None, "2", at(11)),
        change("C", None, "3", at(12)),
    ]
    intervals = state_intervals(changes, until=at(18))

    # 11:00-12:00 carried only an hour; 08:00-11:00 carried three
    moment = find_last_good(intervals, [DROP], _load(), at(15, 39, 58), Marks(), PARAMS)

    assert moment.at == at(8)


def test_a_state_holding_a_symptom_is_not_last_good():
    early = Symptom("harness_failure", at(10), None, "harness stability/agentic fail", (3,))
    changes = [change("A", None, "1", at(8)), change("B", None, "2", at(12))]
    intervals = state_intervals(changes, until=at(18))

    moment = find_last_good(
        intervals, [early, DROP], _load(), at(10), Marks(first_bad=at(15)), PARAMS
    )

    assert moment.at is None


def test_the_state_in_force_at_first_bad_is_never_last_good():
    intervals = state_intervals([change("A", None, "1", at(8))], until=at(18))

    moment = find_last_good(intervals, [DROP], _load(), at(15, 39, 58), Marks(), PARAMS)

    assert moment.at is None
    assert "no configuration state ended before the first bad moment" in moment.reason


def test_when_nothing_qualifies_the_reason_names_the_best_there_was():
    changes = [
        change("A", None, "1", at(8)),
        change("B", None, "2", at(9, 10)),
        change("C", None, "3", at(10)),
        change("D", None, "4", at(11, 30)),
    ]
    intervals = state_intervals(changes, until=at(18))

    moment = find_last_good(intervals, [DROP], _load(), at(15, 39, 58), Marks(), PARAMS)

    assert moment.at is None
    assert "carried load for 2 h without a symptom; the most was 1 h 30 min" in moment.reason
    assert "from 2026-11-20 10:00 UTC" in moment.reason


def test_an_operator_last_good_mark_overrides_the_detection():
    intervals = state_intervals(
        [change("A", None, "1", at(8)), change("B", None, "2", at(12))], at(18)
    )

    moment = find_last_good(
        intervals, [DROP], _load(), at(15, 39, 58), Marks(last_good=at(12, 30)), PARAMS
    )

    assert moment.at == at(12, 30)
    assert "operator mark" in moment.reason


def test_without_load_data_no_state_is_called_good():
    intervals = state_intervals(
        [change("A", None, "1", at(8)), change("B", None, "2", at(12))], at(18)
    )

    moment = find_last_good(intervals, [DROP], None, at(15, 39, 58), Marks(), PARAMS)

    assert moment.at is None
    assert "no load data" in moment.reason


def test_the_stable_load_minimum_comes_from_the_params():
    changes = [
        change("A", None, "1", at(8)),
        change("B", None, "2", at(9)),
        change("C", None, "3", at(10)),
    ]
    intervals = state_intervals(changes, until=at(18))
    short = Params(stable_load_min=dt.timedelta(minutes=45))

    assert find_last_good(intervals, [DROP], _load(), at(15), Marks(), short).at == at(9)
    assert find_last_good(intervals, [DROP], _load(), at(15), Marks(), PARAMS).at is None
