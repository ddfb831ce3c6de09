"""Plain values the correlation engine takes and returns. No Django, no I/O.

Every datetime is aware UTC. ``ref`` fields carry the database id of the Event the value came
from (as an int), so the glue can link findings back; the engine treats them as opaque.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
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
class ServerStart:
    """One server start as its log shows it: ``server_args`` maps each ServerArgs field to its
    value as logged (empty when the log had no ServerArgs line); ``env`` the environment the log
    printed, if any. ``ends_at`` is the shutdown or the next start (None: still running)."""

    ref: int
    at: dt.datetime
    line: int
    server_args: Mapping[str, str]
    env: Mapping[str, str] = field(default_factory=dict)
    ready_at: dt.datetime | None = None
    ends_at: dt.datetime | None = None
    where: str = ""  # the log file, for reasons: "server.log"


@dataclass(frozen=True)
class LogSymptom:
    """A server error the log parser classified as a symptom (crash, watchdog timeout, OOM ...)."""

    ref: int
    at: dt.datetime
    kind: SymptomKind
    title: str


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
    starts: tuple[ServerStart, ...] = ()
    errors: tuple[LogSymptom, ...] = ()
    marks: Marks = Marks()
    params: Params = Params()
    # What the glue could not load (a remote series whose server failed), said first.
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Symptom:
    kind: SymptomKind
    at: dt.datetime
    ends_at: dt.datetime | None
    title: str
    refs: tuple[int, ...] = ()


@dataclass(frozen=True)
class LiveFacts:
    """What the server logs show about a suspect: when its value went live and what ran before
    and after, and the evidence for and against it, in words."""

    key: str  # the canonical key (ServerArgs field or env var)
    before: str | None  # the value at last known good
    after: str | None  # the value live at the first bad moment
    live_at: dt.datetime | None  # the restart that put ``after`` live (None: live throughout)
    live_where: str  # "server.log:812" (the ServerArgs line), or "" when assumed
    assumed: bool  # the value was not logged: read from the recorded changes
    verdict: str  # "convicted", "open" or "cleared"
    evidence_for: tuple[str, ...] = ()
    evidence_against: tuple[str, ...] = ()
    recorded_at: dt.datetime | None = None  # when a doc/commit recorded it (None: drift)
    points: float = 0.0  # the score without the name prior: what the evidence alone says


@dataclass(frozen=True)
class Suspect:
    change: Change
    score: float
    reasons: tuple[str, ...]
    sources: tuple[str, ...] = ()
    live: LiveFacts | None = None


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
    # From the server starts (empty when no start was logged):
    bisect: tuple[str, ...] = ()  # the order to revert the suspects the evidence cannot separate
    drift: tuple[str, ...] = ()  # doc-vs-live: "the doc said X, the server ran Y from 14:05"
    restarts: tuple[str, ...] = ()  # one line per live interval: when, what changed, load, symptoms
