"""The weights and thresholds the correlation decides with, under one version number.

Every number that adds to a suspect's score, every threshold of the symptom and window logic
(``Params`` and the few constants beside it) and the word lists that decide a key's relevance,
as one JSON-ready dict. Each stored analysis keeps that dict and :data:`WEIGHTS_VERSION`, so a
result can still be explained after the weights change.

Bump :data:`WEIGHTS_VERSION` whenever anything in :func:`weights` changes, and record the new
hash in ``tests/correlation/test_weights.py``: that test fails until both are done.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from typing import Any

from timeline.correlation import engine, relevance, suspects, symptoms, verdicts
from timeline.correlation.types import Params

WEIGHTS_VERSION = 2


def params_json(params: Params) -> dict[str, float]:
    """The thresholds by name; durations in seconds."""
    out: dict[str, float] = {}
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        out[f.name] = value.total_seconds() if isinstance(value, dt.timedelta) else value
    return out


def weights(params: Params | None = None) -> dict[str, Any]:
    """Everything that decides a score or a verdict, read from the modules that use it.

    ``params`` are the thresholds a run used; :data:`WEIGHTS_VERSION` names the defaults.
    """
    return {
        "suspect_points": {
            "relevance": dict(sorted(suspects.RELEVANCE_POINTS.items())),
            "new_key": suspects.NEW_KEY_POINTS,
            "removed_key": suspects.REMOVED_KEY_POINTS,
            "proximity": suspects.PROXIMITY_POINTS,
            "exposure": suspects.EXPOSURE_POINTS,
            "exposure_cap": suspects.EXPOSURE_CAP,
            "revert_continued": suspects.REVERT_CONTINUED_POINTS,
            "revert_stopped": suspects.REVERT_STOPPED_POINTS,
            "restore_returned": suspects.RESTORE_RETURNED_POINTS,
        },
        "live_points": {
            "cleared": verdicts.CLEARED_POINTS,
            "without": verdicts.WITHOUT_POINTS,
            "reverted": verdicts.REVERTED_POINTS,
            "restored": verdicts.RESTORED_POINTS,
            "prior": dict(sorted(verdicts.PRIOR_POINTS.items())),
            "separation": verdicts.SEPARATION,
        },
        "relevance_words": relevance.word_lists(),
        "thresholds": {
            **params_json(params or Params()),
            "metric_lookback": symptoms.LOOKBACK.total_seconds(),
            "ruled_out_min_passed_runs": engine.MIN_PASSED_RUNS,
        },
    }


def weights_digest(values: dict[str, Any]) -> str:
    """sha256 of the weights as canonical JSON: equal digests, equal weights."""
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()
