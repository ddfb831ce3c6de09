"""Several servers' logs in one incident (timeline/correlation/servers.py): each server on its own
line of starts, the analysis on the one whose log shows the first symptom, the others controls.

The shape is the end-to-end review's (stop 29): node-a takes a doc's flag change at a restart and
starts dropping requests; node-b restarts later with the old configuration, routinely, and
keeps finishing its requests. Read as one line, node-b's restart looked like a change back and
the guilty change read as "no effective difference"."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools

from tests.correlation.builders import at, change
from timeline.correlation import servers
from timeline.correlation.engine import analyze
from timeline.correlation.types import Inputs, LogSpan, Request, ServerStart

_refs = itertools.count(70_000)
A, B = 11, 12  # the two logs' artifact ids
ARGS = {"chunked_prefill_size": "8192", "schedule_policy": "'fcfs'", "tp_size": "8"}


def start(source: int, when: dt.datetime, line: int, **changed: str) -> ServerStart:
    name = {A: "node-a.log", B: "node-b.log"}.get(source, f"log{source}")
    return ServerStart(next(_refs), when, line, {**ARGS, **changed}, where=name, source=source)


def requests(source: int, begin: dt.datetime, end: dt.datetime, done: bool) -> list[Request]:
    out, t = [], begin
    while t < end:
        finished = t + dt.timedelta(seconds=20) if done else None
        out.append(Request(next(_refs), f"{source}-{t:%H%M}", t, finished, source=source))
        t += dt.timedelta(minutes=2)
    return out


def fleet_incident() -> Inputs:
    return Inputs(
        changes=(
            change("--chunked-prefill-size", "8192", "16384", at(11, 30), "doc:D@2", scope="flag"),
        ),
        starts=(
            start(A, at(7), 1),
            start(B, at(7, 5), 1),
            start(A, at(12), 900, chunked_prefill_size="16384"),
            start(B, at(12, 30), 880),  # a routine restart, the old configuration
        ),
        requests=(
            *requests(A, at(7, 1), at(14), done=True),
            *requests(A, at(14), at(15), done=False),  # node-a drops them from 14:00
            *requests(B, at(7, 6), at(16), done=True),
        ),
        log_spans=(
            LogSpan(next(_refs), at(7), at(16), source=A),
            LogSpan(next(_refs), at(7, 5), at(16), source=B),
        ),
    )


def test_the_guilty_change_is_found_on_the_server_that_ran_it_and_the_other_is_its_control():
    result = analyze(fleet_incident())

    top = result.suspects[0]
    assert top.live is not None
    assert top.live.key == "chunked_prefill_size"
    assert (top.live.before, top.live.after) == ("8192", "16384")
    assert top.live.live_at == at(12) and top.live.live_where == "node-a.log:900"
    assert any(
        e.startswith("control node-b.log never ran --chunked-prefill-size=16384 (it ran 8192)")
        and "shows no symptom" in e
        for e in top.live.evidence_for
    )
    # node-b's routine restart is no change back, and is no suspect.
    assert not [s for s in result.suspects if s.change.new == "8192"]
    assert any(
        "2 servers' logs ran side by side (node-a.log, node-b.log): the analysis follows "
        "node-a.log" in w
        for w in result.warnings
    )
    # node-b's story is told on its own line: its restart changed nothing.
    b_restart = next(line for line in result.restarts if "(node-b.log:880)" in line)
    assert "same configuration as before" in b_restart


def test_a_control_that_ran_the_value_cleanly_under_load_is_evidence_against():
    inputs = fleet_incident()
    starts = (*inputs.starts[:3], start(B, at(12, 30), 880, chunked_prefill_size="16384"))
    result = analyze(Inputs(**{**inputs.__dict__, "starts": starts}))

    top = result.suspects[0]
    assert top.live is not None and top.live.key == "chunked_prefill_size"
    assert any(
        e.startswith("control node-b.log ran --chunked-prefill-size=16384 from 2026-11-20 12:30")
        and "without a symptom in its log" in e
        for e in top.live.evidence_against
    )


def test_one_servers_rotated_files_are_one_line_and_overlapping_logs_are_two():
    a1 = start(21, at(7), 1)
    a2 = start(22, at(12), 1)
    a1 = ServerStart(a1.ref, a1.at, 1, a1.server_args, where="server.log.1", source=21)
    a2 = ServerStart(a2.ref, a2.at, 1, a2.server_args, where="server.log", source=22)
    spans = (
        LogSpan(1, at(7), at(11, 59, 30), source=21),
        LogSpan(2, at(11, 59, 40), at(16), source=22),
    )
    (one,) = servers.group((a1, a2), spans)
    assert [s.at for s in one.starts] == [at(7), at(12)]
    assert one.sources == {21, 22}

    inputs = fleet_incident()
    two = servers.group(inputs.starts, inputs.log_spans)
    assert [s.name for s in two] == ["node-a.log", "node-b.log"]
    assert [len(s.starts) for s in two] == [2, 2]


def test_starts_of_one_log_or_of_no_known_log_are_one_server_as_before():
    inputs = fleet_incident()
    unknown = tuple(
        ServerStart(s.ref, s.at, s.line, s.server_args, where="server.log") for s in inputs.starts
    )
    (one,) = servers.group(unknown, ())
    assert len(one.starts) == 4


# --- what a second review (stop 30) found ------------------------------------------------------


def test_a_copy_of_one_nodes_log_cut_while_a_request_ran_is_no_symptom_of_that_node():
    # node-b's log was copied at 11:30 with a request still running; node-a's log went on.
    # Another server logging says nothing of node-b's request: its fate is unknown.
    inputs = fleet_incident()
    cut = Request(next(_refs), "b-cut", at(11, 25), None, source=B)
    b_requests = [r for r in inputs.requests if r.source == B and r.received_at < at(11, 20)]
    a_requests = [r for r in inputs.requests if r.source == A]
    starts = tuple(s for s in inputs.starts if s.source == A or s.at < at(11))
    result = analyze(
        Inputs(
            changes=inputs.changes,
            starts=starts,
            requests=(*a_requests, *b_requests, cut),
            log_spans=(
                LogSpan(next(_refs), at(7), at(16), source=A),
                LogSpan(next(_refs), at(7, 5), at(11, 30), source=B),
            ),
        )
    )
    assert result.first_bad == at(14)
    assert not [s for s in result.symptoms if "b-cut" in s.title]
    assert result.suspects[0].live is not None
    assert result.suspects[0].live.key == "chunked_prefill_size"


def test_a_rotated_log_is_one_server_whose_requests_and_start_run_across_the_cut():
    # server.log.1 (07:00-11:00, starts at 07:00 and 09:30) then server.log (11:00:05-16:00,
    # no start): the request received at 10:59:40 finished at 11:00:13 in the next file, and
    # the 09:30 start served until the end, not until 11:00.
    one, two = 31, 32
    s1 = ServerStart(
        next(_refs), at(7), 1, ARGS, where="server.log.1", source=one, ends_at=at(9, 30)
    )
    s2 = ServerStart(
        next(_refs), at(9, 30), 800, {**ARGS, "schedule_policy": "'lpm'"},
        where="server.log.1", source=one, ends_at=at(11),
    )  # fmt: skip
    across = Request(next(_refs), "r-across", at(10, 59, 40), None, source=one)
    before = requests(one, at(7, 1), at(10, 58), done=True)
    after = requests(two, at(11, 1), at(14), done=True)
    dropped = requests(two, at(14), at(15), done=False)
    result = analyze(
        Inputs(
            changes=(change("--schedule-policy", "fcfs", "lpm", at(9), "doc:D@2", scope="flag"),),
            starts=(s1, s2),
            requests=(*before, across, *after, *dropped),
            log_spans=(
                LogSpan(next(_refs), at(7), at(11), source=one),
                LogSpan(next(_refs), at(11, 0, 5), at(16), source=two),
            ),
            finishes=((two, "r-across", at(11, 0, 13)),),
        )
    )
    assert not [s for s in result.symptoms if "r-across" in s.title]
    assert any("1 request(s) received in one file" in w for w in result.warnings)
    assert result.first_bad == at(14)
    assert not [w for w in result.warnings if "servers' logs ran side by side" in w]
    # the 09:30 start's interval runs past the cut: its load is not just 1 h 30 min
    story = next(line for line in result.restarts if "(server.log.1:800)" in line)
    assert "1 h 30 min" not in story and "carried 5 h" in story


def test_a_drained_control_that_ran_the_value_is_not_said_to_have_carried_load():
    # node-b took the change at 12:30 but served one request after it: its "load" is its own
    # requests, not the fleet's metrics.
    inputs = fleet_incident()
    starts = (*inputs.starts[:3], start(B, at(12, 30), 880, chunked_prefill_size="16384"))
    b_requests = [r for r in inputs.requests if r.source == B and r.received_at < at(12, 30)]
    one_more = Request(next(_refs), "b-late", at(15), at(15, 0, 20), source=B)
    a_requests = [r for r in inputs.requests if r.source == A]
    result = analyze(
        Inputs(
            changes=inputs.changes,
            starts=starts,
            requests=(*a_requests, *b_requests, one_more),
            log_spans=inputs.log_spans,
        )
    )
    top = result.suspects[0]
    assert top.live is not None and top.live.key == "chunked_prefill_size"
    assert not [e for e in top.live.evidence_against if "control" in e]


def test_one_nodes_wedge_in_its_own_batch_lines_is_not_hidden_by_the_other_node():
    # No request lines, only each log's batch lines: node-a stops generating at 14:00 with
    # requests running, node-b keeps going. Merged (running = max, throughput = sum), the fleet
    # looked healthy; each log's series judged on its own, node-a is wedged.
    from tests.correlation.builders import minutes, series, window

    times = minutes(at(7), at(17))
    a_wedged = window(at(14), at(17), 0.0, 900.0)

    def of(origin: str, running: float, throughput) -> tuple:
        return tuple(
            dataclasses.replace(s, origin=origin)
            for s in (
                series("sglang:num_running_reqs", times, lambda t: running),
                series("sglang:gen_throughput", times, throughput),
            )
        )

    inputs = fleet_incident()
    result = analyze(
        Inputs(
            changes=inputs.changes,
            starts=inputs.starts,
            series=(
                *of("node-a.log", 6.0, a_wedged),
                *of("node-b.log", 10.0, lambda t: 900.0),
            ),
            log_spans=inputs.log_spans,
        )
    )
    assert result.first_bad == at(14)
    assert any("the analysis follows node-a.log" in w for w in result.warnings)
    top = result.suspects[0]
    assert top.live is not None and top.live.key == "chunked_prefill_size"
