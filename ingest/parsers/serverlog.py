"""SGLang server log parser.

Pure: bytes in, :class:`ParseResult` out. A line opening with ``[YYYY-MM-DD HH:MM:SS]`` (optionally
``,mmm`` and rank tags such as ``TP0``) starts a record in server-local time; every other line
(tracebacks, unbracketed uvicorn lines, multi-line payloads) continues the record before it.

What a log yields:

* batch lines -> samples (running requests, queue, token usage, generation throughput), one per
  series per second;
* ``Receive`` / ``Finish`` lines paired by ``rid`` -> request events (no finish: still open);
* server errors (a level ERROR/CRITICAL, a traceback) -> log_error events;
* one log_span event covering the first to the last timestamp: the server was logging then;
* each server start (``server_args=ServerArgs(...)``, ready, shutdown) -> a server_start event
  carrying the live configuration, and crash loops -> log_error events
  (:mod:`ingest.parsers.lifecycle`); a server error carries the symptom it shows
  (``attrs["symptom"]``: crash, watchdog timeout, OOM).

Request lines carry user payload (prompts, generated text). It is never read for meaning: only
the ``rid`` is taken from it, skipping string literals so a prompt that mentions ``rid='x'``,
"Traceback" or "ERROR" changes nothing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import deque
from dataclasses import dataclass, field, replace

from evidence.vocabulary import EventKind, Lane

from . import lifecycle, logclock, logprefix, pyspy, repeats, serverargs
from .text import decode_lines, head_text
from .timestamps import TimeError, zone_name
from .types import (
    EventRecord,
    ParseContext,
    ParseError,
    ParseResult,
    SampleBlock,
    SeriesKey,
)

KIND_SGLANG_LOG = "sglang_log"

_PREFIX_RE = re.compile(
    r"\[(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:[,.](\d{1,6}))?((?: [^\]\s]+)*)\] ?"
)
_RANK_RE = re.compile(r"(TP|DP|PP|EP)\d+")
_LEVEL_RE = re.compile(r"\b(?:ERROR|CRITICAL)\b")
_TRACEBACK = "Traceback (most recent call last):"
# A string literal (skipped whole) or a top-level rid= with its quoted value, or the "[" of a
# list of them (a batched request: ``EmbeddingReqInput(rid=['a', 'b'])``).
_RID_SCAN_RE = re.compile(
    r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|(?<![\w.])rid=(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|(\[))"""
)
_RID_ITEM_RE = re.compile(r"""\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*([,\]])""")

_SOURCE_LABEL = ("source", "server_log")
# Prefill lines are a series of their own: in the same second as a decode line they would
# otherwise overwrite its running requests. Decode lines keep the plain labels (they are the
# server's periodic report, what its /metrics gauges show).
_PREFILL_LABEL = ("batch", "prefill")
_BATCH_FIELDS = {
    "#running-req": "sglang:num_running_reqs",
    "#queue-req": "sglang:num_queue_reqs",
    "token usage": "sglang:token_usage",
    # hybrid (Mamba) models: "full token usage: 0.14, mamba usage: 0.20"
    "full token usage": "sglang:token_usage",
    "mamba usage": "sglang:mamba_usage",
    # sliding-window attention models (DeepSeek-V4): "full token usage: 0.02, ..., swa token
    # usage: 0.00"; /metrics calls it sglang:swa_token_usage
    "swa token usage": "sglang:swa_token_usage",
    "gen throughput (token/s)": "sglang:gen_throughput",
    "cache hit rate": "sglang:cache_hit_rate",  # "2.76%" in older versions
    "accept len": "sglang:spec_accept_length",  # speculative decoding
    "accept rate": "sglang:spec_accept_rate",
}
_DECODE_ONLY = frozenset({"sglang:gen_throughput"})
# PD disaggregation's queues (``--disaggregation-mode prefill|decode``), named as SGLang's
# /metrics names them (scheduler_metrics_mixin: the prefill's bootstrap and inflight queues, the
# decode's prealloc and transfer queues).
_BATCH_FIELDS.update(
    {
        "#unbootstrapped-req": "sglang:num_prefill_prealloc_queue_reqs",
        "#transferring-req": "sglang:num_prefill_inflight_queue_reqs",
        "#prealloc-req": "sglang:num_decode_prealloc_queue_reqs",
        "#transfer-req": "sglang:num_decode_transfer_queue_reqs",
    }
)
# Lines where the server says what it did to running requests, at INFO or WARNING (no ERROR
# word): each kind folded into one event per burst (repeats under a minute apart, every rank's
# copy included), with the rids it names. (kind, pattern; a "rid" group names a request.)
_NOTICES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # KV cache too small for the running batch: requests pushed back to the queue, to be
    # prefilled again. SGLang before 0.4.4: "Decode out of memory happened."
    (
        "retract",
        re.compile(
            r"(?:KV cache pool is full\. Retract requests|Decode out of memory happened)\. "
            r"#retracted_reqs: (?P<count>\d+)"
        ),
    ),
    # The scheduler went on with a request the HTTP side had already given up (a client gone).
    (
        "orphan output",
        re.compile(
            r"Received output for rid='(?P<rid>[^']*)' but the state was deleted in "
            r"TokenizerManager"
        ),
    ),
    ("abort", re.compile(r"Abort request (?P<rid>[\w-]+)\s*$")),
)
_NOTICE_RIDS = 20  # rids kept per folded notice
_ORPHANS_KEPT = 10_000  # Finish lines without their Receive kept per file
# What SGLang's watchdog prints of the batch it was running when it fired.
_BATCH_REQS = "self.cur_batch.reqs=["
_BATCH_RID_RE = re.compile(r"\bReq\(rid=([\w-]+)")
# A line that starts a crash record even without an ERROR level.
# SGLang's own report of a failure it caught, at INFO level: "Prefill transfer failed for
# request ... with exception KVTransferError(...): Decode instance could be dead".
_CAUGHT_RE = re.compile(r"\bwith exception (?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\b")
# A request the HTTP server answered with a 5xx (uvicorn's access line): the client got an
# error, whatever the log said before it.
_HTTP_5XX_RE = re.compile(r'"(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) [^"]*" 5\d\d\b')
_CRASH_RE = re.compile(
    r"Scheduler hit an exception|Received sigquit|SIGQUIT received|[Ww]atchdog timeout"
    r"|[Ww]atchdog caught collective operation timeout|Fatal Python error"
)
# An untimestamped line that starts a crash record: what the interpreter, the C++ runtime and
# torch's NCCL watchdog (``[rank6]:[E207 01:29:36.61 ProcessGroupNCCL.cpp:616] ...``) print on
# their way down, outside SGLang's logger; anywhere in the line (a progress bar's redraws
# often come first).
_UNLOGGED_CRASH_RE = re.compile(
    r"(?:\[rank\d+\]:)?(?:\[[EF]\d{3,4} [^\]]*\] .*(?:[Ww]atchdog|terminated with exception)"
    r"|Fatal Python error:|terminate called after throwing|Caught signal \d+)"
)
# A line in glog's own layout at ERROR or FATAL level, from a C++ library beside SGLang
# (Mooncake's transfer engine: ``E0414 03:56:41.856248 77969 transfer_metadata_plugin.cpp:173]
# Unexpected code ...``): a server error of its own, one line long, its repeats folded into it
# (:mod:`.repeats`).
_GLOG_LINE_RE = re.compile(
    r"(?<![\w.])([EF])\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ ([^\s\]]+:\d+)\] (.*)"
)
# The time torch's C++ logging (glog's format) stamps its lines with: "[E207 01:29:36.730311765 "
# is February 7 (the year is the log's), in the process's local time, as SGLang's own.
_GLOG_TIME_RE = re.compile(
    r"(?:\[|(?<![\w.]))[EFWI](\d{1,2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))? "
)
# The exception line that ends a traceback: "RuntimeError: CUDA error: ...",
# "torch.OutOfMemoryError: CUDA out of memory.", "KeyboardInterrupt", "Exception: ...".
_EXCEPTION_LINE_RE = re.compile(
    r"(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception|Exit|Interrupt|Fault|Failure)\b(?::.*)?"
)
# After a traceback's frames, the first unindented line is its exception whatever the class is
# called ("triton.runtime.errors.OutOfResources: ...", "...BackendCompilerFailed: ...").
_RAISED_LINE_RE = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?::.*)?")
_FRAME = "  File "
_TITLE_MAX = 120
_BODY_MAX_LINES = 200
_BODY_TAIL_LINES = 30
# Timestamped lines of other processes a traceback's frames may be interrupted by and go on.
_INTERLEAVED_MAX = 20
# A ServerArgs line hard-wrapped by a paste or a terminal (every N characters, mid-word) goes on
# over the untimestamped lines after it, joined as they are; this many at most (a ~20 KB line at
# 80 columns is 250 lines).
_ARGS_MAX_LINES = 400


@dataclass
class _Request:
    rid: str
    received: dt.datetime
    line: int
    finished: dt.datetime | None = None


@dataclass
class _Error:
    line: int
    at: dt.datetime | None
    title: str
    lines: list[str] = field(default_factory=list)
    context: str = ""  # the timestamped line before a traceback that has no time of its own
    # Past _BODY_MAX_LINES: how many lines were left out, and the last of them (a traceback's
    # exception comes last, and names the error).
    omitted: int = 0
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=_BODY_TAIL_LINES))
    # Inside a traceback, before its exception line: lines from other processes may come
    # between its frames (an interleaved log) and it goes on after them.
    framing: bool = False
    exception: str = ""  # the last exception line seen (after any "During handling..." chain)
    # A glog line's repeats folded into it: how many, the last one's time and line.
    repeats: int = 0
    last_at: dt.datetime | None = None
    last_line: int = 0
    rids: list[str] = field(default_factory=list)  # requests it names (a watchdog's batch)

    def __post_init__(self) -> None:
        self.framing = any(_TRACEBACK in raw for raw in self.lines)

    def add(self, raw: str) -> None:
        text = raw.rstrip()
        if text.startswith(_FRAME) or _TRACEBACK in text:
            self.framing = True
        elif text[:1].strip() and (
            _EXCEPTION_LINE_RE.fullmatch(text) or (self.framing and _RAISED_LINE_RE.fullmatch(text))
        ):
            self.exception = text  # what ends a traceback, whatever its class is called
            self.framing = False
        if len(self.lines) < _BODY_MAX_LINES:
            self.lines.append(raw)
        else:
            self.omitted += 1
            self.tail.append(raw)

    def body_lines(self) -> list[str]:
        if not self.omitted:
            return self.lines
        left_out = self.omitted - len(self.tail)
        gap = [f"... {left_out} lines left out ..."] if left_out else []
        return [*self.lines, *gap, *self.tail]

    def headline(self) -> str:
        """The title: the exception line that ended the traceback (the last one, after any
        "During handling..." chain), after the words that announced it; else the first line."""
        exception = self.exception
        if not exception:
            return self.title
        context = self.title.split(_TRACEBACK, 1)[0].strip()
        if self.title.startswith(_TRACEBACK) or not context:
            return exception[:_TITLE_MAX]
        joint = " " if context.endswith(":") else ": "
        return f"{context}{joint}{exception}"[:_TITLE_MAX]


@dataclass
class _Notice:
    """A burst of one kind of notice (see _NOTICES), folded: its event, the rids it named
    (the first _NOTICE_RIDS) and the count (requests retracted, or lines)."""

    kind: str
    error: _Error
    rids: list[str] = field(default_factory=list)
    count: int = 0


# Where a Receive/Finish payload stands at the end of a line: inside a string literal (its
# quote), and how many brackets are open. A line that leaves neither open ends the payload.
_OPENERS, _CLOSERS = "([{", ")]}"
_STRING_END = {"'": re.compile(r"(?:[^'\\]|\\.)*'"), '"': re.compile(r'(?:[^"\\]|\\.)*"')}
_PAYLOAD_MARK = re.compile(r"['\"()\[\]{}]")


def _payload_scan(text: str, quote: str, depth: int) -> tuple[str, int]:
    pos = 0
    while pos < len(text):
        if quote:
            end = _STRING_END[quote].match(text, pos)
            if end is None:
                return quote, depth  # the string goes on past this line
            pos, quote = end.end(), ""
            continue
        mark = _PAYLOAD_MARK.search(text, pos)
        if mark is None:
            break
        char = mark.group()
        if char in "'\"":
            quote = char
        elif char in _OPENERS:
            depth += 1
        else:
            depth = max(depth - 1, 0)
        pos = mark.end()
    return quote, depth


def _request_rids(message: str) -> list[str]:
    """The request ids of a Receive/Finish message: one, several for a batched request (those
    of its list read so far, when a multi-line payload cuts it), or none."""
    start = message.find("ReqInput(")
    if start == -1:
        return []
    for match in _RID_SCAN_RE.finditer(message, start + len("ReqInput(")):
        rid = match.group(1) if match.group(1) is not None else match.group(2)
        if rid is not None:
            return [rid]
        if match.group(3):
            rids: list[str] = []
            pos = match.end()
            while (item := _RID_ITEM_RE.match(message, pos)) is not None:
                rids.append(item.group(1) if item.group(1) is not None else item.group(2))
                pos = item.end()
                if item.group(3) == "]":
                    break
            return rids
    return []


# The records worth finding after other text on their line: what a line's [time] starts.
_GLUED_MESSAGES = ("Prefill batch", "Decode batch", "Receive:", "Finish:")


def _glued_record(raw: str) -> int:
    """Where a batch or request record starts when other text comes before its [time] (a
    progress bar redrawn without a newline: ``  2%|█   | 3[2026-05-28 03:00:02 TP0] Prefill
    batch, ...``); 0 when the line holds none."""
    if not any(m in raw for m in _GLUED_MESSAGES):
        return 0
    for match in _PREFIX_RE.finditer(raw, 1):
        if raw.startswith(_GLUED_MESSAGES, match.end()):
            return match.start()
    return 0


class _LogParser:
    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.file = ctx.name
        self.clock = logclock.LogClock(ctx.tz, ctx.name)  # local times, DST resolved by order
        self.first: dt.datetime | None = None
        self.last: dt.datetime | None = None
        self.requests: dict[str, _Request] = {}
        self.errors: list[_Error] = []
        self.warnings: list[str] = []
        # series -> {second (ms) -> value}: the last batch line of a second wins
        self.series: dict[SeriesKey, dict[int, float]] = {}
        self.in_payload = False
        self.payload_state: tuple[str, int] = ("", 0)
        self.error: _Error | None = None
        # The error whose traceback frames a timestamped line interrupted (see continuation).
        self.open_traceback: _Error | None = None
        self.interrupting = 0  # timestamped lines since it was interrupted
        self.current: dt.datetime | None = None  # time of the latest timestamped line
        self.message = ""  # the message of the latest timestamped line
        self.batch_seen: set[tuple[tuple[tuple[str, str], ...], int]] = set()
        self.batch_overwritten = 0  # batch lines replaced by a later one in the same second
        self.unplaced_batches: list[int] = []  # batch lines without a readable [time]
        self.glued: list[int] = []  # records read from a [time] after other text
        self.glog_errors: dict[str, _Error] = {}  # the latest error of each glog line
        self.zone_note = ""  # the zone a shipper's times put the log in, when not the incident's
        # Finish lines whose Receive is not in this file (a rotated log's first lines): rid ->
        # its time, for the analysis to pair with the file before (the first _ORPHANS_KEPT).
        self.orphan_finishes: dict[str, dt.datetime] = {}
        self.orphans_over = 0
        # Folded notices (see _NOTICES), in order: [kind, the event, its rids, the count], and
        # the latest of each kind.
        self.notice_events: list[_Notice] = []
        self.notices: dict[str, _Notice] = {}
        # A py-spy dump printed into the log (SGLang's watchdog: "Pyspy dump for PID N:"):
        # (its first line, the time of the line before it, its lines) while it goes on.
        self.dump: tuple[int, dt.datetime | None, list[str]] | None = None
        self.dumps: list[EventRecord] = []
        self.replaying = False  # a dump that did not read, its lines read as log lines again
        self.early_dumps: list[tuple[int, list[str]]] = []  # before the log's first time
        self.life = lifecycle.Lifecycle()
        # A ServerArgs line not closed on its line: (text so far, where ServerArgs( starts, its
        # time, its line number, lines joined, why it did not read), until the untimestamped
        # lines after it close it.
        self.wrapped_args: (
            tuple[str, int, dt.datetime | None, int, int, serverargs.ServerArgsError] | None
        ) = None

    def when(self, match: re.Match[str], lineno: int) -> dt.datetime:
        stamp = match.group(0)[1:20]
        try:
            at = self.clock.read(stamp, match.groups(), lineno)
        except TimeError as exc:
            raise ParseError(self.file, lineno, f"invalid timestamp [{stamp}]: {exc}") from None
        fraction = match.group(7)
        if fraction:
            at += dt.timedelta(microseconds=int(fraction.ljust(6, "0")))
        return at

    def line(self, raw: str, lineno: int) -> None:
        match = _PREFIX_RE.match(raw)
        if match is None and not self.in_payload and self.error is None and not self.wrapped_args:
            # (Not inside a prompt, an error's body or a wrapped ServerArgs: text there may
            # quote a log line.)
            start = _glued_record(raw)
            if start:
                # A progress bar's redraw (no newline of its own) or a paste's prefix before
                # the [time]: the record is read from its [time] on, and counted.
                self.glued.append(lineno)
                raw = raw[start:]
                match = _PREFIX_RE.match(raw)
        if match is None:
            self.continuation(raw, lineno)
            return
        self.dump_end()
        self.unwrapped_args_end()
        at = self.when(match, lineno)
        if self.first is None or at < self.first:
            self.first = at
        if self.last is None or at > self.last:
            self.last = at
        self.current = at
        message = self.message = raw[match.end() :]
        if self.error is not None:
            self.open_traceback = self.error if self.error.framing else None
            self.interrupting = 0
        elif self.open_traceback is not None:
            self.interrupting += 1
            if self.interrupting > _INTERLEAVED_MAX:
                self.open_traceback = None
        self.error = None
        self.in_payload = False
        if message.startswith(("Prefill batch", "Decode batch")):
            self.batch(message, at, match.group(8), lineno)
        elif message.startswith(("Receive:", "Finish:")):
            self.request_line(message, at, lineno)
        elif (args_at := serverargs.find(message)) != -1:
            self.server_args(message, args_at, at, lineno)
        elif self.notice(message, at, match.group(8), lineno) or (
            _BATCH_REQS in message and self.batch_of_error(message, at, raw)
        ):
            pass  # folded into an event of its kind, or into the error it belongs to
        else:
            self.life.message(at, lineno, message)
            if (
                _LEVEL_RE.search(message)
                or _TRACEBACK in message
                or _CRASH_RE.search(message)
                or _CAUGHT_RE.search(message)
                or _HTTP_5XX_RE.search(message)
            ):
                self.error = _Error(lineno, at, message.strip()[:_TITLE_MAX], [raw])
                self.errors.append(self.error)
        self.life.seen(at)

    def server_args(
        self, message: str, args_at: int, at: dt.datetime | None, lineno: int, joined: int = 0
    ) -> None:
        try:
            fields = serverargs.read(message, args_at)
        except serverargs.ServerArgsError as exc:
            if exc.unclosed and joined < _ARGS_MAX_LINES:
                # Perhaps wrapped: the lines after it may close it (unwrapped_args_end).
                self.wrapped_args = (message, args_at, at, lineno, joined, exc)
                return
            raise self.args_parse_error(lineno, args_at, exc) from None
        if joined:
            self.warnings.append(
                f"{self.file}:{lineno}: server_args=ServerArgs(...) went on over the next "
                f"{joined} lines (a wrapped paste); read as one line"
            )
        self.life.server_args(at, lineno, fields)

    def args_parse_error(
        self, lineno: int, args_at: int, exc: serverargs.ServerArgsError
    ) -> ParseError:
        return ParseError(
            self.file,
            lineno,
            f"server_args=ServerArgs(...), at character {args_at + exc.column} of the "
            f"message: {exc.message}",
        )

    def unwrapped_args_end(self) -> None:
        """A timestamped line (or the end of the file) after a ServerArgs that never closed:
        the line was cut, not wrapped; the file is refused as before, at that line."""
        if self.wrapped_args is not None:
            _, args_at, _, lineno, _, exc = self.wrapped_args
            raise self.args_parse_error(lineno, args_at, exc)

    def request_line(self, message: str, at: dt.datetime, lineno: int) -> None:
        self.payload_state = _payload_scan(message, "", 0)
        self.in_payload = self.payload_state != ("", 0)
        if message.startswith("Receive:"):
            self.receive(message, at, lineno)
        else:
            self.finish(message, at, lineno)

    def continuation(self, raw: str, lineno: int) -> None:
        if self.wrapped_args is not None:
            text, args_at, at, first, joined, _ = self.wrapped_args
            self.wrapped_args = None
            self.server_args(text + raw, args_at, at, first, joined + 1)
            return
        if self.in_payload:
            # a multi-line prompt or output: payload, never read; it ends where its string
            # literals and brackets close
            self.payload_state = _payload_scan(raw, *self.payload_state)
            self.in_payload = self.payload_state != ("", 0)
            return
        if self.dump is not None:
            if pyspy.in_dump(raw):  # py-spy's own grammar: what a dump is made of
                self.dump[2].append(raw)
                return
            self.dump_end()
        if pyspy.starts_dump(raw) and not self.replaying:
            # py-spy's header: its dump goes on over the untimestamped lines after it
            self.dump = (lineno, self.current, [raw])
            return
        if raw.startswith(serverargs.MARK):
            # an older SGLang printed its ServerArgs without a [time]: the time of the line
            # before (or the log's first time)
            self.server_args(raw, serverargs.find(raw), self.current, lineno)
            return
        self.life.message(self.current, lineno, raw)
        glog = _GLOG_LINE_RE.search(raw)
        if glog is not None:
            # One line of another library's: it neither ends nor joins the record around it.
            self.glog_error(raw, glog, lineno)
            return
        if self.error is not None:
            self.error.add(raw)
            return
        if self.open_traceback is not None and (
            raw.startswith((_FRAME, "    ")) or _RAISED_LINE_RE.fullmatch(raw.rstrip())
        ):
            # A traceback whose frames another process's lines interrupted: it goes on.
            self.error = self.open_traceback
            self.error.add(raw)
            return
        if "Decode batch" in raw or "Prefill batch" in raw:
            # a batch line whose [time] prefix was damaged (a paste that lost its "["): no time
            # to place it at; counted, never dropped without a word
            self.unplaced_batches.append(lineno)
            return
        if raw.startswith(("Receive:", "Finish:")) and self.current is not None:
            # a request line that lost its [time] (a shipper split it off): the time of the
            # line before
            self.request_line(raw, self.current, lineno)
            return
        crash = _UNLOGGED_CRASH_RE.search(raw)
        if raw.startswith(_TRACEBACK) or raw.startswith(("ERROR:", "CRITICAL:")) or crash:
            # before any timestamped line the error takes the first timestamp (see result)
            title = raw[crash.start() :] if crash is not None else raw  # not a progress bar
            at = self.glog_time(raw, lineno) if crash is not None else None
            self.error = _Error(
                lineno, at or self.current, title.strip()[:_TITLE_MAX], [raw], context=self.message
            )
            self.errors.append(self.error)

    def batch_of_error(self, message: str, at: dt.datetime, raw: str) -> bool:
        """The batch a watchdog prints after its timeout (``self.cur_batch.reqs=[Req(rid=...``):
        the rids it was running go to that error (the latest one, of the same second)."""
        error = self.errors[-1] if self.errors else None
        if error is None or error.at is None or abs(at - error.at) > _RANK_COPY_WINDOW:
            return False
        for rid in _BATCH_RID_RE.findall(message):
            if rid not in error.rids and len(error.rids) < _NOTICE_RIDS:
                error.rids.append(rid)
        error.add(raw)
        return True

    def notice(self, message: str, at: dt.datetime, ranks: str, lineno: int) -> bool:
        """A line saying what the server did to running requests (see _NOTICES): folded into
        its kind's event of this burst, its count into the kind's series. False: none."""
        for kind, pattern in _NOTICES:
            found = pattern.search(message)
            if found is None:
                continue
            groups = found.groupdict()
            rid = groups.get("rid")
            count = int(groups["count"]) if groups.get("count") else 1
            held = self.notices.get(kind)
            if held is None or not repeats.fold(held.error, at, lineno):
                held = _Notice(kind, _Error(lineno, at, message.strip()[:_TITLE_MAX], [message]))
                self.notices[kind] = held
                self.notice_events.append(held)
            held.count += count
            if rid and rid not in held.rids and len(held.rids) < _NOTICE_RIDS:
                held.rids.append(rid)
            if kind == "retract":
                labels = [_SOURCE_LABEL]
                labels += [(r.group(1).lower(), r.group(0)) for r in _RANK_RE.finditer(ranks or "")]
                second = int(at.replace(microsecond=0).timestamp()) * 1000
                per_second = self.series.setdefault(
                    SeriesKey("sglang:num_retracted_reqs", tuple(sorted(labels))), {}
                )
                per_second[second] = per_second.get(second, 0.0) + count
            return True
        return False

    def glog_error(self, raw: str, match: re.Match[str], lineno: int) -> None:
        """A glog ERROR/FATAL line: a new server error, or a repeat of a recent one."""
        level, source, words = match.groups()
        key = repeats.key(level, source, words)
        at = self.glog_time(raw, lineno) or self.current
        seen = self.glog_errors.get(key)
        if seen is not None and repeats.fold(seen, at, lineno):
            return
        error = _Error(lineno, at, raw[match.start() :].strip()[:_TITLE_MAX], [raw])
        self.glog_errors[key] = error
        self.errors.append(error)

    def dump_end(self) -> None:
        """The py-spy dump read so far as a stack_dump event at the time of the log line
        before it; one that does not read is a warning (the log is kept)."""
        if self.dump is None:
            return
        first, at, lines = self.dump
        self.dump = None
        while lines and not lines[-1].strip():
            lines.pop()
        at = at or self.first
        if at is None:
            self.early_dumps.append((first, lines))  # read once the log's first time is known
            return
        self.read_dump(first, at, lines, early=False)

    def read_dump(self, first: int, at: dt.datetime, lines: list[str], *, early: bool) -> None:
        # (A name without a date: the dump's time is the log line's, never the file name's.)
        ctx = ParseContext("py-spy dump", default_time=at)
        try:
            got = pyspy.parse_pyspy("\n".join(lines).encode(), ctx)
        except ParseError as exc:
            self.warnings.append(
                f"{self.file}:{first + max(exc.line, 1) - 1}: a py-spy dump in the log could not "
                f"be read ({exc.message}); its {len(lines)} lines were read as log lines"
            )
            if not early:  # (before the log's first time they would be left out anyway)
                self.replaying = True
                try:
                    for k, raw in enumerate(lines):
                        self.continuation(raw, first + k)
                finally:
                    self.replaying = False
            return
        for event in got.events:
            attrs = {**event.attrs, "log_line": first}
            if early:
                attrs["time_from"] = "the log's first time (the dump came before it)"
            self.dumps.append(
                replace(event, key=f"{self.file}:{first}:py-spy", line=first, attrs=attrs)
            )
        self.warnings.extend(f"{self.file}:{first}: {w}" for w in got.warnings)

    def glog_time(self, raw: str, lineno: int) -> dt.datetime | None:
        """The time of a torch C++ log line (``[E207 01:29:36.73 ...``), in the year of the
        log's latest time (the next year when that makes it more than half a year earlier);
        None without one, or when it lands a day or more before that latest time (no year
        can be trusted then)."""
        match = _GLOG_TIME_RE.search(raw)
        if match is None or self.current is None:
            return None
        month, day, hour, minute, second = (int(g) for g in match.groups()[:5])
        year = self.current.year + (month < self.current.month - 6)
        stamp = f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
        try:
            at = self.clock.read(stamp, (str(year), *match.groups()[:5]), lineno)
        except TimeError:
            return None
        if at < self.current - dt.timedelta(days=1):
            return None
        fraction = match.group(6)
        if fraction:
            at += dt.timedelta(microseconds=int(fraction[:6].ljust(6, "0")))
        if self.last is None or at > self.last:
            self.last = at  # the log went on to here
        return at

    def batch(self, message: str, at: dt.datetime, ranks: str, lineno: int) -> None:
        labels = [_SOURCE_LABEL]
        for rank in _RANK_RE.finditer(ranks or ""):
            labels.append((rank.group(1).lower(), rank.group(0)))
        decode = message.startswith("Decode")
        if not decode:
            labels.append(_PREFILL_LABEL)
        label_tuple = tuple(sorted(labels))
        second = int(at.replace(microsecond=0).timestamp()) * 1000
        if (label_tuple, second) in self.batch_seen:
            self.batch_overwritten += 1
        self.batch_seen.add((label_tuple, second))
        for part in message.split(","):
            name, sep, value = part.partition(":")
            if not sep:
                continue
            metric = _BATCH_FIELDS.get(name.rsplit(". ", 1)[-1].strip())
            if metric is None or (metric in _DECODE_ONLY and not decode):
                continue
            text = value.strip()
            try:
                number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
            except ValueError:
                field_name = name.rsplit(". ", 1)[-1].strip()
                raise ParseError(
                    self.file,
                    lineno,
                    f"expected a number after '{field_name}:' in a batch line, "
                    f"got {value.strip()!r}",
                ) from None
            self.series.setdefault(SeriesKey(metric, label_tuple), {})[second] = number

    def receive(self, message: str, at: dt.datetime, lineno: int) -> None:
        rids = _request_rids(message)
        if not rids:
            self.warnings.append(
                f"{self.file}:{lineno}: Receive line without a quoted rid; skipped"
            )
        for rid in rids:
            self.received(rid, at, lineno)

    def received(self, rid: str, at: dt.datetime, lineno: int) -> None:
        if rid in self.requests:
            first = self.requests[rid].line
            self.warnings.append(
                f"{self.file}:{lineno}: request {rid} received again (first at line {first}); "
                "kept the first"
            )
            return
        self.requests[rid] = _Request(rid, at, lineno)

    def finish(self, message: str, at: dt.datetime, lineno: int) -> None:
        rids = _request_rids(message)
        if not rids:
            self.warnings.append(f"{self.file}:{lineno}: Finish line without a quoted rid; skipped")
        for rid in rids:
            self.finished(rid, at, lineno)

    def finished(self, rid: str, at: dt.datetime, lineno: int) -> None:
        request = self.requests.get(rid)
        if request is None:
            self.warnings.append(
                f"{self.file}:{lineno}: Finish for request {rid} whose Receive is not in this "
                "file; no request event (kept for the same server's earlier log, if given)"
            )
            if len(self.orphan_finishes) < _ORPHANS_KEPT:
                self.orphan_finishes.setdefault(rid, at)
            else:
                self.orphans_over += 1
        elif request.finished is not None:
            self.warnings.append(
                f"{self.file}:{lineno}: request {rid} finished twice; kept the first"
            )
        elif at < request.received:
            self.warnings.append(
                f"{self.file}:{lineno}: request {rid} finishes before it was received; "
                "finish taken as the receive time"
            )
            request.finished = request.received
        else:
            request.finished = at

    def result(self, total_lines: int) -> ParseResult:
        self.unwrapped_args_end()
        if self.first is None or self.last is None:
            raise ParseError(
                self.file, 1, "expected SGLang log lines starting with [YYYY-MM-DD HH:MM:SS]"
            )
        self.dump_end()
        for first, lines in self.early_dumps:
            self.read_dump(first, self.first, lines, early=True)
        out = ParseResult(kind=KIND_SGLANG_LOG, warnings=self.clock.warnings() + self.warnings)
        if self.unplaced_batches:
            out.warnings.append(
                f"{self.file}: {len(self.unplaced_batches)} batch lines have no readable "
                f"[YYYY-MM-DD HH:MM:SS] prefix (lines {_first_lines(self.unplaced_batches)}); no "
                "time to place their samples at, so they were skipped"
            )
        if self.glued:
            out.warnings.append(
                f"{self.file}: {len(self.glued)} batch or request lines had other text before "
                f"their [YYYY-MM-DD HH:MM:SS] (a progress bar's redraw, a paste's prefix; lines "
                f"{_first_lines(self.glued)}); read from their [time] on, the text before it "
                "left out"
            )
        if self.orphans_over:
            out.warnings.append(
                f"{self.file}: {self.orphans_over} more Finish lines without their Receive than "
                f"the {_ORPHANS_KEPT} kept to pair with an earlier log of the same server"
            )
        if self.batch_overwritten:
            out.warnings.append(
                f"{self.file}: {self.batch_overwritten} batch lines shared their second with a "
                "later batch line of the same rank and kind (samples are kept one per second): "
                "the last line of each second was kept"
            )
        for key, per_second in self.series.items():
            # One server's log: its series are that server's, never merged with another
            # server's same-named ranks (TP0 of a prefill and of a decode server). A rotated
            # log is another file, so another series; the analysis combines them by time.
            block = SampleBlock(
                key=key,
                type="gauge",
                help="read from SGLang server log batch lines",
                origin=self.file,
            )
            for second in sorted(per_second):
                block.ts_ms.append(second)
                block.values.append(per_second[second])
            out.samples.append(block)
        unfinished = 0
        for request in self.requests.values():
            unfinished += request.finished is None
            out.events.append(
                EventRecord(
                    kind=EventKind.REQUEST,
                    lane=Lane.REQUESTS,
                    at=request.received,
                    ends_at=request.finished,
                    key=request.rid,
                    title=f"request {request.rid[:12]}",
                    attrs={
                        "rid": request.rid,
                        "finished": request.finished is not None,
                        "receive_line": request.line,
                    },
                    line=request.line,
                )
            )
        for error, copies in _fold_rank_copies(self.errors):
            kept = error.body_lines()
            body = "\n".join(kept).replace("```", "` ` `")
            symptom = lifecycle.symptom_of(kept, error.context)
            attrs: dict[str, object] = {"symptom": symptom.value} if symptom is not None else {}
            if error.repeats:
                body += repeats.note(error)
                attrs["repeats"] = error.repeats
            if error.rids:
                attrs["rids"] = list(error.rids)
            if copies:
                body += (
                    f"\n\n(the same error on {len(copies)} more line(s) within a second, as "
                    f"each rank logs it: lines {_first_lines(copies)})"
                )
                attrs["copies"] = len(copies)
            out.events.append(
                EventRecord(
                    kind=EventKind.LOG_ERROR,
                    lane=Lane.SERVER,
                    at=error.at or self.first,
                    # (never before its start: the database holds ends_at >= at)
                    ends_at=(
                        max(error.last_at, error.at or self.first)
                        if error.repeats and error.last_at
                        else None
                    ),
                    key=f"{self.file}:{error.line}",
                    title=error.headline(),
                    body=f"```\n{body}\n```",
                    attrs=attrs,
                    line=error.line,
                )
            )
        for held in self.notice_events:
            error = held.error
            notice: dict[str, object] = {"notice": held.kind, "lines": error.repeats + 1}
            if held.kind == "retract":
                notice["retracted"] = held.count
            if held.rids:
                notice["rids"] = list(held.rids)
            body = "\n".join(error.lines)
            if error.repeats:
                body += repeats.note(error)
            start = error.at or self.first
            out.events.append(
                EventRecord(
                    kind=EventKind.LOG_ERROR,
                    lane=Lane.SERVER,
                    at=start,
                    ends_at=max(error.last_at, start) if error.repeats and error.last_at else None,
                    key=f"{self.file}:{error.line}",
                    title=error.title,
                    body=f"```\n{body}\n```",
                    attrs=notice,
                    line=error.line,
                )
            )
        out.events.extend(self.dumps)
        out.events.extend(self.life.events(self.first, self.last))
        first_iso, last_iso = self.first.isoformat(), self.last.isoformat()
        out.events.append(
            EventRecord(
                kind=EventKind.LOG_SPAN,
                lane=Lane.SERVER,
                at=self.first,
                ends_at=self.last,
                key=f"{self.file}:{first_iso}:{last_iso}",
                title=f"server log {self.file}",
                attrs={
                    "lines": total_lines,
                    "requests": len(self.requests),
                    "unfinished": unfinished,
                    **(
                        {"finishes": {r: t.isoformat() for r, t in self.orphan_finishes.items()}}
                        if self.orphan_finishes
                        else {}
                    ),
                    **({"zone_note": self.zone_note} if self.zone_note else {}),
                    # local times a DST change made ambiguous or impossible, and how they were
                    # read: checked against epoch-stamped metrics at load (services.clockcheck)
                    **(
                        {"clock": [w.as_attrs() for w in self.clock.windows]}
                        if self.clock.windows
                        else {}
                    ),
                },
                line=1,
            )
        )
        return out


_RANK_COPY_WINDOW = dt.timedelta(seconds=1)
# A number standing alone (``rank=3``, ``GPU 3``), not inside a quoted value (a rid of digits)
# nor inside a word (a hex rid, ``TP3``).
_NUMBERS_OUTSIDE_QUOTES = re.compile(r"""'[^']*'|"[^"]*"|(?<![\w.])\d+(?![\w])""")


def _number_mark(match: re.Match[str]) -> str:
    text = match.group(0)
    return text if text[0] in "'\"" else "#"


def _fold_rank_copies(errors: list[_Error]) -> list[tuple[_Error, list[int]]]:
    """The errors, each with the lines of its copies folded into it: the same headline
    (numbers aside: ``rank=3``, ``TP3``) within a second of the first, as every TP/DP rank of
    one server logs the same watchdog timeout or failed transfer. One incident, one event."""
    out: list[tuple[_Error, list[int]]] = []
    open_: dict[str, tuple[_Error, list[int]]] = {}
    for error in errors:
        key = _NUMBERS_OUTSIDE_QUOTES.sub(_number_mark, error.headline())
        held = open_.get(key)
        if (
            held is not None
            and error.at is not None
            and held[0].at is not None
            and abs(error.at - held[0].at) <= _RANK_COPY_WINDOW
        ):
            held[1].append(error.line)
            for rid in error.rids:  # (each rank's watchdog names its own batch)
                if rid not in held[0].rids and len(held[0].rids) < _NOTICE_RIDS:
                    held[0].rids.append(rid)
            continue
        entry: tuple[_Error, list[int]] = (error, [])
        open_[key] = entry
        out.append(entry)
    return out


def _first_lines(numbers: list[int], shown: int = 5) -> str:
    """``12, 40, 41, ...``: the first line numbers of a warning."""
    more = "" if len(numbers) <= shown else ", ..."
    return ", ".join(map(str, numbers[:shown])) + more


def parse_sglang_log(data: bytes, ctx: ParseContext) -> ParseResult:
    """Parse an SGLang server log into batch samples, requests, errors and the logged span."""
    lines = decode_lines(data, ctx.name)
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line
    lines, shipped, shipper = logprefix.unwrap_timed(lines, ctx.name)  # a shipper's prefixes
    zone_note = ""
    if shipped:
        ctx, zone_note = _zone_from_shipper(lines, shipped, shipper, ctx)
    parser = _LogParser(ctx)
    if zone_note:
        parser.warnings.append(zone_note)
        parser.zone_note = zone_note
    for lineno, raw in enumerate(lines, 1):
        parser.line(raw, lineno)
    return parser.result(len(lines))


def _zone_from_shipper(
    lines: list[str], shipped: list[tuple[dt.datetime, int]], shipper: str, ctx: ParseContext
) -> tuple[ParseContext, str]:
    """The context to read the log's naive ``[time]`` in, and a warning when it is not the
    incident's zone: a shipper's zoned time on the same lines shows the server clock's offset
    (``docker logs -t`` in UTC beside a server whose clock ran in UTC, for an incident in
    America/Los_Angeles, put every line 8 hours off)."""
    pairs: list[tuple[tuple[int, ...], dt.datetime]] = []
    for when, lineno in shipped[:5000]:
        match = _PREFIX_RE.match(lines[lineno - 1])
        if match is not None:
            pairs.append((tuple(map(int, match.groups()[:6])), when))
    if not pairs:
        return ctx, ""
    # Does the incident's zone already read them right? (It also knows DST changes.)
    same = sum(
        logprefix.clock_offset([(fields, when)]) == when.astimezone(ctx.tz).utcoffset()
        for fields, when in pairs
    )
    if same >= logprefix.MOST * len(pairs):
        return ctx, ""
    offset = logprefix.clock_offset(pairs)
    zone = zone_name(ctx.tz)
    first = shipped[0][1]
    if offset is None:
        return ctx, (
            f"{ctx.name}:{first}: the zoned times a shipper ({shipper}) put before the lines "
            "do not match the "
            f"server's own [time] read in the incident's zone ({zone}), nor any one UTC offset: "
            f"the log is read in {zone}; check its times against the other evidence"
        )
    tz = dt.timezone(offset)
    return replace(ctx, tz=tz), (
        f"{ctx.name}:{first}: the zoned times a shipper ({shipper}) put before the lines put "
        "the server's "
        f"own [time] at {zone_name(tz)} on {len(pairs)} line(s), not in the incident's zone "
        f"({zone}): the log is read at {zone_name(tz)}"
    )


def looks_like_sglang_log(name: str, head: bytes) -> bool:
    """True when one of the first lines opens with a ``[YYYY-MM-DD HH:MM:SS ...]`` prefix
    (after a log shipper's prefix, if any)."""
    # (every line of the head: a log may open with a hundred lines of NCCL or CUDA output)
    lines = logprefix.unwrap(head_text(head).splitlines(), strict=False)
    return any(_PREFIX_RE.match(line) for line in lines)


# SGLang's own records, recognised without a [YYYY-MM-DD HH:MM:SS] before them: an older
# SGLang's "[16:43:29 TP0] Prefill batch. ..." (the time of day alone), a log kept without any
# time ("Prefill batch, #new-seq: 1, ..."), or a logging format of the team's own.
_SGLANG_RECORD_RE = re.compile(
    r"(?:(?:Prefill|Decode) batch[.,] #|Receive: obj=|Finish: obj=|server_args=ServerArgs\()"
)
_TIME_OF_DAY_RE = re.compile(r"\[\d{2}:\d{2}:\d{2}(?:[,.]\d{1,6})?(?: [^\]\s]+)*\] ?")


def undated_sglang_log(head: bytes) -> str | None:
    """How the SGLang records of a log that is not in SGLang's dated format are stamped, in
    words, or None when the head holds no SGLang record: such a log cannot be placed on a
    timeline, and saying so beats "not recognised"."""
    lines = logprefix.unwrap(head_text(head).splitlines()[:200], strict=False)
    if any(_PREFIX_RE.match(line) for line in lines):
        return None  # SGLang's own dated layout: not this case
    for line in lines:
        record = _SGLANG_RECORD_RE.search(line)
        if record is None:
            continue
        before = line[: record.start()]
        if not before.strip():
            return "no time before them"
        if _TIME_OF_DAY_RE.fullmatch(before):
            return f"the time of day alone before them ({before.strip()})"
        return f"a layout of their own before them ({before.strip()[:80]})"
    return None
