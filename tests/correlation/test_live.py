"""Live intervals and deployment on hand-built starts: what went live when, what had no effect,
what was never deployed, and what the engine says when the log cannot show it."""

from __future__ import annotations

import datetime as dt
import itertools

from tests.correlation.builders import at, change, healthy_metrics, span
from timeline.correlation.engine import analyze
from timeline.correlation.types import Inputs, LogSymptom, ServerStart

_refs = itertools.count(50_000)

ARGS = {
    "chunked_prefill_size": "8192",
    "enable_mixed_chunk": "False",
    "mem_fraction_static": "0.85",
    "max_running_requests": "None",
    "max_prefill_tokens": "16384",
    "schedule_policy": "'fcfs'",
}


def start(when: dt.datetime, line: int, **changed: str) -> ServerStart:
    return ServerStart(next(_refs), when, line, {**ARGS, **changed}, where="server.log")


def blind(when: dt.datetime, line: int) -> ServerStart:
    return ServerStart(next(_refs), when, line, {}, where="server.log")


def wedge_after(h: int, m: int = 0) -> tuple:
    return healthy_metrics(at(6), at(20), wedges=((at(h, m), at(20)),))


def test_a_change_goes_live_at_the_first_start_that_shows_it_not_when_recorded():
    inputs = Inputs(
        changes=(change("--enable-mixed-chunk", None, "true", at(9, 30), "doc:D@1", scope="flag"),),
        starts=(
            start(at(7), 1),
            start(at(11), 90),
            start(at(14, 5), 812, enable_mixed_chunk="True"),
        ),
        series=wedge_after(15),
        log_spans=(span(at(7), at(20)),),
    )

    result = analyze(inputs)

    top = result.suspects[0]
    assert top.change.key == "--enable-mixed-chunk"
    assert top.live is not None and top.live.live_at == at(14, 5)
    assert top.live.live_where == "server.log:812"
    assert top.reasons[0] == (
        "went live at the start at 2026-11-20 14:05 UTC (server.log:812): False ran before, "
        "True after"
    )
    assert result.last_good == at(11)
    assert any(
        "recorded as true at 2026-11-20 09:30 UTC, but the server ran it only from "
        "2026-11-20 14:05 UTC" in line
        for line in result.drift
    )


def test_a_flag_removed_while_at_its_default_is_no_effective_change():
    inputs = Inputs(
        changes=(
            change("--chunked-prefill-size", None, None, at(12), "doc:D@2", scope="flag"),
            change("--schedule-policy", None, "lpm", at(12), "doc:D@2", scope="flag"),
        ),
        starts=(start(at(7), 1), start(at(13), 400, schedule_policy="'lpm'")),
        series=wedge_after(14),
        log_spans=(span(at(7), at(20)),),
    )

    result = analyze(inputs)

    assert [s.change.key for s in result.suspects] == ["--schedule-policy"]
    removed = next(e for e in result.excluded if e.change.key == "--chunked-prefill-size")
    assert "no effective change, the server still ran 8192 (its default)" in removed.reason


def test_an_ambiguous_prefix_stays_unmapped_and_a_unique_one_maps():
    inputs = Inputs(
        changes=(
            change("--max", None, "64", at(12), "doc:D@2", scope="flag"),
            change("--mem-frac", None, "0.95", at(12), "doc:D@2", scope="flag"),
        ),
        starts=(start(at(7), 1), start(at(13), 400, mem_fraction_static="0.95")),
        series=wedge_after(14),
        log_spans=(span(at(7), at(20)),),
    )

    result = analyze(inputs)

    assert [s.live.key for s in result.suspects if s.live] == ["mem_fraction_static"]
    assert result.suspects[0].sources[0] == "doc:D@2"  # the doc's --mem-frac explains it
    unmapped = next(e for e in result.excluded if e.change.key == "--max")
    assert "documented, not deployed" in unmapped.reason


def test_starts_without_a_server_args_line_are_read_from_the_records_and_said_to_be():
    inputs = Inputs(
        changes=(
            change("--chunked-prefill-size", None, "8192", at(6), "doc:D@1", scope="flag"),
            change("--chunked-prefill-size", "8192", "16384", at(12), "doc:D@2", scope="flag"),
        ),
        starts=(blind(at(7), 1), blind(at(13), 400)),
        series=wedge_after(14),
        log_spans=(span(at(7), at(20)),),
    )

    result = analyze(inputs)

    top = result.suspects[0]
    assert top.live is not None and top.live.assumed and top.live.live_at == at(13)
    assert top.reasons[0].startswith("assumed live from the start at 2026-11-20 13:00 UTC")
    assert any("logged no ServerArgs line" in w and "assumed" in w for w in result.warnings)


def test_a_crash_is_a_symptom_that_ends_the_good_run_but_never_a_suspect():
    crash = LogSymptom(next(_refs), at(14, 40), "crash", "RuntimeError: CUDA error")
    inputs = Inputs(
        changes=(change("--enable-mixed-chunk", None, "true", at(13), "doc:D@1", scope="flag"),),
        starts=(
            start(at(7), 1),
            start(at(14), 500, enable_mixed_chunk="True"),
            start(at(14, 45), 600, enable_mixed_chunk="True"),
        ),
        errors=(crash,),
        series=healthy_metrics(at(7), at(18)),
        log_spans=(span(at(7), at(18)),),
    )

    result = analyze(inputs)

    assert result.first_bad == at(14, 40)
    assert [s.change.key for s in result.suspects] == ["--enable-mixed-chunk"]
    assert any("a crash is a symptom, never a cause" in w for w in result.warnings)


def test_without_a_logged_start_before_first_bad_the_records_are_ranked_as_before():
    inputs = Inputs(
        changes=(change("--enable-mixed-chunk", None, "true", at(9), "doc:D@1", scope="flag"),),
        starts=(start(at(16), 1),),
        series=wedge_after(12),
        log_spans=(span(at(6), at(20)),),
    )

    result = analyze(inputs)

    assert result.suspects[0].live is None and result.restarts == ()
    assert any("before the first logged server start" in w for w in result.warnings)
