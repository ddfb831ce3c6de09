"""The correlation engine: evidence in, first bad / last good / suspects / ruled out out.

Pure: plain values in (:class:`Inputs`), plain values out (:class:`Result`). Whatever the
evidence cannot show is said in ``Result.warnings`` rather than guessed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from evidence.vocabulary import HarnessStatus, SymptomKind
from timeline.correlation import keys
from timeline.correlation import servers as fleet
from timeline.correlation.config_state import (
    fmt_duration,
    fmt_time,
    fmt_value,
    merge_changes,
    source_kinds,
    state_intervals,
    unmerged_duplicates,
)
from timeline.correlation.deployed import drift_lines, transitions
from timeline.correlation.live import (
    CRASHES,
    LiveInterval,
    RequestsByTime,
    build_intervals,
    cut_by_restart,
    describe,
    find_stalls,
)
from timeline.correlation.suspects import rank_changes
from timeline.correlation.symptoms import (
    RUNNING,
    THROUGHPUT,
    Load,
    Metrics,
    failed_runs,
    find_dropped_requests,
    find_harness_failures,
    find_wedges,
    from_ms,
    load_from_metrics,
    load_from_requests,
    prepare_metrics,
    sort_symptoms,
    status_is,
)
from timeline.correlation.types import (
    Change,
    HarnessRuns,
    Inputs,
    LogSymptom,
    Requests,
    Result,
    RuledOut,
    Suspect,
    Symptom,
    from_us,
    to_us,
)
from timeline.correlation.verdicts import DRIFT_ORIGIN, rank_live
from timeline.correlation.windows import Moment, find_first_bad, find_last_good

MODEL_QUALITY = "model quality"
# Passing harness runs in the window needed before model quality is ruled out.
MIN_PASSED_RUNS = 2
# Unfinished requests in a row, until a restart, that make a stall (with request_timeout).
STALL_REQUESTS = 3


def _skew_warnings(merged: Sequence[Change], window: dt.timedelta) -> list[str]:
    warnings = []
    for a, b in unmerged_duplicates(merged, window):
        minutes = round((b.at - a.at).total_seconds() / 60)
        warnings.append(
            f"{a.key} -> {fmt_value(a.new)} is recorded by {'+'.join(source_kinds(a.sources))} "
            f"at {fmt_time(a.at)} and by {'+'.join(source_kinds(b.sources))} at "
            f"{fmt_time(b.at)}: the sources disagree by {minutes} minutes, more than the "
            f"{fmt_duration(window)} merge window, so they are kept as two changes"
        )
    return warnings


def _check_wedges(inputs: Inputs, metrics: Metrics, warnings: list[str]) -> list[Symptom]:
    if not inputs.series:
        warnings.append("no metrics were given: wedges were not checked")
        return []
    if metrics.running is None:
        warnings.append(f"the metrics hold no {RUNNING} series: wedges were not checked")
        return []
    if metrics.throughput is None and metrics.gpu_util is None:
        warnings.append(
            f"the metrics hold neither {THROUGHPUT} nor a GPU utilisation series: "
            "wedges were not checked"
        )
        return []
    if metrics.throughput is None:
        warnings.append(
            f"the metrics hold no {THROUGHPUT} series: wedges were judged by GPU utilisation"
        )
    return find_wedges(metrics, inputs.params)


def _fleet_wedges(
    inputs: Inputs, servers: Sequence[fleet.Server], metrics: Metrics, warnings: list[str]
) -> list[Symptom]:
    """Wedges. With several servers' logs, each server's batch-line series are judged on
    their own: merged (running = max, throughput = sum), one node's stopped generation hid
    behind another's. Series of no server (Prometheus, exports) are judged together."""
    if sum(1 for s in servers if s.starts) < 2:
        return _check_wedges(inputs, metrics, warnings)
    own, rest = fleet.series_by_server(servers, inputs.series)
    if not any(own):
        return _check_wedges(inputs, metrics, warnings)
    found: list[Symptom] = []
    for server, series in zip(servers, own, strict=True):
        mine = prepare_metrics(series)
        if (
            series
            and mine.running is not None
            and (mine.throughput is not None or mine.gpu_util is not None)
        ):
            origin = server.starts[0].where
            found += [replace(w, origin=origin) for w in find_wedges(mine, inputs.params)]
    if rest:
        rest_inputs = replace(inputs, series=tuple(rest))
        found += _check_wedges(rest_inputs, prepare_metrics(rest), warnings)
    return found


def _check_requests(
    inputs: Inputs, warnings: list[str], server_of: dict[int, int] | None = None
) -> list[Symptom]:
    if not inputs.requests and not inputs.log_spans:
        warnings.append("no server logs were given: dropped requests were not checked")
        return []
    timeout = inputs.params.request_timeout
    if not inputs.log_spans:
        warnings.append(
            "no server log span was given, so whether the server kept logging is unknown: "
            "unfinished requests count as unknown, not dropped"
        )
    verdict = find_dropped_requests(inputs.requests, inputs.log_spans, timeout, server_of)
    if verdict.unknown:
        unknown = Requests.of(verdict.unknown)
        first = unknown.row(int(np.argmin(unknown.received_us)))
        warnings.append(
            f"{len(verdict.unknown)} request(s) never finished but the server log does not "
            f"cover {fmt_duration(timeout)} after they were received (first: {first.rid} at "
            f"{fmt_time(first.received_at)}): their fate is unknown, so they are not counted "
            "as dropped"
        )
    return verdict.dropped


def _together_warnings(suspects: Sequence[Suspect], window: dt.timedelta) -> list[str]:
    """Changes that shipped together with the top suspect cannot be told apart by timing or
    by exposure: say so, rather than let the rank look more certain than it is."""
    if not suspects:
        return []
    top = suspects[0].change
    along = [s.change for s in suspects[1:] if abs(s.change.at - top.at) <= window]
    if not along:
        return []
    keys = ", ".join(c.key for c in along)
    return [
        f"{top.key} arrived together with {keys} (within {fmt_duration(window)} of "
        f"{fmt_time(top.at)}): timing and exposure cannot tell them apart, so their order rests "
        "on relevance and novelty; revert them one at a time to confirm"
    ]


def _check_clocks(inputs: Inputs, symptoms: Sequence[Symptom], warnings: list[str]) -> None:
    if not inputs.log_spans:
        return
    log_start = min(span.start for span in inputs.log_spans)
    early = [s for s in symptoms if s.at < log_start and s.kind == SymptomKind.WEDGE]
    if early:
        warnings.append(
            f"the wedge at {fmt_time(early[0].at)} is before the first server log line at "
            f"{fmt_time(log_start)}: the metrics and the log may disagree on the clock or time "
            "zone, or the log starts late"
        )
    requests = Requests.of(inputs.requests)
    before_log = int(np.count_nonzero(requests.received_us < to_us(log_start)))
    if before_log:
        warnings.append(
            f"{before_log} request(s) were received before the first server log line at "
            f"{fmt_time(log_start)}: the log spans and the requests disagree on time"
        )


def _data_end(inputs: Inputs, metrics: Metrics, symptoms: Sequence[Symptom]) -> dt.datetime | None:
    ends: list[dt.datetime] = []
    if metrics.last_ms is not None:
        ends.append(from_ms(metrics.last_ms))
    ends.extend(span.end for span in inputs.log_spans)
    requests = Requests.of(inputs.requests)
    if requests:
        ends_us = np.where(requests.finished, requests.finished_us, requests.received_us)
        ends.append(from_us(int(ends_us.max())))
    harness = HarnessRuns.of(inputs.harness)
    if harness:
        ends.append(from_us(int(harness.at_us.max())))
    ends.extend(c.at for c in inputs.changes)
    ends.extend(s.ends_at or s.at for s in symptoms)
    return max(ends) if ends else None


def _rule_out_model_quality(
    runs: HarnessRuns,
    symptoms: Sequence[Symptom],
    first_bad: dt.datetime | None,
    last_good: dt.datetime | None,
    warnings: list[str],
) -> list[RuledOut]:
    if not runs or not symptoms or first_bad is None:
        return []
    order = np.argsort(runs.at_us, kind="stable")  # runs in time order, ties as given
    at_us = runs.at_us[order]
    start = last_good if last_good is not None else from_us(int(at_us[0]))
    start_words = "last good" if last_good is not None else "the first run"
    end = max(s.ends_at or s.at for s in symptoms)
    window = (at_us >= to_us(start)) & (at_us <= to_us(end))
    failed = failed_runs(runs)[order]
    if (window & failed).any():
        return []
    is_pass = status_is(runs, lambda s: s == HarnessStatus.PASS)[order]
    passed = np.flatnonzero(window & is_pass)  # positions in time order
    span = f"between {fmt_time(start)} and {fmt_time(end)}"
    if passed.size < MIN_PASSED_RUNS:
        warnings.append(
            f"only {passed.size} passing harness run(s) {span}: too few to rule out model quality"
        )
        return []
    during = int(np.count_nonzero(at_us[passed] >= to_us(first_bad)))
    if not during:
        warnings.append(
            f"the harness passed {passed.size} runs {span}, but none at or after the first bad "
            "moment: model quality is not ruled out"
        )
        return []
    passed_rows = order[passed]
    suites = sorted(set(map(runs.suite.__getitem__, passed_rows.tolist())))
    scores = runs.score[passed_rows]
    scores = scores[~np.isnan(scores)]
    evidence = [
        f"{passed.size} harness runs from {fmt_time(from_us(int(at_us[passed[0]])))} to "
        f"{fmt_time(from_us(int(at_us[passed[-1]])))} "
        f"all passed, with no failure or error (suites: {', '.join(suites)})",
        f"they cover the window from {start_words} ({fmt_time(start)}) to the end of the "
        f"symptoms ({fmt_time(end)}), {during} of them at or after the first bad moment",
        (
            f"scores ranged from {float(scores.min()):.3g} to {float(scores.max()):.3g}"
            if scores.size
            else "the runs reported no scores"
        ),
    ]
    skipped = int(np.count_nonzero(window & ~is_pass & ~failed))
    if skipped:
        evidence.append(f"{skipped} skipped run(s) in the window were not counted")
    return [RuledOut(MODEL_QUALITY, tuple(evidence), tuple(runs.ref[passed_rows].tolist()))]


def _require_aware(inputs: Inputs) -> None:
    # A naive time would be read as the machine's local time: a silent, confident wrong answer.
    named: list[tuple[str, dt.datetime | None]] = [
        ("marks.last_good", inputs.marks.last_good),
        ("marks.first_bad", inputs.marks.first_bad),
    ]
    named += [(f"change {c.key} (ref {c.ref})", c.at) for c in inputs.changes]
    if not isinstance(inputs.requests, Requests):  # columns hold UTC microseconds
        for r in inputs.requests:
            named += [(f"request {r.rid}", r.received_at), (f"request {r.rid}", r.finished_at)]
    for span in inputs.log_spans:
        named += [(f"log span {span.ref}", span.start), (f"log span {span.ref}", span.end)]
    if not isinstance(inputs.harness, HarnessRuns):
        named += [(f"harness run {run.ref}", run.at) for run in inputs.harness]
    named += [(f"series {s.name}", s.ts[0]) for s in inputs.series if s.ts]
    for st in inputs.starts:
        named += [(f"server start {st.ref}", st.at), (f"server start {st.ref}", st.ends_at)]
    named += [(f"server error {e.ref}", e.at) for e in inputs.errors]
    for what, t in named:
        if t is not None and t.utcoffset() is None:
            raise ValueError(f"{what}: expected an aware UTC datetime, got naive {t.isoformat()}")


def analyze(inputs: Inputs) -> Result:
    """Correlate the evidence: symptoms, first bad, last good, ranked suspects, ruled out.

    Raises ValueError if a time is naive (the contract is aware UTC everywhere).
    """
    _require_aware(inputs)
    # Requests and harness runs as columns from here on (a big incident has a million).
    inputs = replace(
        inputs, requests=Requests.of(inputs.requests), harness=HarnessRuns.of(inputs.harness)
    )
    params = inputs.params
    marks = inputs.marks
    warnings: list[str] = list(inputs.warnings)

    merged = merge_changes(inputs.changes, params.same_change_window)
    warnings.extend(_skew_warnings(merged, params.same_change_window))
    if not merged:
        warnings.append("no configuration changes were given: there is nothing to rank")

    # Which logs are one server's (node-a, node-b; a rotated log's files), and the requests
    # whose Finish another file of the same server logged.
    servers = fleet.group(inputs.starts, inputs.log_spans)
    server_of = fleet.server_of_source(servers)
    paired_requests, paired = fleet.pair_finishes(
        Requests.of(inputs.requests), inputs.finishes, server_of
    )
    if paired:
        inputs = replace(inputs, requests=paired_requests)
        warnings.append(
            f"{paired} request(s) received in one file of a server's log finished in its next "
            "file (a rotated log): read as one request each"
        )
    metrics = prepare_metrics(inputs.series)
    found = _fleet_wedges(inputs, servers, metrics, warnings) + _check_requests(
        inputs, warnings, server_of
    )
    if inputs.harness:
        found += find_harness_failures(inputs.harness)
    else:
        warnings.append("no harness results were given: model quality was not assessed")
    found += [_error_symptom(e) for e in inputs.errors]
    symptoms = sort_symptoms(found)
    load: Load | None = load_from_metrics(metrics) or load_from_requests(inputs.requests)
    until = _data_end(inputs, metrics, symptoms)
    _check_clocks(inputs, symptoms, warnings)  # before the live branch: it says them too
    if inputs.starts:
        live, note = _analyze_live(inputs, merged, symptoms, load, until, list(warnings), servers)
        if live is not None:
            return live
        warnings.extend(note)
    elif merged:
        warnings.append(
            "no server start was logged (no server_args=ServerArgs(...) line): each change is "
            "dated by when a doc or commit recorded it, not by the restart that deployed it, and "
            "drift passed by hand cannot be seen"
        )

    first = _first_bad_checked(inputs, symptoms, warnings)
    intervals = state_intervals(merged, until)
    last = find_last_good(intervals, symptoms, load, first.at, marks, params)
    if last.at is None and first.at is not None and merged:
        warnings.append(
            "no last known good state: every change up to the first bad moment is a suspect"
        )
    if last.at is not None and first.at is not None and last.at >= first.at:
        warnings.append(
            f"the last good moment ({fmt_time(last.at)}) is not before the first bad moment "
            f"({fmt_time(first.at)}): no change lies between them"
        )

    ranking = rank_changes(merged, symptoms, first.at, last.at, load, params, until)
    warnings.extend(_together_warnings(ranking.suspects, params.together_window))
    ruled_out = _rule_out_model_quality(
        HarnessRuns.of(inputs.harness), symptoms, first.at, last.at, warnings
    )
    return Result(
        first_bad=first.at,
        first_bad_reason=first.reason,
        last_good=last.at,
        last_good_reason=last.reason,
        symptoms=tuple(symptoms),
        suspects=tuple(ranking.suspects),
        excluded=tuple(ranking.excluded),
        ruled_out=tuple(ruled_out),
        warnings=tuple(warnings),
    )


def _error_symptom(e: LogSymptom) -> Symptom:
    return Symptom(e.kind, e.at, None, e.title, (e.ref,))


def _first_bad_checked(inputs: Inputs, symptoms: Sequence[Symptom], warnings: list[str]) -> Moment:
    first = find_first_bad(symptoms, inputs.marks)
    if first.at is None:
        warnings.append(
            "no symptom was found: the first bad moment is unknown, so no change is ranked "
            "as a suspect"
        )
    elif (
        inputs.marks.first_bad is not None and symptoms and symptoms[0].at < inputs.marks.first_bad
    ):
        warnings.append(
            f"the operator's first bad mark ({fmt_time(inputs.marks.first_bad)}) is later than "
            f"the earliest symptom ({fmt_time(symptoms[0].at)}: {symptoms[0].title})"
        )
    return first


def _analyze_live(
    inputs: Inputs,
    merged: Sequence[Change],
    found: Sequence[Symptom],
    load: Load | None,
    until: dt.datetime | None,
    warnings: list[str],
    servers: Sequence[fleet.Server] = (),
) -> tuple[Result | None, list[str]]:
    """The deploy-aware analysis: what ran, start by start. None (and why) when the starts
    cannot place the first bad moment: then the recorded changes are ranked as before.
    """
    params = inputs.params
    recorded = [c for c in merged if not all(s.startswith("live:") for s in c.sources)]
    inputs, found, load, controls = _one_server(
        inputs, found, load, until, recorded, warnings, servers
    )
    by_time = RequestsByTime(inputs.requests)  # sorted and indexed once for the three reads
    rough = build_intervals(inputs.starts, recorded, found, by_time, load, until)
    kept, cut = cut_by_restart(found, inputs.requests, rough, params.request_timeout)
    kept += find_stalls(rough, by_time, STALL_REQUESTS, params.request_timeout)
    symptoms = sort_symptoms(kept)
    if cut:
        warnings.append(
            f"{cut} request(s) never finished because a restart cut them off (received less "
            f"than {fmt_duration(params.request_timeout)} before the server restarted): not "
            "counted as dropped"
        )
    intervals = build_intervals(inputs.starts, recorded, symptoms, by_time, load, until)
    first = _first_bad_checked(inputs, symptoms, warnings)  # warnings: this branch's own copy
    if first.at is None:
        return None, []
    changes, deployments = transitions(intervals, recorded)
    first_symptom = next((s for s in symptoms if s.at >= first.at), None)
    kind = first_symptom.kind if first_symptom is not None else SymptomKind.WEDGE
    ranking = rank_live(intervals, changes, deployments, first.at, kind, inputs.marks, params)
    if isinstance(ranking, str):
        return None, [ranking]
    blind = [i for i in intervals if not i.logged_args]
    if blind:
        warnings.append(
            f"{len(blind)} of {len(intervals)} server start(s) logged no ServerArgs line (first: "
            f"{blind[0].label()}): their configuration is assumed from the doc and commit "
            "records, each change live from the first start after it"
        )
    if load is None:
        warnings.append(
            "there is no load data (no running-requests metric and no server log requests): "
            "no start can be shown to have run cleanly under load"
        )
    if first_symptom is not None and first_symptom.kind in CRASHES:
        warnings.append(
            f"the first bad moment is a {str(first_symptom.kind).replace('_', ' ')} "
            f"({first_symptom.title}): a crash is a symptom, never a cause by itself; the "
            "suspects are the settings that changed before it"
        )
    warnings.extend(ranking.warnings)
    warnings.extend(_stalled_lines(ranking.bad))
    need = params.stable_load_min
    story = [describe(i, intervals[i.index - 1] if i.index else None, need) for i in intervals]
    suspects = [_with_controls(s, controls, first.at, need) for s in ranking.suspects]
    drift = drift_lines(changes, deployments, intervals)
    if inputs.unread_changes:
        # A value recorded nowhere that was read may be recorded where nothing could be read.
        unread = (
            f"; {inputs.unread_changes} config change(s) in git log patches could not be "
            "read, and a record of it may be among them"
        )
        suspects = [
            replace(s, reasons=tuple(r + unread if r == DRIFT_ORIGIN else r for r in s.reasons))
            for s in suspects
        ]
        drift = [line + unread if "no doc or commit records" in line else line for line in drift]
    for _, line, _ in controls:
        story += [describe(i, line[i.index - 1] if i.index else None, need) for i in line]
    last_good = ranking.good.begin if ranking.good is not None else None
    if ranking.good is not None and ranking.last_good_reason.startswith("operator mark"):
        last_good = inputs.marks.last_good
    ruled_out = _rule_out_model_quality(
        HarnessRuns.of(inputs.harness), symptoms, first.at, last_good, warnings
    )
    result = Result(
        first_bad=first.at,
        first_bad_reason=first.reason,
        last_good=last_good,
        last_good_reason=ranking.last_good_reason,
        symptoms=tuple(symptoms),
        suspects=tuple(suspects),
        excluded=tuple(ranking.excluded),
        ruled_out=tuple(ruled_out),
        warnings=tuple(warnings),
        bisect=tuple(ranking.bisect),
        drift=tuple(drift),
        restarts=tuple(story),
    )
    return result, []


Controls = list[tuple[fleet.Server, list[LiveInterval], Load | None]]


def _one_server(
    inputs: Inputs,
    found: Sequence[Symptom],
    load: Load | None,
    until: dt.datetime | None,
    recorded: Sequence[Change],
    warnings: list[str],
    servers: Sequence[fleet.Server],
) -> tuple[Inputs, Sequence[Symptom], Load | None, Controls]:
    """With several servers' logs: the inputs of the server the analysis follows (the one whose
    log shows the first symptom: its starts, its requests, the symptoms of its log or of none),
    and each other server's own line of intervals, as controls (see ``servers``)."""
    servers = [s for s in servers if s.starts]
    if len(servers) < 2:
        if servers:  # (a rotated log's starts run on into its next file)
            inputs = replace(inputs, starts=servers[0].starts)
        return inputs, found, load, []
    table = Requests.of(inputs.requests)
    owner = fleet.owners(found, table, inputs.errors, servers)
    k = fleet.focus(found, owner, inputs.marks.first_bad)
    names = ", ".join(s.name for s in servers)
    if k is None:
        warnings.append(
            f"{len(servers)} servers' logs ran side by side ({names}), but no symptom was read "
            "from any of their logs: their starts are read as one line, which mixes their "
            "configurations"
        )
        return inputs, found, load, []
    focused = servers[k]
    own_requests = fleet.requests_of(table, focused)
    own_series, _ = fleet.series_by_server(servers, inputs.series)

    def own_load(j: int, requests: Requests) -> Load | None:
        # A server's load is its own requests (or its own batch lines): the metrics read
        # from every log together are the fleet's (one node busy, another drained).
        if len(requests):
            return load_from_requests(requests)
        return load_from_metrics(prepare_metrics(own_series[j])) if own_series[j] else None

    controls: Controls = []
    for j, server in enumerate(servers):
        if j == k:
            continue
        theirs = fleet.requests_of(table, server)
        symptoms = [s for s, o in zip(found, owner, strict=True) if o == j]
        their_load = own_load(j, theirs)
        rough = build_intervals(server.starts, recorded, symptoms, theirs, their_load, until)
        params = inputs.params
        kept, _ = cut_by_restart(symptoms, theirs, rough, params.request_timeout)
        kept += find_stalls(rough, theirs, STALL_REQUESTS, params.request_timeout)
        line = build_intervals(
            server.starts, recorded, sort_symptoms(kept), theirs, their_load, until
        )
        controls.append((server, line, their_load))
    warnings.append(
        f"{len(servers)} servers' logs ran side by side ({names}): the analysis follows "
        f"{focused.name}, whose log shows the first symptom, on its own starts; the other "
        "server(s) are controls, each judged on its own starts and its own log's symptoms"
    )
    mine = [s for s, o in zip(found, owner, strict=True) if o in (None, k)]
    inputs = replace(inputs, starts=focused.starts, requests=own_requests)
    load = own_load(k, own_requests) or load
    return inputs, mine, load, controls


def _with_controls(
    suspect: Suspect, controls: Controls, first_bad: dt.datetime | None, need: dt.timedelta
) -> Suspect:
    """The suspect with what each control server shows: did it run the suspect's value, under
    how much load, and did its own log show a symptom? (Said, not weighed in the score.)"""
    live = suspect.live
    if live is None or not controls:
        return suspect
    scope = "env" if keys.is_env(live.key) else ""
    after = keys.effective(live.after, scope)
    evidence_for = list(live.evidence_for)
    evidence_against = list(live.evidence_against)
    shown = f"{keys.display(live.key)}={keys.shown(live.after)}"
    for server, line, their_load in controls:
        ran = [i for i in line if keys.effective(i.value(live.key), scope) == after]
        if ran:
            sick = [i for i in ran if i.symptoms]
            loaded = sum((i.loaded for i in ran), dt.timedelta(0))
            if sick:
                first = sick[0].symptoms[0]
                evidence_for.append(
                    f"control {server.name} also ran {shown} (from {fmt_time(ran[0].begin)}) and "
                    f"its log also shows symptoms (first {fmt_time(first.at)}: {first.title})"
                )
            elif loaded >= need:
                evidence_against.append(
                    f"control {server.name} ran {shown} from {fmt_time(ran[0].begin)} for "
                    f"{fmt_duration(loaded)} of load without a symptom in its log"
                )
            continue
        since = [i for i in line if first_bad is None or i.end is None or i.end > first_bad]
        loaded = sum((i.loaded for i in since), dt.timedelta(0))
        ends = [i.end for i in since if i.end is not None]
        if their_load is not None and first_bad is not None and ends:
            loaded = their_load.loaded(first_bad, max(ends))  # from the first bad moment on
        if since and not any(i.symptoms for i in since):
            kept = keys.shown(since[-1].value(live.key))
            evidence_for.append(
                f"control {server.name} never ran {shown} (it ran {kept}) and its log shows no "
                f"symptom over the same time ({fmt_duration(loaded)} of load)"
            )
    facts = replace(
        live, evidence_for=tuple(evidence_for), evidence_against=tuple(evidence_against)
    )
    return replace(suspect, live=facts)


def _stalled_lines(bad: LiveInterval) -> list[str]:
    if not bad.finished and not bad.stalled:
        return []
    return [
        f"in the interval live at the first bad moment ({bad.label()}) {bad.finished} "
        f"request(s) finished and {bad.stalled} never did"
    ]


def _iso(t: dt.datetime | None) -> str | None:
    return None if t is None else t.astimezone(dt.UTC).isoformat()


def result_to_json(result: Result, incident: str) -> dict[str, Any]:
    """The analysis as JSON-ready data (times: ISO 8601 in UTC, suspects best first)."""
    return {
        "incident": incident,
        "first_bad": _iso(result.first_bad),
        "first_bad_reason": result.first_bad_reason,
        "last_good": _iso(result.last_good),
        "last_good_reason": result.last_good_reason,
        "warnings": list(result.warnings),
        "suspects": [
            {
                "key": s.change.key,
                "old": s.change.old,
                "new": s.change.new,
                "at": _iso(s.change.at),
                "score": s.score,
                "sources": list(s.sources),
                "reasons": list(s.reasons),
                **live_json(s),
            }
            for s in result.suspects
        ],
        "excluded": [
            {
                "key": e.change.key,
                "old": e.change.old,
                "new": e.change.new,
                "at": _iso(e.change.at),
                "reason": e.reason,
            }
            for e in result.excluded
        ],
        "ruled_out": [
            {"hypothesis": r.hypothesis, "evidence": list(r.evidence)} for r in result.ruled_out
        ],
        "bisect": list(result.bisect),
        "drift": list(result.drift),
        "restarts": list(result.restarts),
    }


def live_json(s: Suspect) -> dict[str, Any]:
    """What the server logs showed about a suspect (nothing without server starts)."""
    live = s.live
    if live is None:
        return {}
    return {
        "live": {
            "key": live.key,
            "before": live.before,
            "after": live.after,
            "live_at": _iso(live.live_at),
            "live_at_text": fmt_time(live.live_at) if live.live_at else "",
            "live_where": live.live_where,
            "assumed": live.assumed,
            "verdict": live.verdict,
            "evidence_for": list(live.evidence_for),
            "evidence_against": list(live.evidence_against),
            "recorded_at": _iso(live.recorded_at),
        }
    }
