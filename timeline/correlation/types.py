"""Plain values the correlation engine takes and returns. No Django, no I/O.

Every datetime is aware UTC. ``ref`` fields carry the database id of the Event the value came
from (as an int), so the glue can link findings back; the engine treats them as opaque.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

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
    source: int = 0  # the log it was read from (its artifact's id; 0: not known)


@dataclass(frozen=True)
class LogSpan:
    """A server log covered [start, end]: the server was logging over that interval."""

    ref: int
    start: dt.datetime
    end: dt.datetime
    source: int = 0  # the log (its artifact's id; 0: not known)


@dataclass(frozen=True)
class Series:
    """One metric series, columnar: timestamps (UTC, ascending) and values."""

    name: str
    labels: tuple[tuple[str, str], ...]
    ts: Sequence[dt.datetime]  # a tuple, or Times (int64 ms, as the metrics store keeps them)
    values: Sequence[float]  # a tuple, or Floats
    origin: str = ""  # the server log its samples were read from (batch lines), else ""


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
    source: int = 0  # that log's artifact id (0: not known)
    shut_down: bool = False  # the log shows it going down (else it ends where its log ends)


@dataclass(frozen=True)
class LogSymptom:
    """A server error the log parser classified as a symptom (crash, watchdog timeout, OOM ...)."""

    ref: int
    at: dt.datetime
    kind: SymptomKind
    title: str
    source: int = 0  # the log it was read from (its artifact's id; 0: not known)


UNIX_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)


def to_us(t: dt.datetime) -> int:
    """Exact microseconds since the Unix epoch of an aware datetime."""
    return (t - UNIX_EPOCH) // _MICROSECOND


def from_us(us: int) -> dt.datetime:
    """The aware UTC datetime of exact microseconds since the Unix epoch."""
    return UNIX_EPOCH + dt.timedelta(microseconds=us)


def datetimes_of_us(us: NDArray[np.int64]) -> list[dt.datetime]:
    """Aware UTC datetimes of microsecond epochs, with no Python frame per element."""
    return list(map(UNIX_EPOCH.__add__, us.astype("timedelta64[us]").tolist()))


class _Table:
    """Rows of one kind as columns (numpy arrays and lists): a read-only sequence of the row
    type, built only for the rows actually looked at. A big incident holds a million requests;
    the engine reads their columns and never makes an object for each. Equal to any sequence
    holding the same rows in the same order (a tuple of the row type included)."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]

    def __len__(self) -> int:
        raise NotImplementedError

    def row(self, i: int) -> Any:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Any, ...]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return tuple(self.row(k) for k in range(*i.indices(len(self))))
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self.row(i)

    def __iter__(self) -> Iterator[Any]:
        return (self.row(i) for i in range(len(self)))

    def __bool__(self) -> bool:
        return len(self) > 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Table | tuple | list):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {len(self)}>"


class Times(_Table, Sequence[dt.datetime]):
    """Timestamps as an int64 array of milliseconds since the Unix epoch (a series read from
    the metrics store: millions of samples, no datetime made for each)."""

    __slots__ = ("ms",)

    def __init__(self, ms: NDArray[np.int64]) -> None:
        self.ms = ms

    def __len__(self) -> int:
        return len(self.ms)

    def row(self, i: int) -> dt.datetime:
        return UNIX_EPOCH + dt.timedelta(milliseconds=int(self.ms[i]))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Times):
            return other is self or bool(np.array_equal(self.ms, other.ms))
        return super().__eq__(other)


class Floats(_Table, Sequence[float]):
    """Values as a float64 array."""

    __slots__ = ("array",)

    def __init__(self, array: NDArray[np.float64]) -> None:
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def row(self, i: int) -> float:
        return float(self.array[i])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Floats):
            return bool(np.array_equal(self.array, other.array))
        return super().__eq__(other)


class Texts(_Table, Sequence[str]):
    """Strings kept as one UTF-8 buffer and each one's [start, end) in it: a million request
    ids with no str object until one is looked at. ``take`` reorders or picks without
    copying the buffer."""

    __slots__ = ("buffer", "starts", "ends")

    def __init__(self, buffer: bytes, starts: NDArray[np.int64], ends: NDArray[np.int64]) -> None:
        self.buffer = buffer
        self.starts = starts
        self.ends = ends

    @classmethod
    def split(cls, joined: str, separator: str, n: int) -> Texts | None:
        """The n strings ``separator.join`` made ``joined`` into (separator: one ASCII
        character), or None when there are more pieces than n (a string held it)."""
        buffer = joined.encode()
        if n == 0:
            return cls(buffer, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        cuts = np.flatnonzero(np.frombuffer(buffer, dtype=np.uint8) == ord(separator))
        if cuts.size != n - 1:
            return None
        starts = np.concatenate(([0], cuts + 1)).astype(np.int64)
        ends = np.concatenate((cuts, [len(buffer)])).astype(np.int64)
        return cls(buffer, starts, ends)

    def __len__(self) -> int:
        return len(self.starts)

    def row(self, i: int) -> str:
        return self.buffer[self.starts[i] : self.ends[i]].decode()

    def take(self, idx: NDArray[np.intp]) -> Texts:
        return Texts(self.buffer, self.starts[idx], self.ends[idx])

    def tolist(self) -> list[str]:
        buffer = self.buffer
        return [
            buffer[a:b].decode()
            for a, b in zip(self.starts.tolist(), self.ends.tolist(), strict=True)
        ]


def strings_at(strings: Sequence[str], idx: NDArray[np.intp]) -> list[str]:
    """``[strings[i] for i in idx]``, in bulk for :class:`Texts`."""
    if isinstance(strings, Texts):
        return strings.take(idx).tolist()
    return [strings[i] for i in idx.tolist()]


_NO_END = np.iinfo(np.int64).max  # finished_us of a request that never finished


class Requests(_Table, Sequence[Request]):
    """Requests as columns: ``ref``, ``received_us`` and ``finished_us`` (microseconds since the
    Unix epoch; :data:`NOT_FINISHED` for None) as int64 arrays, ``rid`` a list of str or
    :class:`Texts`, ``source`` the log each was read from (artifact ids, 0: not known)."""

    __slots__ = ("ref", "received_us", "finished_us", "rid", "source")
    NOT_FINISHED = int(_NO_END)

    def __init__(
        self,
        ref: NDArray[np.int64],
        received_us: NDArray[np.int64],
        finished_us: NDArray[np.int64],
        rid: Sequence[str],
        source: NDArray[np.int64] | None = None,
    ) -> None:
        if source is None:
            source = np.zeros(len(ref), dtype=np.int64)
        if not len(ref) == len(received_us) == len(finished_us) == len(rid) == len(source):
            raise ValueError("Requests: columns of different lengths")
        self.ref = ref
        self.received_us = received_us
        self.finished_us = finished_us
        self.rid = rid
        self.source = source

    @classmethod
    def of(cls, requests: Sequence[Request]) -> Requests:
        """The same requests as columns (itself when it already is)."""
        if isinstance(requests, Requests):
            return requests
        n = len(requests)
        return cls(
            np.fromiter((r.ref for r in requests), dtype=np.int64, count=n),
            np.fromiter((to_us(r.received_at) for r in requests), dtype=np.int64, count=n),
            np.fromiter(
                (_NO_END if r.finished_at is None else to_us(r.finished_at) for r in requests),
                dtype=np.int64,
                count=n,
            ),
            [r.rid for r in requests],
            np.fromiter((r.source for r in requests), dtype=np.int64, count=n),
        )

    def __len__(self) -> int:
        return len(self.ref)

    def take(self, idx: NDArray[np.intp]) -> Requests:
        """The requests at these positions, as columns."""
        rid = self.rid
        return Requests(
            self.ref[idx],
            self.received_us[idx],
            self.finished_us[idx],
            rid.take(idx) if isinstance(rid, Texts) else [rid[i] for i in idx],
            self.source[idx],
        )

    @property
    def finished(self) -> NDArray[np.bool_]:
        done: NDArray[np.bool_] = self.finished_us != _NO_END
        return done

    def row(self, i: int) -> Request:
        ends = int(self.finished_us[i])
        return Request(
            ref=int(self.ref[i]),
            rid=self.rid[i],
            received_at=from_us(int(self.received_us[i])),
            finished_at=None if ends == _NO_END else from_us(ends),
            source=int(self.source[i]),
        )


class HarnessRuns(_Table, Sequence[HarnessRun]):
    """Harness runs as columns: ``ref`` and ``at_us`` (microseconds since the Unix epoch) int64
    arrays, ``suite``, ``case`` and ``status`` lists of str, ``score`` a float64 array (NaN for
    None; a score is a number, ints and bools included, as HarnessRun's ``float | None``)."""

    __slots__ = ("ref", "at_us", "suite", "case", "status", "score")

    def __init__(
        self,
        ref: NDArray[np.int64],
        at_us: NDArray[np.int64],
        suite: Sequence[str],
        case: Sequence[str],
        status: Sequence[str],
        score: NDArray[np.float64],
    ) -> None:
        if not len(ref) == len(at_us) == len(suite) == len(case) == len(status) == len(score):
            raise ValueError("HarnessRuns: columns of different lengths")
        self.ref = ref
        self.at_us = at_us
        self.suite = suite
        self.case = case
        self.status = status
        self.score = score

    @classmethod
    def of(cls, runs: Sequence[HarnessRun]) -> HarnessRuns:
        """The same runs as columns (itself when it already is)."""
        if isinstance(runs, HarnessRuns):
            return runs
        n = len(runs)
        return cls(
            np.fromiter((r.ref for r in runs), dtype=np.int64, count=n),
            np.fromiter((to_us(r.at) for r in runs), dtype=np.int64, count=n),
            [r.suite for r in runs],
            [r.case for r in runs],
            [r.status for r in runs],
            np.fromiter(
                (np.nan if r.score is None else r.score for r in runs), dtype=np.float64, count=n
            ),
        )

    def __len__(self) -> int:
        return len(self.ref)

    def row(self, i: int) -> HarnessRun:
        score = float(self.score[i])
        return HarnessRun(
            ref=int(self.ref[i]),
            at=from_us(int(self.at_us[i])),
            suite=self.suite[i],
            case=self.case[i],
            status=self.status[i],
            score=None if score != score else score,
        )


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
    requests: Sequence[Request] = ()  # a tuple, or Requests (columns) for big incidents
    log_spans: tuple[LogSpan, ...] = ()
    series: tuple[Series, ...] = ()
    harness: Sequence[HarnessRun] = ()  # a tuple, or HarnessRuns (columns)
    starts: tuple[ServerStart, ...] = ()
    errors: tuple[LogSymptom, ...] = ()
    marks: Marks = Marks()
    params: Params = Params()
    # What the glue could not load (a remote series whose server failed), said first.
    warnings: tuple[str, ...] = ()
    # Config changes the incident's git log patches show but could not be read: a value that
    # ran with no record may have been recorded in one of them.
    unread_changes: int = 0
    # Finish lines whose Receive is in another file (a rotated log): (log source, rid, time).
    finishes: tuple[tuple[int, str, dt.datetime], ...] = ()


@dataclass(frozen=True)
class Symptom:
    kind: SymptomKind
    at: dt.datetime
    ends_at: dt.datetime | None
    title: str
    refs: tuple[int, ...] = ()
    origin: str = ""  # the server log whose series showed it (a wedge in its batch lines)

    @classmethod
    def fast(
        cls,
        kind: SymptomKind,
        at: dt.datetime,
        ends_at: dt.datetime | None,
        title: str,
        refs: tuple[int, ...],
    ) -> Symptom:
        """``Symptom(kind, at, ends_at, title, refs)``, made for the ten thousands of a big
        incident: the fields set in the instance dict, where the frozen dataclass' __init__
        takes five ``object.__setattr__`` calls (half the time; there is nothing else in it)."""
        symptom = object.__new__(cls)
        symptom.__dict__.update(
            kind=kind, at=at, ends_at=ends_at, title=title, refs=refs, origin=""
        )
        return symptom


@dataclass(frozen=True)
class LiveFacts:
    """What the server logs show about a suspect: when its value went live and what ran before
    and after, and the evidence for and against it, in words."""

    key: str  # the canonical key (ServerArgs field or env var)
    before: str | None  # the value at last known good
    after: str | None  # the value live at the first bad moment
    live_at: dt.datetime | None  # the restart that put ``after`` live (None: live throughout)
    live_where: str  # "server.log:812": the start it went live at (its ServerArgs line)
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
