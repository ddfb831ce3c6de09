"""The evidence vocabulary: every kind of event, lane, status and symptom, in one place.

Pure (no Django, no I/O): the parsers, loaders, correlation engine, charts, models and templates
all import these names instead of spelling strings. The members are ``StrEnum``s, so they compare
equal to, and serialise as, their plain string values (what the database and JSON hold).

Adding a new evidence type
--------------------------
1. Add its member to :class:`EventKind` (and a :class:`Lane` with its :data:`LANES` entry if it
   needs a lane of its own), plus a ``TypedDict`` of the attributes it carries, registered in
   :data:`ATTRS_BY_KIND`.
2. Write its pure parser under ``ingest/parsers/`` returning ``EventRecord``s of that kind.
3. Teach ``ingest.sniff`` to recognise its files, and ``timeline.charts`` how to draw it if the
   lane's default marker is not enough.

Nothing else lists kinds or lanes: ``timeline.choices`` builds the Django choices from these
enums, and the chart's lanes, colours and labels come from :data:`LANES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NotRequired, TypedDict


class EventKind(StrEnum):
    """What an event is. Its natural key (see ``EventRecord.key``) is unique within a kind."""

    COMMIT = "commit"
    DOC_REVISION = "doc_revision"
    CONFIG_CHANGE = "config_change"
    HARNESS_RUN = "harness_run"
    REQUEST = "request"  # at = received, ends_at = finished (None: never finished in the log)
    LOG_SPAN = "log_span"  # at = first line, ends_at = last line of a server log file
    LOG_ERROR = "log_error"  # an ERROR/Traceback line of the server itself (not prompt payload)
    STACK_DUMP = "stack_dump"
    NOTE = "note"
    # One SGLang server start (a restart): attrs carry the live configuration as logged.
    SERVER_START = "server_start"

    @property
    def label(self) -> str:
        return _KIND_LABELS[self]


_KIND_LABELS: dict[EventKind, str] = {
    EventKind.COMMIT: "Commit",
    EventKind.DOC_REVISION: "Doc revision",
    EventKind.CONFIG_CHANGE: "Config change",
    EventKind.HARNESS_RUN: "Harness run",
    EventKind.REQUEST: "Request",
    EventKind.LOG_SPAN: "Server log",
    EventKind.LOG_ERROR: "Server error",
    EventKind.STACK_DUMP: "Stack dump",
    EventKind.NOTE: "Note",
    EventKind.SERVER_START: "Server start",
}


class Lane(StrEnum):
    """A row of the timeline's event chart."""

    LIVE_CONFIG = "live_config"
    CONFIG = "config"
    COMMITS = "commits"
    DOCS = "docs"
    HARNESS = "harness"
    SYMPTOMS = "symptoms"
    REQUESTS = "requests"
    SERVER = "server"
    DUMPS = "dumps"
    NOTES = "notes"

    @property
    def label(self) -> str:
        return LANES[self].label

    @property
    def colour(self) -> str:
        return LANES[self].colour


@dataclass(frozen=True)
class LaneStyle:
    label: str
    colour: str


# Top to bottom on the chart; the order of this mapping is the order of the lanes.
LANES: dict[Lane, LaneStyle] = {
    Lane.LIVE_CONFIG: LaneStyle("Live config", "#bcbd22"),
    Lane.CONFIG: LaneStyle("Config changes", "#d62728"),
    Lane.COMMITS: LaneStyle("Commits", "#7f7f7f"),
    Lane.DOCS: LaneStyle("Doc revisions", "#8c564b"),
    Lane.HARNESS: LaneStyle("Harness", "#2ca02c"),
    Lane.SYMPTOMS: LaneStyle("Symptoms", "#ff7f0e"),
    Lane.REQUESTS: LaneStyle("Dropped requests", "#e377c2"),
    Lane.SERVER: LaneStyle("Server", "#9467bd"),
    Lane.DUMPS: LaneStyle("Stack dumps", "#17becf"),
    Lane.NOTES: LaneStyle("Notes", "#1f77b4"),
}


class HarnessStatus(StrEnum):
    """The outcome of one harness run. lm-eval results carry a score but no verdict: SCORED."""

    PASS = "pass"  # noqa: S105 (a status, not a password)
    FAIL = "fail"
    ERROR = "error"
    SKIPPED = "skipped"
    SCORED = "scored"

    @property
    def failed(self) -> bool:
        """A run that failed or errored: a symptom, drawn as a failure."""
        return self in _FAILED


_FAILED = frozenset({HarnessStatus.FAIL, HarnessStatus.ERROR})


def harness_failed(status: object) -> bool:
    """Whether a stored status (any string, possibly unknown) is a failed or errored run."""
    return status in _FAILED


class SymptomKind(StrEnum):
    """What the correlation engine calls bad."""

    DROPPED_REQUEST = "dropped_request"
    WEDGE = "wedge"
    HARNESS_FAILURE = "harness_failure"
    CRASH = "crash"  # a scheduler exception or traceback that stopped serving
    WATCHDOG_TIMEOUT = "watchdog_timeout"
    CRASH_LOOP = "crash_loop"  # SIGQUIT / repeated restarts in a short time
    OOM = "oom"
    STALL = "stall"  # requests received but none finishing while the server is up


class Scope(StrEnum):
    """Where a setting lives."""

    ENV = "env"  # environment variable: export K=V, K=V cmd, .env
    FLAG = "flag"  # command-line flag: --flag value (key is the flag with its dashes: "--tp")
    FILE = "file"  # a key in a YAML/TOML/JSON config file (key is dotted: "server.port")
    TABLE = "table"  # a Markdown key/value table row


class Source(StrEnum):
    """What recorded a config change."""

    DOC = "doc"
    COMMIT = "commit"
    CHANGELOG = "changelog"
    API = "api"
    LIVE = "live"  # the server's own start-up log (ServerArgs): what actually ran


# --- the attributes each kind of event carries (Event.attrs) -------------------------------


class SettingAttrs(TypedDict):
    key: str
    value: str | None
    scope: str
    where: str
    condition: NotRequired[str]
    profile: NotRequired[str]  # the launch it belongs to, when a doc holds several


class CommitAttrs(TypedDict):
    hash: str
    short: str
    author: str
    email: str
    parents: list[str]
    files: list[dict[str, Any]]
    repo: str
    touches_config: NotRequired[bool]


class DocRevisionAttrs(TypedDict):
    path: str
    settings: list[SettingAttrs]
    commit: NotRequired[str]
    # A lone doc given a time asserts the whole configuration at that time: later revisions of
    # the same path are diffed against it (ingest.services.loading).
    state: NotRequired[bool]


class ConfigChangeAttrs(TypedDict):
    key: str
    old: str | None
    new: str | None
    scope: str
    source: str
    ref: str
    where: str
    condition: NotRequired[str]
    sources: NotRequired[list[str]]


class HarnessRunAttrs(TypedDict):
    suite: str
    case: str
    status: str  # a HarnessStatus value
    score: float | None
    threshold: NotRequired[float | None]
    time_s: NotRequired[float | None]
    message: NotRequired[str]
    classname: NotRequired[str]
    extra: NotRequired[dict[str, Any]]
    task: NotRequired[str]
    alias: NotRequired[str]
    metrics: NotRequired[dict[str, Any]]
    model: NotRequired[str]


class RequestAttrs(TypedDict):
    rid: str
    finished: bool
    receive_line: int


class LogSpanAttrs(TypedDict):
    lines: int
    requests: NotRequired[int]  # a server log's (a router log tracks none)
    unfinished: NotRequired[int]
    # A router log's span (ingest.parsers.routerlog): its WARN and ERROR line counts. It does
    # not count as the server logging when requests are judged dropped.
    router: NotRequired[bool]
    warn: NotRequired[int]
    error: NotRequired[int]
    # Lines whose local time a DST change made ambiguous ("repeated") or impossible
    # ("skipped"), and how they were read (ingest.parsers.logclock.Window.as_attrs).
    clock: NotRequired[list[dict[str, Any]]]


class LogErrorAttrs(TypedDict, total=False):
    """A server error carries its traceback in the event body. ``symptom`` (a SymptomKind
    value) says what it shows when it is one: a crash, a watchdog timeout, an OOM, or a crash
    loop (several starts in a short time: ``starts`` of them, ``went_down`` seen to go down)."""

    symptom: str
    starts: int
    went_down: int
    repeats: int  # a C++ library's (glog) line repeated this many more times until ends_at


class StackDumpAttrs(TypedDict, total=False):
    format: str  # "py-spy" or "goroutines"
    pid: int | None
    cmdline: str
    python: str
    threads: list[dict[str, Any]]
    total: int
    groups: list[dict[str, Any]]


class ServerStartAttrs(TypedDict):
    """One server start. ``server_args`` maps each ServerArgs field to its value as logged (the
    Python repr text, e.g. ``"8192"``, ``"'fa3'"``, ``"None"``); empty when the log has no
    ServerArgs line. ``env`` holds SGLANG_*/environment values the log printed, if any."""

    line: int
    server_args: dict[str, str]
    env: NotRequired[dict[str, str]]
    ready_at: NotRequired[str | None]  # ISO time of "The server is fired up and ready to roll!"
    shutdown_at: NotRequired[str | None]  # ISO time of the shutdown line, if logged
    pid: NotRequired[int | None]


class NoteAttrs(TypedDict, total=False):
    """Notes are rows of their own (timeline.models.Note); pushed note events carry free attrs."""


ATTRS_BY_KIND: dict[EventKind, type] = {
    EventKind.COMMIT: CommitAttrs,
    EventKind.DOC_REVISION: DocRevisionAttrs,
    EventKind.CONFIG_CHANGE: ConfigChangeAttrs,
    EventKind.HARNESS_RUN: HarnessRunAttrs,
    EventKind.REQUEST: RequestAttrs,
    EventKind.LOG_SPAN: LogSpanAttrs,
    EventKind.LOG_ERROR: LogErrorAttrs,
    EventKind.STACK_DUMP: StackDumpAttrs,
    EventKind.NOTE: NoteAttrs,
    EventKind.SERVER_START: ServerStartAttrs,
}
