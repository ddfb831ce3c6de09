"""Live intervals and deployment on hand-built starts: what went live when, what had no effect,
what was never deployed, and what the engine says when the log cannot show it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools

from tests.correlation.builders import at, change, healthy_metrics, span
from timeline.correlation.engine import analyze
from timeline.correlation.types import Inputs, LogSymptom, Marks, ServerStart

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


def test_a_container_setting_no_server_args_line_shows_is_assumed_live_at_the_next_start():
    # A compose bump of the image (an end-to-end review, stop 29: it was "documented, not
    # deployed ... not a suspect" because the ServerArgs line, which cannot show an image, was
    # taken as the whole configuration). Like an env var, it goes live at the next start.
    inputs = Inputs(
        changes=(
            change(
                "services.sglang.image",
                "lmsysorg/sglang:v0.5.5",
                "lmsysorg/sglang:v0.5.6",
                at(12),
                "commit:9f3e",
                scope="file",
            ),
            change(
                "Docker image", None, "lmsysorg/sglang:v0.5.6", at(12), "doc:D@2", scope="table"
            ),
            change("--max", None, "64", at(12), "doc:D@2", scope="flag"),
        ),
        starts=(start(at(7), 1), start(at(13), 400)),
        series=wedge_after(14),
        log_spans=(span(at(7), at(20)),),
    )

    result = analyze(inputs)

    keys = {s.change.key: s for s in result.suspects}
    image = keys["services.sglang.image"]
    assert image.live is not None and image.live.assumed and image.live.live_at == at(13)
    assert image.reasons[0].startswith("assumed live from the start at 2026-11-20 13:00 UTC")
    assert image.live.live_where == "server.log:400"  # the start, though the value is assumed
    # A doc table's row is prose (mostly flags in words): the ServerArgs line still judges it.
    assert "Docker image" not in keys
    # A launch flag that names no ServerArgs field still did not run.
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


def test_the_operators_last_good_mark_picks_the_configuration_compared():
    inputs = Inputs(
        changes=(),
        starts=(
            start(at(7), 1),
            start(at(9), 100, schedule_policy="'lpm'"),
            start(at(12), 200, schedule_policy="'lpm'", enable_mixed_chunk="True"),
        ),
        series=wedge_after(13),
        log_spans=(span(at(7), at(20)),),
        marks=Marks(last_good=at(8)),
    )

    result = analyze(inputs)

    # Marked at 08:00: the 07:00 start is last known good, so both later changes are suspects.
    assert result.last_good == at(8)
    assert result.last_good_reason.startswith("operator mark: last good set to 2026-11-20 08:00")
    assert {s.live.key for s in result.suspects if s.live} == {
        "schedule_policy",
        "enable_mixed_chunk",
    }
    # Without the mark, the 09:00 start (3 h clean) is last known good: one suspect.
    unmarked = analyze(dataclasses.replace(inputs, marks=Marks()))
    assert [s.live.key for s in unmarked.suspects if s.live] == ["enable_mixed_chunk"]


def test_fields_only_one_sglang_version_logs_are_not_suspects_but_are_said():
    newer = {**ARGS, "enable_new_thing": "False", "chunked_prefill_size": "16384"}
    inputs = Inputs(
        starts=(start(at(7), 1), ServerStart(next(_refs), at(12), 300, newer, where="server.log")),
        series=wedge_after(13),
        log_spans=(span(at(7), at(20)),),
    )

    result = analyze(inputs)

    assert [s.live.key for s in result.suspects if s.live] == ["chunked_prefill_size"]
    assert "1 ServerArgs field(s) logged by only one of the two starts" in result.restarts[1]


def test_a_value_recorded_only_after_it_ran_is_explained_by_the_record_and_said_late():
    inputs = Inputs(
        changes=(change("--schedule-policy", "fcfs", "lpm", at(15), "doc:D@3", scope="flag"),),
        starts=(start(at(7), 1), start(at(12), 300, schedule_policy="'lpm'")),
        series=wedge_after(13),
        log_spans=(span(at(7), at(20)),),
    )

    result = analyze(inputs)

    top = result.suspects[0]
    assert top.sources[0] == "doc:D@3" and top.live is not None
    assert top.live.live_at == at(12) and top.live.recorded_at == at(15)
    assert (
        "--schedule-policy: the server ran lpm from 2026-11-20 12:00 UTC (server.log:300), but "
        "the doc recorded it only at 2026-11-20 15:00 UTC"
    ) in result.drift


def test_requests_that_stop_finishing_until_a_restart_are_a_stall_and_say_what_kept_finishing():
    from tests.correlation.builders import request

    finished = [request(f"ok{i}", at(13, 2 * i), at(13, 2 * i, 40)) for i in range(10)]
    stalled = [request(f"st{i}", at(13, 30 + 3 * i), None) for i in range(6)]
    inputs = Inputs(
        starts=(start(at(7), 1), start(at(13), 300, enable_mixed_chunk="True"), start(at(14), 400)),
        requests=tuple(finished + stalled),
        log_spans=(span(at(7), at(20)),),
    )

    result = analyze(inputs)

    stall = next(s for s in result.symptoms if s.kind == "stall")
    assert stall.at == at(13, 30) and stall.ends_at == at(14)
    assert stall.title == (
        "stall: 6 requests received from 2026-11-20 13:30 UTC and none finished until the "
        "restart at 2026-11-20 14:00 UTC; 10 finished before it"
    )
    assert result.first_bad == at(13, 30)
    assert [s.live.key for s in result.suspects if s.live] == ["enable_mixed_chunk"]


def test_a_random_seed_sglang_draws_at_each_start_is_no_drift_and_no_suspect():
    # ServerArgs logs the seed SGLang drew when --random-seed was not given: a new one at every
    # start (the end-to-end review found it listed as drift and in the bisect plan).
    inputs = Inputs(
        changes=(change("--enable-mixed-chunk", None, "true", at(12), "doc:D@1", scope="flag"),),
        starts=(
            start(at(7), 1, random_seed="851234"),
            start(at(13), 400, random_seed="90817", enable_mixed_chunk="True"),
        ),
        series=wedge_after(14),
        log_spans=(span(at(7), at(20)),),
    )

    result = analyze(inputs)

    assert [s.change.key for s in result.suspects] == ["--enable-mixed-chunk"]
    assert not [line for line in result.drift if "random" in line]
    assert not [line for line in result.bisect if "random" in line]
    assert not [line for line in result.restarts if "random" in line]


def test_a_docs_first_revision_states_its_env_rather_than_changing_it():
    # The deployment doc first appears at 10:00, stating SGLANG_ENABLE_PDL=1 for a server that
    # had been running since 07:00; read as "unset -> 1" at the 13:00 restart, it was a change
    # nobody made (the end-to-end review, stop 29). The same key introduced by a commit is one.
    def run(source: str):
        inputs = Inputs(
            changes=(
                change("SGLANG_ENABLE_PDL", None, "1", at(10), source),
                change("--schedule-policy", None, "lpm", at(12), "doc:D@2", scope="flag"),
            ),
            starts=(start(at(7), 1), start(at(13), 400, schedule_policy="'lpm'")),
            series=wedge_after(14),
            log_spans=(span(at(7), at(20)),),
        )
        return analyze(inputs)

    by_doc = run("doc:DSV4_DEPLOY.md@1")
    assert [s.change.key for s in by_doc.suspects] == ["--schedule-policy"]
    assert not [line for line in by_doc.restarts if "SGLANG_ENABLE_PDL" in line]
    by_commit = run("commit:9f3e")
    assert "SGLANG_ENABLE_PDL" in [s.change.key for s in by_commit.suspects]


def test_drift_says_when_unread_patches_may_hold_its_record():
    # A value recorded nowhere is drift, unless it may be recorded where nothing could be read
    # (a saved `git log -p` whose hunk lacked its context): the end-to-end review (stop 29) saw
    # "no doc or commit records this value" for a change sitting in such a hunk.
    def run(unread: int):
        inputs = Inputs(
            changes=(),
            starts=(start(at(7), 1), start(at(13), 400, schedule_policy="'lpm'")),
            series=wedge_after(14),
            log_spans=(span(at(7), at(20)),),
            unread_changes=unread,
        )
        return analyze(inputs)

    plain = run(0)
    assert plain.suspects[0].reasons[1] == (
        "drift: no doc or commit records this value; it is read from the server log"
    )
    told = run(3)
    assert (
        told.suspects[0]
        .reasons[1]
        .endswith(
            "; 3 config change(s) in git log patches could not be read, and a record of it may be "
            "among them"
        )
    )
    assert any("could not be read" in line for line in told.drift)
