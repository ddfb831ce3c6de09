"""Harness results: JUnit XML, JSON Lines and lm-evaluation-harness results."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from evidence.vocabulary import EventKind, Lane
from ingest.parsers.harness import (
    looks_like_harness_jsonl,
    looks_like_junit,
    parse_harness_jsonl,
    parse_junit,
)
from ingest.parsers.lm_eval import looks_like_lm_eval, parse_lm_eval
from ingest.parsers.types import (
    ParseContext,
    ParseError,
)
from tests.parsers.golden import (
    assert_golden,  # noqa: E402
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "harness"
LA = ZoneInfo("America/Los_Angeles")
UTC = dt.UTC
JUNIT = "junit_stability_and_smoke.xml"
LM_EVAL = "results_2026-11-20T12-00-13.json"


def _ctx(name: str, default_time: dt.datetime | None = None) -> ParseContext:
    return ParseContext(name=name, tz=LA, default_time=default_time)


def _junit(body: str, suite_attrs: str = 'timestamp="2026-11-20T08:00:00"') -> bytes:
    return (
        f'<?xml version="1.0"?>\n<testsuites>\n<testsuite name="s" {suite_attrs}>\n'
        f"{body}\n</testsuite>\n</testsuites>\n"
    ).encode()


# --- JUnit --------------------------------------------------------------------------------------


def test_junit_matches_its_golden_file() -> None:
    result = parse_junit((FIXTURES / JUNIT).read_bytes(), _ctx(f"harness/{JUNIT}"))
    assert_golden(result, FIXTURES / f"{JUNIT}.expected.json")


def test_junit_reads_pass_fail_error_and_skipped() -> None:
    result = parse_junit((FIXTURES / JUNIT).read_bytes(), _ctx(JUNIT))
    assert result.kind == "junit_xml"
    statuses = {e.attrs["case"]: e.attrs["status"] for e in result.events}
    assert statuses == {
        "long_session_tool_calls": "pass",
        "parallel_agents_64": "pass",
        "gsm8k_subset": "pass",
        "chat_completion_roundtrip": "pass",
        "stream_finishes": "fail",
        "metrics_endpoint": "error",
        "tool_call_schema": "skipped",
    }
    failed = next(e for e in result.events if e.attrs["status"] == "fail")
    assert failed.title == "smoke: stream_finishes fail"
    assert failed.attrs["message"] == "stream did not finish within 180s"
    assert failed.attrs["time_s"] == 180.0
    assert failed.line == 18
    assert {(e.kind, e.lane) for e in result.events} == {(EventKind.HARNESS_RUN, Lane.HARNESS)}


def test_junit_naive_timestamp_is_in_the_context_zone_and_zulu_is_utc() -> None:
    result = parse_junit((FIXTURES / JUNIT).read_bytes(), _ctx(JUNIT))
    by_suite = {e.attrs["suite"]: e.at for e in result.events}
    assert by_suite["stability"] == dt.datetime(2026, 11, 20, 16, 0, tzinfo=UTC)
    assert by_suite["smoke"] == dt.datetime(2026, 11, 20, 16, 2, 11, tzinfo=UTC)
    first = result.events[0]
    assert first.key == (
        "stability/stability.agentic.long_session_tool_calls@2026-11-20T16:00:00+00:00"
    )


def test_junit_without_timestamp_uses_the_default_time_or_fails() -> None:
    data = _junit('<testcase classname="c" name="n"/>', suite_attrs="")
    default = dt.datetime(2026, 11, 20, 9, 0, tzinfo=LA)
    [event] = parse_junit(data, _ctx("j.xml", default)).events
    assert event.at == dt.datetime(2026, 11, 20, 17, 0, tzinfo=UTC)
    with pytest.raises(ParseError) as err:
        parse_junit(data, _ctx("j.xml"))
    assert err.value.line == 3
    assert "no timestamp attribute" in err.value.message


def test_junit_suite_inherits_the_timestamp_of_its_testsuites() -> None:
    data = (
        b'<testsuites timestamp="2026-11-20T10:00:00Z"><testsuite name="s">'
        b'<testcase name="a"/></testsuite></testsuites>'
    )
    [event] = parse_junit(data, _ctx("j.xml")).events
    assert event.at == dt.datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
    assert event.key == "s/a@2026-11-20T10:00:00+00:00"


def test_junit_repeated_case_keys_stay_distinct() -> None:
    data = _junit('<testcase classname="c" name="n"/>\n<testcase classname="c" name="n"/>')
    keys = [e.key for e in parse_junit(data, _ctx("j.xml")).events]
    assert keys == ["s/c.n@2026-11-20T16:00:00+00:00", "s/c.n@2026-11-20T16:00:00+00:00#2"]


def test_junit_entity_declarations_are_refused_before_parsing() -> None:
    bomb = (
        b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
        b' <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">\n]>\n'
        b"<testsuite><testcase name='&lol2;'/></testsuite>\n"
    )
    with pytest.raises(ParseError) as err:
        parse_junit(bomb, _ctx("bomb.xml"))
    assert err.value.line == 2
    assert "DOCTYPE" in err.value.message


def test_junit_malformed_xml_reports_the_parser_line() -> None:
    data = _junit('<testcase classname="c" name="n">\n<failure message="x">\n</testcase>')
    with pytest.raises(ParseError) as err:
        parse_junit(data, _ctx("bad.xml"))
    assert err.value.line == 6
    assert err.value.message.startswith("malformed XML: mismatched tag")


def test_junit_bad_timestamp_and_time_are_errors() -> None:
    with pytest.raises(ParseError, match=r":3: <testsuite> timestamp 'noon' is not a time"):
        parse_junit(_junit('<testcase name="n"/>', 'timestamp="noon"'), _ctx("j.xml"))
    with pytest.raises(ParseError, match=r":4: testcase time 'fast' is not a number"):
        parse_junit(_junit('<testcase name="n" time="fast"/>'), _ctx("j.xml"))


def test_junit_wrong_root_is_an_error() -> None:
    with pytest.raises(ParseError, match=r"expected a <testsuites> or <testsuite> root"):
        parse_junit(b"<html><body/></html>", _ctx("page.xml"))


def test_junit_undecodable_bytes_are_a_parse_error() -> None:
    data = _junit('<testcase name="n"/>').replace(b'name="n"', b'name="caf\xe9"')
    with pytest.raises(ParseError, match=r":4: expected UTF-8"):
        parse_junit(data, _ctx("j.xml"))


def test_looks_like_junit() -> None:
    assert looks_like_junit(JUNIT, (FIXTURES / JUNIT).read_bytes()[:300])
    assert looks_like_junit("x", b"<testsuite name='a'>")
    assert not looks_like_junit("x.xml", b"<?xml version='1.0'?><project/>")


# --- JSON Lines ---------------------------------------------------------------------------------


def test_jsonl_reads_every_run_and_skips_blank_lines() -> None:
    result = parse_harness_jsonl((FIXTURES / "stability.jsonl").read_bytes(), _ctx("s.jsonl"))
    assert result.kind == "harness_jsonl"
    assert len(result.events) == 42
    assert {e.attrs["status"] for e in result.events} == {"pass"}
    first, last = result.events[0], result.events[-1]
    assert first.at == dt.datetime(2026, 11, 20, 16, 0, tzinfo=UTC)
    assert last.at == dt.datetime(2026, 11, 21, 2, 0, tzinfo=UTC)
    assert last.line == 43  # line 23 is blank
    assert first.key == "stability/agentic_long_session@2026-11-20T16:00:00+00:00"
    assert first.attrs == {
        "suite": "stability",
        "case": "agentic_long_session",
        "status": "pass",
        "score": 0.93,
        "threshold": 0.9,
        "time_s": None,
        "message": "",
        "extra": {"run_id": "stab-000"},
    }
    assert first.title == "stability: agentic_long_session pass (score 0.93 vs 0.9)"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"suite": "s", "case": "c", "status": "pass"}', "field 'ts' is missing"),
        ('{"ts": "2026-11-20T08:00:00Z", "case": "c", "status": "pass"}',
         "field 'suite' is missing"),
        ('{"ts": "soon", "suite": "s", "case": "c", "status": "pass"}', "field 'ts' is 'soon'"),
        ('{"ts": "2026-11-20T08:00:00Z", "suite": "s", "case": "c", "status": "ok"}',
         "field 'status' is 'ok': expected one of pass, fail, error"),
        ('{"ts": "2026-11-20T08:00:00Z", "suite": "s", "case": "c", "status": "pass", '
         '"score": "high"}', "field 'score' must be a number"),
        ('{"ts": "2026-11-20T08:00:00Z", "suite": "s", "case": "c", "status": "pass", '
         '"threshold": true}', "field 'threshold' must be a number"),
        ('{"ts": "2026-11-20T08:00:00Z", "suite": "s", "case": "c", "status": "pass", '
         '"score": NaN}', "field 'score' must be a finite number"),
        ('["not", "an", "object"]', "expected a JSON object, found list"),
        ('{"ts": "2026-11-20T08:00:00Z", "suite": ', "expected one JSON object per line"),
    ],
)  # fmt: skip
def test_jsonl_bad_line_names_its_line_and_field(line: str, message: str) -> None:
    good = '{"ts": "2026-11-20T08:00:00Z", "suite": "s", "case": "c", "status": "pass"}'
    data = f"{good}\n\n{line}\n".encode()
    with pytest.raises(ParseError) as err:
        parse_harness_jsonl(data, _ctx("runs.jsonl"))
    assert (err.value.file, err.value.line) == ("runs.jsonl", 3)
    assert message in err.value.message


def test_looks_like_harness_jsonl() -> None:
    assert looks_like_harness_jsonl("x", (FIXTURES / "stability.jsonl").read_bytes()[:200])
    assert not looks_like_harness_jsonl("x.jsonl", b'{"level": "info", "msg": "hi"}\n')
    assert not looks_like_harness_jsonl("x", b"[2026-11-20 08:00:00] Decode batch.\n")


# --- lm-evaluation-harness ----------------------------------------------------------------------


def test_lm_eval_matches_its_golden_file() -> None:
    result = parse_lm_eval((FIXTURES / LM_EVAL).read_bytes(), _ctx(f"harness/{LM_EVAL}"))
    assert_golden(result, FIXTURES / f"{LM_EVAL}.expected.json")


def test_lm_eval_one_scored_event_per_task_with_metrics_and_model() -> None:
    result = parse_lm_eval((FIXTURES / LM_EVAL).read_bytes(), _ctx(LM_EVAL))
    assert result.kind == "lm_eval_json"
    arc = next(e for e in result.events if e.attrs["task"] == "arc_challenge")
    assert arc.at == dt.datetime(2026, 11, 20, 20, 0, 13, 229153, tzinfo=UTC)
    assert arc.attrs["status"] == "scored"
    assert arc.attrs["model"] == "deepseek-ai/DeepSeek-V4"
    assert arc.attrs["metrics"] == {
        "acc,none": 0.8097269624573379,
        "acc_stderr,none": 0.011470228474919412,
        "acc_norm,none": 0.8302047781569966,
        "acc_norm_stderr,none": 0.010972280478539906,
    }
    assert arc.title == "lm-eval arc_challenge scored: acc,none 0.8097"


def test_lm_eval_without_date_needs_a_default_time() -> None:
    data = json.dumps({"results": {"gsm8k": {"exact_match,none": 0.9}}}).encode()
    default = dt.datetime(2026, 11, 20, 12, 0, tzinfo=LA)
    [event] = parse_lm_eval(data, _ctx("r.json", default)).events
    assert event.at == dt.datetime(2026, 11, 20, 20, 0, tzinfo=UTC)
    with pytest.raises(ParseError, match="expected 'date' as epoch seconds"):
        parse_lm_eval(data, _ctx("r.json"))


def test_lm_eval_invalid_json_and_missing_results_are_errors() -> None:
    with pytest.raises(ParseError) as err:
        parse_lm_eval(b'{\n  "results": {\n    "gsm8k": \n}', _ctx("r.json"))
    assert (err.value.line, err.value.message.startswith("invalid JSON")) == (4, True)
    with pytest.raises(ParseError, match="expected a 'results' object"):
        parse_lm_eval(b'{"date": 1795204813.2}', _ctx("r.json"))


def test_lm_eval_non_finite_metrics_become_null() -> None:
    data = b'{"results": {"t": {"acc,none": NaN, "acc_stderr,none": "N/A"}}, "date": 1795204813}'
    [event] = parse_lm_eval(data, _ctx("r.json")).events
    assert event.attrs["metrics"] == {"acc,none": None}
    assert event.title == "lm-eval t scored"


def test_looks_like_lm_eval() -> None:
    head = (FIXTURES / LM_EVAL).read_bytes()[:300]
    assert looks_like_lm_eval("anything.json", head)
    assert not looks_like_lm_eval("q.json", b'{"status":"success","data":{"result":[]}}')
