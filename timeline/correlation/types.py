"""Plain values the correlation engine takes and returns. No Django, no I/O.

Every datetime is aware UTC. ``ref`` fields carry the database id of the Event the value came
from (as an int), so the glue can link findings back; the engine treats them as opaque.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from evidence.vocabulary import SymptomKind


@dataclass(frozen=True)
class Change:
    """A config change: ``old`` None = key introduced, ``new`` None = key removed."""

    ref: int
    key: str
    old: str | None
    new: str | None
    at: dt.datetime
    scope: str  # env, flag, file, table
    sources: tuple[str, ...]  # e.g. ("doc:DSV4_DEPLOY.md@ab12", "commit:9f3e...")


@dataclass(frozen=True)
class Request:
    """One request seen in a server log: received, and finished (None if never)."""

    ref: int
    rid: str
    received_at: dt.datetime
    finished_at: dt.datetime | None


@dataclass(frozen=True)
class LogSpan:
    """A server log covered [start, end]: the server was logging over that interval."""

    ref: int
    start: dt.datetime
    end: dt.datetime


@dataclass(frozen=True)
class Series:
    """One metric series, columnar: timestamps (UTC, ascending) and values."""

    name: str
    labels: tuple[tuple[str, str], ...]
    ts: tuple[dt.datetime, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class HarnessRun:
    ref: int
    at: dt.datetime
    suite: str
    case: str
    status: str  # pass, fail, error, skipped
    score: float | None = None


@dataclass(frozen=True)
class Marks:
    """Operator overrides; None means 'work it out'."""

    last_good: dt.datetime | None = None
    first_bad: dt.datetime | None = None


@dataclass(frozen=True)
class Params:
    """Every threshold the engine uses, by name, so an analysis records what it ran with."""

    request_timeout: dt.timedelta = dt.timedelta(minutes=10)
    wedge_min_duration: dt.timedelta = dt.timedelta(minutes=2)
    wedge_throughput_max: float = 1.0  # tokens/s at or below which generation counts as stopped
    wedge_gpu_util_max: float = 5.0  # percent
    stable_load_min: dt.timedelta = dt.timedelta(hours=2)
    same_change_window: dt.timedelta = dt.timedelta(minutes=30)  # doc + commit = one change
    together_window: dt.timedelta = dt.timedelta(minutes=2)  # changes shipped as one deploy


@dataclass(frozen=True)
class Inputs:
    changes: tuple[Change, ...] = ()
    requests: tuple[Request, ...] = ()
    log_spans: tuple[LogSpan, ...] = ()
    series: tuple[Series, ...] = ()
    harness: tuple[HarnessRun, ...] = ()
    marks: Marks = Marks()
    params: Params = Params()


@dataclass(frozen=True)
class Symptom:
    kind: SymptomKind
    at: dt.datetime
    ends_at: dt.datetime | None
    title: str
    refs: tuple[int, ...] = ()


@dataclass(frozen=True)
class Suspect:
    change: Change
    score: float
    reasons: tuple[str, ...]
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Excluded:
    change: Change
    reason: str


@dataclass(frozen=True)
class RuledOut:
    hypothesis: str
    evidence: tuple[str, ...]
    refs: tuple[int, ...] = ()


@dataclass(frozen=True)
class Result:
    first_bad: dt.datetime | None
    first_bad_reason: str
    last_good: dt.datetime | None
    last_good_reason: str
    symptoms: tuple[Symptom, ...] = ()
    suspects: tuple[Suspect, ...] = ()
    excluded: tuple[Excluded, ...] = ()
    ruled_out: tuple[RuledOut, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)  # honest caveats: no metrics, skew ...
