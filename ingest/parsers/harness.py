"""Harness results: JUnit XML and JSON Lines runs (lm-evaluation-harness: :mod:`.lm_eval`).

Pure: bytes in, :class:`ParseResult` out. Each test case becomes one ``harness_run`` event; a
green harness across the incident window is what rules out model quality, so status and score
are kept as plain attrs.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

from evidence.vocabulary import EventKind, HarnessStatus, Lane

from . import jsontext
from .text import decode, head_text
from .timestamps import LocalTimeError, TimeError, default_time, parse_iso, parse_rfc1123
from .types import (
    EventRecord,
    ParseContext,
    ParseError,
    ParseResult,
)

KIND_JUNIT = "junit_xml"
KIND_HARNESS_JSONL = "harness_jsonl"

JSONL_STATUSES = tuple(
    str(s)
    for s in (HarnessStatus.PASS, HarnessStatus.FAIL, HarnessStatus.ERROR, HarnessStatus.SKIPPED)
)
_JSONL_FIELDS = {"ts", "suite", "case", "status", "score", "threshold", "time_s", "message"}
_MESSAGE_MAX = 500
_TIME_MAX_S = 7 * 86_400  # a test case's time beyond this is more likely another unit
_DETAIL_MAX = 8000
_TIME_EXAMPLE = "an ISO 8601 time such as 2026-11-20T08:00:00-08:00"
_DTD_RE = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


# --- shared -------------------------------------------------------------------------------------


# RFC 1123, as JavaScript's Date.toUTCString() writes it (mocha's built-in xunit reporter):
# "Fri, 04 Dec 2026 15:26:45 GMT".
_RFC1123_RE = re.compile(r"[A-Z][a-z]{2}, \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}\b")
# What producers write for "no time": the Unix epoch in the machine's zone (GoogleTest's
# disabled suites, jest-junit's suite that failed to load) and year 1 (unittest-xml-reporting's
# class-setup errors).
_NO_TIME_RE = re.compile(r"\s*(?:0{0,3}1-01-01|1970-01-01|1969-12-31)[T ]")


def _parse_time(value: str, ctx: ParseContext, line: int) -> dt.datetime | None:
    """ISO 8601 (``Z`` or an offset; naive means ``ctx.tz``) or RFC 1123 as aware UTC; None if
    unreadable.

    A naive time that a daylight-saving change makes ambiguous is a ParseError at ``line``.
    """
    if not value.strip():
        return None
    if _RFC1123_RE.match(value.strip()):
        try:
            return parse_rfc1123(value)
        except TimeError:
            return None
    try:
        return parse_iso(value, ctx.tz)
    except LocalTimeError as exc:
        raise ParseError(ctx.name, line, str(exc)) from None
    except TimeError:
        return None


def _unique_key(key: str, seen: dict[str, int]) -> str:
    # The loader upserts on (kind, key): two runs of one case at one time must not collapse.
    count = seen.get(key, 0) + 1
    seen[key] = count
    return key if count == 1 else f"{key}#{count}"


def _short(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…"


# --- JUnit XML ----------------------------------------------------------------------------------


@dataclass
class _Node:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[_Node] = field(default_factory=list)
    text: list[str] = field(default_factory=list)


def looks_like_junit(name: str, head: bytes) -> bool:
    """True when ``head`` is XML whose root looks like a JUnit ``testsuites``/``testsuite``."""
    text = head_text(head).lstrip(" \t\r\n")
    return text.startswith("<") and re.search(r"<testsuites?[\s>/]", text) is not None


def parse_junit(data: bytes, ctx: ParseContext) -> ParseResult:
    """JUnit XML: one ``harness_run`` event per testcase, at its suite's ``timestamp``."""
    text = decode(data, ctx.name)
    dtd = _DTD_RE.search(text)
    if dtd:
        line = text.count("\n", 0, dtd.start()) + 1
        raise ParseError(
            ctx.name,
            line,
            f"JUnit XML must not contain a <!{dtd.group(1).upper()}> declaration "
            "(entity expansion is refused); expected plain <testsuites>/<testsuite> XML",
        )
    root = _parse_xml(text, ctx.name)
    if root.tag not in ("testsuites", "testsuite"):
        raise ParseError(
            ctx.name, root.line, f"expected a <testsuites> or <testsuite> root, found <{root.tag}>"
        )
    result = ParseResult(kind=KIND_JUNIT)
    producer = _utc_producer(root)
    if producer and ctx.tz != dt.UTC:
        # Its zone-less times are UTC (it writes toISOString() without the "Z"), not the
        # incident's local times.
        ctx = dataclasses.replace(ctx, tz=dt.UTC)
        result.warnings.append(
            f"{ctx.name}: written by {producer}, whose times carry no zone but are UTC: "
            "read as UTC, not in the incident's time zone"
        )
    seen: dict[str, int] = {}
    times = _suite_times(root, ctx)
    file_time = min((t for t in times.values() if t is not None), default=None)
    _walk_suites(root, None, file_time, times, ctx, result, seen)
    _declared_totals(root, file_time or default_time(ctx), ctx, result, seen)
    return result


def _utc_producer(root: _Node) -> str:
    """The producer, by the names it gives by default, when it writes UTC without a zone:
    jest-junit (``<testsuites name="jest tests">``) and mocha-junit-reporter (``<testsuites
    name="Mocha Tests">`` around a ``Root Suite``), both ``new Date().toISOString()`` with the
    "Z" cut off. Others (GoogleTest, unittest-xml-reporting, Robot) write local time."""
    name = root.attrs.get("name", "")
    suites = [c.attrs.get("name", "") for c in root.children if c.tag == "testsuite"]
    if root.tag == "testsuites" and name == "jest tests":
        return "jest-junit"
    if root.tag == "testsuites" and name == "Mocha Tests" and "Root Suite" in suites:
        return "mocha-junit-reporter"
    return ""


def _suite_times(root: _Node, ctx: ParseContext) -> dict[int, dt.datetime | None]:
    """Each suite's own ``timestamp`` (keyed by ``id(node)``, in document order), read once;
    None where it stands for no time (the epoch, year 1). An unreadable one is a ParseError."""
    times: dict[int, dt.datetime | None] = {}

    def visit(node: _Node) -> None:
        stamp = node.attrs.get("timestamp")
        if stamp is not None and _NO_TIME_RE.match(stamp):
            times[id(node)] = None
        elif stamp is not None:
            at = _parse_time(stamp, ctx, node.line)
            if at is None:
                raise ParseError(
                    ctx.name,
                    node.line,
                    f"<{node.tag}> timestamp {stamp!r} is not a time: expected {_TIME_EXAMPLE}",
                )
            times[id(node)] = at
        for child in node.children:
            if child.tag in ("testsuite", "testsuites"):
                visit(child)

    visit(root)
    return times


def _declared_totals(
    root: _Node,
    at: dt.datetime | None,
    ctx: ParseContext,
    result: ParseResult,
    seen: dict[str, int],
) -> None:
    """The file's declared counts (the root's ``tests``, ``failures``, ``errors``) against its
    test cases: nothing is lost without a word. Errors or failures declared beyond the cases
    (a Go package that failed to build, a suite that failed to load) are one error run of
    their own, so a green harness is not read from a file that says otherwise."""
    counted = {HarnessStatus.FAIL: 0, HarnessStatus.ERROR: 0}
    cases = 0
    for event in result.events:
        cases += 1
        status = event.attrs["status"]
        if status in counted:
            counted[status] += 1
    declared: dict[str, int] = {}
    for name in ("tests", "failures", "errors"):
        try:
            declared[name] = int(root.attrs.get(name, "").strip())
        except ValueError:
            continue
    # Failures and errors together: producers split them differently (mocha's xunit reporter
    # counts its failures as errors).
    missing = {
        "tests": declared.get("tests", 0) - cases,
        "failures or errors": declared.get("failures", 0)
        + declared.get("errors", 0)
        - counted[HarnessStatus.FAIL]
        - counted[HarnessStatus.ERROR],
    }
    if not any(n > 0 for n in missing.values()):
        return
    said = ", ".join(f"{n} {name}" for name, n in missing.items() if n > 0)
    result.warnings.append(
        f"{ctx.name}:{root.line}: <{root.tag}> declares {said} more than its <testcase> "
        "elements show (e.g. a package that failed to build, a suite that failed to load, or "
        "skipped tests the producer does not list)"
    )
    unlisted = missing["failures or errors"]
    if unlisted <= 0 or at is None:
        return
    suite = root.attrs.get("name", "").strip() or ctx.name
    result.events.append(
        _junit_run(
            at=at,
            key=_unique_key(f"{suite}/(declared)@{at.isoformat()}", seen),
            title=f"{suite}: {unlisted} failures or errors without a test case error",
            suite=suite,
            case="(declared without a test case)",
            classname="",
            status=HarnessStatus.ERROR,
            time_s=None,
            message=f"the file declares {said} more than its test cases show",
            body="",
            line=root.line,
        )
    )


def _junit_run(
    *,
    at: dt.datetime,
    key: str,
    title: str,
    suite: str,
    case: str,
    classname: str,
    status: str,
    time_s: float | None,
    message: str,
    body: str,
    line: int,
) -> EventRecord:
    """One JUnit run as a ``harness_run`` event (JUnit gives no score or threshold)."""
    return EventRecord(
        kind=EventKind.HARNESS_RUN,
        lane=Lane.HARNESS,
        at=at,
        key=key,
        title=title,
        body=body,
        attrs={
            "suite": suite,
            "case": case,
            "classname": classname,
            "status": status,
            "time_s": time_s,
            "message": message,
            "score": None,
            "threshold": None,
        },
        line=line,
    )


def _parse_xml(text: str, name: str) -> _Node:
    parser = expat.ParserCreate(encoding="UTF-8")
    stack: list[_Node] = []
    roots: list[_Node] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        node = _Node(tag, attrs, parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(node)
        else:
            roots.append(node)
        stack.append(node)

    def end(tag: str) -> None:
        stack.pop()

    def chars(data: str) -> None:
        if stack:
            stack[-1].text.append(data)

    def refuse(*args: object) -> None:
        # Belt and braces behind the textual check: never expand declared entities.
        raise ParseError(name, parser.CurrentLineNumber, "DTD declarations are refused")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    try:
        parser.Parse(text.encode("utf-8"), True)
    except expat.ExpatError as exc:
        raise ParseError(
            name, exc.lineno, f"malformed XML: {expat.ErrorString(exc.code)} (column {exc.offset})"
        ) from None
    if not roots:
        raise ParseError(name, 0, "expected a <testsuites> or <testsuite> element")
    return roots[0]


def _walk_suites(
    node: _Node,
    inherited: dt.datetime | None,
    file_time: dt.datetime | None,
    times: dict[int, dt.datetime | None],
    ctx: ParseContext,
    result: ParseResult,
    seen: dict[str, int],
) -> None:
    stamp = node.attrs.get("timestamp")
    at = times.get(id(node), inherited)
    if stamp is not None and at is None:
        # "No time" written as a time: the suite ran with the rest of the file.
        at = inherited or file_time
        result.warnings.append(
            f"{ctx.name}:{node.line}: <{node.tag}> timestamp {stamp!r} stands for no time; "
            + (
                f"read as {at.isoformat()} (the file's other suites)"
                if at is not None
                else "read as the file's default time"
            )
        )
    if node.tag == "testsuite":
        _read_suite(node, at, ctx, result, seen)
    for child in node.children:
        if child.tag in ("testsuite", "testsuites"):
            _walk_suites(child, at, file_time, times, ctx, result, seen)


def _read_suite(
    suite: _Node,
    at: dt.datetime | None,
    ctx: ParseContext,
    result: ParseResult,
    seen: dict[str, int],
) -> None:
    suite_name = suite.attrs.get("name", "").strip() or "(unnamed suite)"
    cases = [c for c in suite.children if c.tag == "testcase"]
    if not cases:
        return
    if at is None:
        at = default_time(ctx)
    if at is None:
        raise ParseError(
            ctx.name,
            suite.line,
            f"testsuite {suite_name!r} has no timestamp attribute (or one that stands for no "
            "time, such as the epoch): expected "
            'timestamp="2026-11-20T08:00:00" on the suite, or a default time for the file',
        )
    iso = at.isoformat()
    for case in cases:
        case_name = case.attrs.get("name", "").strip()
        if not case_name:
            raise ParseError(ctx.name, case.line, "expected a name attribute on <testcase>")
        classname = case.attrs.get("classname", "").strip()
        status, message, detail = _case_status(case)
        time_s = _case_time(case, ctx)
        if time_s is not None and time_s > _TIME_MAX_S:
            result.warnings.append(
                f"{ctx.name}:{case.line}: testcase {case_name!r} took {time_s:g} s by its time "
                "attribute (over a week): the producer may write milliseconds or nanoseconds; "
                "kept as written"
            )
        qualified = f"{classname}.{case_name}" if classname else case_name
        key = _unique_key(f"{suite_name}/{qualified}@{iso}", seen)
        result.events.append(
            _junit_run(
                at=at,
                key=key,
                title=f"{suite_name}: {case_name} {status}",
                suite=suite_name,
                case=case_name,
                classname=classname,
                status=status,
                time_s=time_s,
                message=message,
                body=_case_body(message, detail),
                line=case.line,
            )
        )


# A case that never ran, said by an attribute rather than a <skipped> child: GoogleTest's
# status="notrun" result="suppressed" (DISABLED_ tests), CTest's status="disabled".
_NOT_RUN_STATUSES = frozenset({"notrun", "not run", "disabled", "skipped", "skip"})
_NOT_RUN_RESULTS = frozenset({"suppressed", "skipped"})
# Maven Surefire's reruns of a test that passed in the end (rerunFailingTestsCount).
_RERUN_TAGS = frozenset({"flakyFailure", "flakyError"})


def _case_status(case: _Node) -> tuple[str, str, str]:
    """(status, short message, full detail such as a traceback); the worst child wins."""
    for tag, status in (
        ("error", HarnessStatus.ERROR),
        ("failure", HarnessStatus.FAIL),
        ("skipped", HarnessStatus.SKIPPED),
    ):
        for child in case.children:
            if child.tag == tag:
                detail = "".join(child.text).strip()
                message = child.attrs.get("message", "").strip() or detail
                return status, _short(message), detail[:_DETAIL_MAX]
    flaky = [c for c in case.children if c.tag in _RERUN_TAGS]
    if flaky:
        # Surefire's rerun: it failed, then passed. A pass, and the failures say so.
        first = flaky[0]
        message = first.attrs.get("message", "").strip() or "".join(first.text).strip()
        return (
            HarnessStatus.PASS,
            _short(f"flaky: passed after {len(flaky)} failed run(s): {message}"),
            "",
        )
    said = case.attrs.get("status", "").strip().lower()
    result = case.attrs.get("result", "").strip().lower()
    if said in _NOT_RUN_STATUSES or result in _NOT_RUN_RESULTS:
        # Never ran: no pass (a green harness rules out model quality only by what ran).
        words = " ".join(f'{k}="{case.attrs[k]}"' for k in ("status", "result") if k in case.attrs)
        return HarnessStatus.SKIPPED, f"not run ({words})", ""
    return HarnessStatus.PASS, "", ""


def _case_body(message: str, detail: str) -> str:
    if not detail or detail == message:
        return _fenced(message) if message else ""
    return f"{message}\n\n{_fenced(detail)}" if message else _fenced(detail)


def _fenced(text: str) -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}\n{text}\n{fence}"


def _case_time(case: _Node, ctx: ParseContext) -> float | None:
    raw = case.attrs.get("time")
    if raw is None or not raw.strip():
        return None
    try:
        value = float(raw.replace(",", ""))
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ParseError(
            ctx.name, case.line, f"testcase time {raw!r} is not a number of seconds such as 1.25"
        )
    return value


# --- JSON Lines ---------------------------------------------------------------------------------


def looks_like_harness_jsonl(name: str, head: bytes) -> bool:
    """True when the first non-blank line is a JSON object with ts, suite, case and status."""
    text = head_text(head)
    for line in text.splitlines():
        if not line.strip():
            continue
        stripped = line.strip()
        if not stripped.startswith("{"):
            return False
        return all(f'"{k}"' in stripped for k in ("ts", "suite", "case", "status"))
    return False


def parse_harness_jsonl(data: bytes, ctx: ParseContext) -> ParseResult:
    """One run per line: ``{"ts", "suite", "case", "status", "score", "threshold"}``."""
    text = decode(data, ctx.name)
    result = ParseResult(kind=KIND_HARNESS_JSONL)
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        result.events.append(_jsonl_event(raw, number, ctx, seen))
    return result


def _jsonl_event(raw: str, number: int, ctx: ParseContext, seen: dict[str, int]) -> EventRecord:
    def fail(message: str) -> ParseError:
        return ParseError(ctx.name, number, message)

    try:
        obj = jsontext.loads(raw, ctx.name)
    except json.JSONDecodeError as exc:
        raise fail(f"expected one JSON object per line: {exc.msg} (column {exc.colno})") from None
    except ParseError as exc:  # too deep, or a number too long: at this line of the file
        raise fail(exc.message) from None
    if not isinstance(obj, dict):
        raise fail(f"expected a JSON object, found {type(obj).__name__}")

    def text_field(key: str) -> str:
        value = obj.get(key)
        if value is None:
            raise fail(f"field {key!r} is missing")
        if not isinstance(value, str) or not value.strip():
            raise fail(f"field {key!r} must be a non-empty string, found {value!r}")
        return value.strip()

    def number_field(key: str) -> float | None:
        value = obj.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail(f"field {key!r} must be a number such as 0.93, found {value!r}")
        if not math.isfinite(value):
            raise fail(f"field {key!r} must be a finite number, found {value!r}")
        return float(value)

    ts = text_field("ts")
    at = _parse_time(ts, ctx, number)
    if at is None:
        raise fail(f"field 'ts' is {ts!r}: expected {_TIME_EXAMPLE}")
    suite = text_field("suite")
    case = text_field("case")
    status = text_field("status").lower()
    if status not in JSONL_STATUSES:
        raise fail(f"field 'status' is {status!r}: expected one of {', '.join(JSONL_STATUSES)}")
    score = number_field("score")
    threshold = number_field("threshold")
    extra = {k: v for k, v in obj.items() if k not in _JSONL_FIELDS}
    message = obj.get("message")
    title = f"{suite}: {case} {status}"
    if score is not None:
        title += f" (score {score:g}" + (f" vs {threshold:g})" if threshold is not None else ")")
    return EventRecord(
        kind=EventKind.HARNESS_RUN,
        lane=Lane.HARNESS,
        at=at,
        key=_unique_key(f"{suite}/{case}@{at.isoformat()}", seen),
        title=title,
        attrs={
            "suite": suite,
            "case": case,
            "status": status,
            "score": score,
            "threshold": threshold,
            "time_s": number_field("time_s"),
            "message": _short(message) if isinstance(message, str) else "",
            "extra": _finite_json(extra),
        },
        line=number,
    )


def _finite_json(value: Any) -> Any:
    """Replace NaN/Infinity (which Python's json reads but jsonb refuses) with None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_json(v) for v in value]
    return value
