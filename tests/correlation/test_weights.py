"""The correlation weights are versioned: any change to a weight, threshold or relevance word
changes their hash, and the hash of the current version is the one recorded for it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import pytest

from tests.correlation.story import story_inputs
from timeline.correlation import engine, relevance, suspects, symptoms, verdicts
from timeline.correlation.engine import analyze
from timeline.correlation.types import Params
from timeline.correlation.weights import WEIGHTS_VERSION, weights, weights_digest

# sha256 of weights() for every WEIGHTS_VERSION ever released. Never edit or remove a line: an
# analysis stored with that version is explained by those weights. When a weight changes, bump
# WEIGHTS_VERSION and add a line with the new hash.
RELEASED = {
    1: "8de0adf6339fabaec7df0aca18e175c269d3a48981eedf8f0369f174808aec42",
    2: "f8b643bdf34ee99e1a9d39902ee220e58530a8ad3007ad7ee0169e2ad6f0a7f5",
}


def test_the_weights_hash_to_the_value_recorded_for_their_version():
    digest = weights_digest(weights())

    assert digest == RELEASED.get(WEIGHTS_VERSION), (
        f"the correlation weights changed (sha256 {digest}): bump WEIGHTS_VERSION in "
        "timeline/correlation/weights.py and record the new hash in RELEASED"
    )


def test_the_version_is_the_newest_released_and_every_version_has_its_own_weights():
    assert max(RELEASED) == WEIGHTS_VERSION
    assert len(set(RELEASED.values())) == len(RELEASED)


def test_the_weights_are_plain_json():
    values = weights()

    assert json.loads(json.dumps(values)) == values


def _bumped(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _bumped(v) for k, v in value.items()}
    if isinstance(value, dt.timedelta):
        return value + dt.timedelta(seconds=1)
    return value + 1


# Every public constant of the scoring module: a new one that weights() leaves out fails here.
SCORE_CONSTANTS = sorted(
    name
    for name, value in vars(suspects).items()
    if name.isupper() and not name.startswith("_") and isinstance(value, int | float | dict)
)


@pytest.mark.parametrize("name", SCORE_CONSTANTS)
def test_changing_any_score_constant_changes_the_hash(monkeypatch, name):
    before = weights_digest(weights())

    monkeypatch.setattr(suspects, name, _bumped(getattr(suspects, name)))

    assert weights_digest(weights()) != before


@pytest.mark.parametrize(
    ("module", "name"),
    [(symptoms, "LOOKBACK"), (engine, "MIN_PASSED_RUNS")],
    ids=["LOOKBACK", "MIN_PASSED_RUNS"],
)
def test_changing_a_threshold_beside_params_changes_the_hash(monkeypatch, module, name):
    before = weights_digest(weights())

    monkeypatch.setattr(module, name, _bumped(getattr(module, name)))

    assert weights_digest(weights()) != before


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(Params)])
def test_changing_any_default_threshold_changes_the_hash(field):
    params = dataclasses.replace(Params(), **{field: _bumped(getattr(Params(), field))})

    assert weights_digest(weights(params)) != weights_digest(weights())


def test_adding_a_relevance_word_changes_the_hash(monkeypatch):
    before = weights_digest(weights())
    vocabulary = dict(relevance._VOCABULARY)
    high, low = vocabulary["wedge"]
    vocabulary["wedge"] = (high | {"hugepages"}, low)

    monkeypatch.setattr(relevance, "_VOCABULARY", vocabulary)

    assert weights_digest(weights()) != before


def test_the_recorded_weights_are_the_ones_the_score_is_made_of(monkeypatch):
    """The CTAS change is a new key: its score moves with the new-key points in the weights."""
    before = analyze(story_inputs()).suspects[0]

    monkeypatch.setattr(suspects, "NEW_KEY_POINTS", suspects.NEW_KEY_POINTS + 2.0)

    after = analyze(story_inputs()).suspects[0]
    assert after.change.key == before.change.key
    assert after.score == pytest.approx(before.score + 2.0)
    assert weights()["suspect_points"]["new_key"] == suspects.NEW_KEY_POINTS


LIVE_CONSTANTS = sorted(
    name
    for name, value in vars(verdicts).items()
    if name.isupper() and not name.startswith("_") and isinstance(value, int | float | dict)
)


@pytest.mark.parametrize("name", LIVE_CONSTANTS)
def test_changing_any_live_evidence_constant_changes_the_hash(monkeypatch, name):
    before = weights_digest(weights())

    monkeypatch.setattr(verdicts, name, _bumped(getattr(verdicts, name)))

    assert weights_digest(weights()) != before
