"""Records the pure parsers return.

Parsers are pure: bytes (and a small context) in, a :class:`ParseResult` out. No Django, no
I/O. Every datetime here is aware and in UTC. Bad input raises :class:`ParseError` naming the
file, the line and what was expected; a parser never returns a partial result for bad input.
"""

from __future__ import annotations

import datetime as dt
from array import array
from dataclasses import dataclass, field
from typing import Any

from evidence.vocabulary import EventKind, Lane, Scope, SettingAttrs, Source

from . import secrets

UTC = dt.UTC


class ParseError(ValueError):
    """Bad input: the file, the 1-based line (0 when none applies) and what was expected."""

    def __init__(self, file: str, line: int, message: str) -> None:
        self.file = file
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}: {self.message}"
        return f"{self.file}: {self.message}"


@dataclass(frozen=True)
class ParseContext:
    """What a parser knows besides the bytes.

    ``tz`` applies to timestamps that carry no zone (SGLang logs, nvidia-smi, naive ISO times).
    ``default_time`` is the time for records that carry none (a scrape without timestamps, a lone
    Markdown file without changelog dates); parsers raise ParseError if they need it and it is None.
    """

    name: str
    tz: dt.tzinfo = UTC
    default_time: dt.datetime | None = None


# --- events ------------------------------------------------------------


@dataclass(frozen=True)
class EventRecord:
    """One thing that happened at a moment (or over an interval).

    ``key`` is the natural key within its kind (commit hash, request id, suite/case/time, ...):
    the loader fingerprints (kind, key) so that re-ingesting the same facts adds nothing.
    ``attrs`` must be JSON-serialisable (str, int, float, bool, None, lists, dicts).
    """

    kind: EventKind
    lane: Lane
    at: dt.datetime
    key: str
    title: str
    body: str = ""  # Markdown
    ends_at: dt.datetime | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    line: int = 0  # line in the source file where it was read, for messages and links

    def __post_init__(self) -> None:
        # Secrets in what it says keep only their fingerprint (secrets.py). A request says
        # only its id and state, and there are many: left as it is.
        if self.kind == EventKind.REQUEST:
            return
        object.__setattr__(self, "title", secrets.scrub_text(self.title))
        object.__setattr__(self, "body", secrets.scrub_text(self.body))
        if self.attrs:
            object.__setattr__(self, "attrs", secrets.scrub(self.attrs))


# --- config ------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One setting asserted by a document or file at one revision."""

    key: str
    value: str | None  # None: a boolean flag given without a value is "true"; use "true" then
    scope: Scope
    where: str  # e.g. "DSV4_DEPLOY.md:42" or "deploy/launch.sh:7"
    condition: str = ""  # e.g. "if [ $GPU = b200 ]": kept, not flattened
    # The server launch it belongs to when a document holds several (prefill and decode
    # servers, alternative launches): "" for the only launch and for what all launches share.
    profile: str = ""

    def __post_init__(self) -> None:
        # A token or a password never reaches the store, only its fingerprint (secrets.py):
        # under a secret's key, or given to one inside the value (a command's `--api-key x`).
        value = self.value
        if secrets.is_secret_key(self.key):
            value = secrets.hidden(value)
        elif value:
            value = secrets.scrub_text(value)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "condition", secrets.scrub_text(self.condition))

    def as_attrs(self) -> SettingAttrs:
        """The setting as a doc event stores it (``attrs["settings"]``)."""
        return {
            "key": self.key,
            "value": self.value,
            "scope": self.scope,
            "where": self.where,
            "condition": self.condition,
            "profile": self.profile,
        }


@dataclass(frozen=True)
class ConfigChangeRecord:
    """A key whose effective value changed at a moment.

    ``old`` is None when the key is introduced, ``new`` is None when it is removed.
    ``source`` says what recorded it; ``ref`` names what recorded it (commit hash, doc path@rev).
    """

    key: str
    old: str | None
    new: str | None
    at: dt.datetime
    scope: Scope
    source: Source
    ref: str
    where: str = ""
    condition: str = ""
    note: str = ""  # free text, e.g. the changelog item's words

    def __post_init__(self) -> None:
        object.__setattr__(self, "old", secrets.hide(self.key, self.old))
        object.__setattr__(self, "new", secrets.hide(self.key, self.new))
        object.__setattr__(self, "note", secrets.scrub_text(self.note))
        object.__setattr__(self, "condition", secrets.scrub_text(self.condition))


# --- metrics ------------------------------------------------------------


@dataclass(frozen=True)
class SeriesKey:
    """A metric series: name and sorted label pairs."""

    name: str
    labels: tuple[tuple[str, str], ...] = ()


@dataclass
class SampleBlock:
    """The samples of one series, columnar (millisecond epoch timestamps, float values).

    Columnar arrays instead of one object per sample: a day of metrics is millions of samples.
    """

    key: SeriesKey
    ts_ms: array[int] = field(default_factory=lambda: array("q"))
    values: array[float] = field(default_factory=lambda: array("d"))
    type: str = ""  # counter, gauge, histogram, summary, untyped ...
    unit: str = ""
    help: str = ""
    # Where the series came from when its labels do not say (see ingest.parsers.series.
    # mark_origins): part of its identity, so two exporters' unlabelled series stay two.
    origin: str = ""


# --- the result ------------------------------------------------------------


@dataclass
class ParseResult:
    """Everything one file yielded. ``kind`` names the parser (see ingest.sniff)."""

    kind: str
    events: list[EventRecord] = field(default_factory=list)
    config_changes: list[ConfigChangeRecord] = field(default_factory=list)
    samples: list[SampleBlock] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Config files whose change the file shows but could not be read (a `git log -p` hunk
    # without the lines around it): each is in ``warnings``; the analysis says the count.
    config_unread: int = 0

    @property
    def sample_count(self) -> int:
        return sum(len(b.ts_ms) for b in self.samples)
