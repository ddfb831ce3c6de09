"""Issues 5 and 17 (point 6): the correlation run on a big incident.

100k events (``--events``) and 5M samples (200 series x 25k one-second scrapes, 80 of them the
series the engine reads) loaded by COPY into one incident; then timeline.analysis.analysis_run
end to end, load_inputs alone and engine.analyze alone. Then the same at 1M events
(``--big-events``, in a second incident of the same scratch database; skipped when
``--events`` is already that big). Target (issue 17): analysis_run of 1M events + 5M samples
in at most 2 s.

The baseline measured in the same run is the loading the slice shipped with (ORM rows, one
fetchall per series, a datetime per sample), kept here as ``load_inputs_orm``; the product's
load_inputs must return Inputs equal to it (requests, harness runs and series come back as
columns: they compare equal to the baseline's tuples row by row, each row built from the
columns).

``big_analysis_seconds()`` builds such an incident in the database Django is set up on and
returns the best wall time of analysis_run on it (bench/prometheus.py can import it).

    .venv/bin/python bench/correlate.py [--scrapes 25000] [--events 100000]
        [--big-events 1000000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path

# Run as a script, sys.path[0] is bench/; the project root must come first.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

import numpy as np  # noqa: E402

from bench import _common  # noqa: E402

START = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)
CTAS = "SGLANG_SM120_MMA_TARGET_CTAS"


def _fp(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def load_events(incident: object, n_events: int, scrapes: int, wedge_at_s: int) -> int:
    """Config changes (the CTAS one an hour before the wedge), requests (the ones received
    after the wedge never finish), harness runs (all green), server log spans and errors."""
    from django.db import connection, transaction

    from timeline.models import ConfigChange, Event

    rng = random.Random(9)
    span_s = scrapes
    changes = []
    keys = [f"SGLANG_SETTING_{i}" for i in range(30)] + ["--max-running-requests", "--tp-size"]
    for i, key in enumerate(keys):
        at = START + dt.timedelta(seconds=rng.randrange(0, wedge_at_s - 4000))
        changes.append((key, str(i), str(i + 1), at))
    changes.append((CTAS, None, "512", START + dt.timedelta(seconds=wedge_at_s - 3600)))
    with transaction.atomic():
        for key, old, new, at in changes:
            ev = Event.objects.create(
                incident=incident,
                at=at,
                kind="config_change",
                lane="config",
                title=f"{key}: {old} -> {new}",
                key=f"doc\x1f{key}\x1f{at.isoformat()}",
                fingerprint=_fp(hash((key, at))),
                attrs={"key": key, "old": old, "new": new},
            )
            ConfigChange.objects.create(
                event=ev,
                incident=incident,
                key=key,
                old_value=old,
                new_value=new,
                scope="env",
                source="doc",
                ref="DSV4_DEPLOY.md@ab12",
            )
    n_rest = n_events - len(changes)
    n_harness = n_rest // 4
    n_spans = span_s // 300
    n_errors = n_rest // 20
    n_requests = n_rest - n_harness - n_spans - n_errors
    inc = incident.pk  # type: ignore[attr-defined]
    cols = ("incident_id", "at", "ends_at", "kind", "lane", "title", "body", "attrs", "key")
    cols += ("fingerprint",)
    serial = 0

    def row(at_s: float, ends_s: float | None, kind: str, lane: str, title: str, attrs: dict):
        nonlocal serial
        serial += 1
        at = START + dt.timedelta(seconds=at_s)
        ends = None if ends_s is None else START + dt.timedelta(seconds=ends_s)
        return (
            inc,
            at,
            ends,
            kind,
            lane,
            title,
            "",
            json.dumps(attrs),
            f"{kind}{serial}",
            _fp(10**9 + serial),
        )

    with transaction.atomic(), connection.cursor() as cur:
        with cur.cursor.copy(f"COPY timeline_event ({', '.join(cols)}) FROM STDIN") as copy:
            for i in range(n_requests):
                at = rng.uniform(0, span_s - 60)
                ends = None if at >= wedge_at_s else at + rng.uniform(2, 50)
                rid = f"{i:032x}"
                copy.write_row(
                    row(at, ends, "request", "requests", f"request {rid[:8]}", {"rid": rid})
                )
            for i in range(n_harness):
                at = i * (span_s / n_harness)
                attrs = {
                    "suite": "dsv4-stability",
                    "case": f"case_{i % 40}",
                    "status": "pass",
                    "score": 0.9,
                }
                copy.write_row(row(at, None, "harness_run", "harness", "harness pass", attrs))
            for i in range(n_spans):
                copy.write_row(row(i * 300, i * 300 + 300, "log_span", "server", "server log", {}))
            for _ in range(n_errors):
                at = rng.uniform(0, span_s)
                copy.write_row(row(at, None, "log_error", "server", "warning: slow batch", {}))
        cur.execute("ANALYZE timeline_event")
    return len(changes) + n_requests + n_harness + n_spans + n_errors


def load_inputs_orm(incident: object) -> object:
    """The slice's original load_inputs: ORM rows, then a fetchall and a datetime per sample
    for each series. The baseline, and the reference the new loader must match exactly."""
    from django.db import connection

    from timeline.analysis import ENGINE_SERIES
    from timeline.correlation.types import (
        Change,
        HarnessRun,
        Inputs,
        LogSpan,
        Marks,
        Params,
        Request,
        Series,
    )
    from timeline.models import ConfigChange, Event

    # The same query as timeline.analysis.load_changes, on purpose: this baseline is the
    # reference the product's loader is checked against (`Inputs` equal), so it keeps its own
    # copy of the slice's code rather than call the code it measures.
    changes = tuple(
        Change(
            ref=c.event_id,
            key=c.key,
            old=c.old_value,
            new=c.new_value,
            at=c.event.at,
            scope=c.scope,
            sources=(f"{c.source}:{c.ref}",),
        )
        for c in ConfigChange.objects.filter(incident=incident)
        .select_related("event")
        .order_by("event__at", "event_id")
    )
    requests = tuple(
        Request(ref=pk, rid=str((attrs or {}).get("rid", key)), received_at=at, finished_at=ends)
        for pk, at, ends, attrs, key in Event.objects.filter(incident=incident, kind="request")
        .order_by("at")
        .values_list("id", "at", "ends_at", "attrs", "key")
    )
    spans = tuple(
        LogSpan(ref=pk, start=at, end=ends or at)
        for pk, at, ends in Event.objects.filter(incident=incident, kind="log_span").values_list(
            "id", "at", "ends_at"
        )
    )
    harness = tuple(
        HarnessRun(
            ref=pk,
            at=at,
            suite=str(attrs.get("suite", "")),
            case=str(attrs.get("case", "")),
            status=str(attrs.get("status", "")),
            score=attrs.get("score") if isinstance(attrs.get("score"), int | float) else None,
        )
        for pk, at, attrs in Event.objects.filter(incident=incident, kind="harness_run")
        .order_by("at")
        .values_list("id", "at", "attrs")
    )
    series = []
    with connection.cursor() as cur:
        cur.execute(
            "SELECT id, name, labels FROM timeline_series WHERE incident_id = %s AND name = ANY(%s)"
            " ORDER BY name, id",
            [incident.pk, list(ENGINE_SERIES)],  # type: ignore[attr-defined]
        )
        for series_id, name, labels in cur.fetchall():
            cur.execute(
                "SELECT EXTRACT(EPOCH FROM ts)::float8, value FROM bench_sample_rows "
                "WHERE series_id = %s ORDER BY ts",
                [series_id],
            )
            arr = np.asarray(cur.fetchall(), dtype=np.float64)
            if isinstance(labels, str):
                labels = json.loads(labels)
            series.append(
                Series(
                    name=name,
                    labels=tuple(sorted((str(k), str(v)) for k, v in (labels or {}).items())),
                    ts=tuple(dt.datetime.fromtimestamp(t, tz=dt.UTC) for t in arr[:, 0].tolist()),
                    values=tuple(arr[:, 1].tolist()),
                )
            )
    return Inputs(
        changes=changes,
        requests=requests,
        log_spans=spans,
        series=tuple(series),
        harness=harness,
        marks=Marks(last_good=incident.last_good_at, first_bad=incident.first_bad_at),  # type: ignore[attr-defined]
        params=Params(),
    )


def build_big_incident(events: int = 1_000_000, scrapes: int = 25_000) -> object:
    """An incident of its own team with ``events`` events and 200 series x ``scrapes`` samples
    (as ``main`` loads them, without the row-per-sample baseline table), in the database Django
    is set up on. The incident stays there."""
    from timeline.models import Incident, Team

    tag = f"big-analysis-{os.getpid()}-{time.time_ns()}"
    team = Team.objects.create(name=tag, slug=tag)
    incident = Incident.objects.create(slug=tag, title=f"Bench {tag}", team=team)
    wedge_at_s = int(scrapes * 0.85)
    _common.load_fleet_metrics(incident, scrapes, wedge_at_s)
    load_events(incident, events, scrapes, wedge_at_s)
    return incident


def time_analysis_run(incident: object, repeat: int = 3) -> tuple[float, float]:
    """Best wall time and best CPU time of this process (the Postgres backend's not counted)
    of ``analysis_run`` on the incident, over ``repeat`` runs (each a new analysis version)."""
    from django.db.models import F

    from timeline import analysis
    from timeline.models import Incident

    walls, cpus = [], []
    for _ in range(repeat):
        Incident.objects.filter(pk=incident.pk).update(  # type: ignore[attr-defined]
            analysis_version=F("analysis_version") + 1
        )
        started, cpu = time.perf_counter(), time.process_time()
        result = analysis.analysis_run(incident_id=incident.pk)  # type: ignore[attr-defined]
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
        assert result is not None and result.status == "done", result
    return min(walls), min(cpus)


def big_analysis_seconds(
    events: int = 1_000_000, scrapes: int = 25_000, repeat: int = 3
) -> tuple[float, object]:
    """Issue 17, point 6: build a big incident (``events`` events + 200 x ``scrapes`` samples) in
    the current, already set up database and return the best wall time (s) of analysis_run on
    it over ``repeat`` runs, and the incident. Building 1M events takes a minute or two; the
    incident is left in the database. ``scrapes`` must be over 4,706 (the config changes need
    the 4,000 s before the wedge, which comes at 85 % of them)."""
    incident = build_big_incident(events, scrapes)
    return time_analysis_run(incident, repeat)[0], incident


def version_reads(incident: object, repeat: int = 20) -> tuple[float, float]:
    """The incident's version (read by every poll of an open page, every 4 s, and by every
    timeline.json) on this incident, p50 ms of ``repeat`` reads: the change log of migration
    0018 against 0017's function, which counted the events (the baseline, as a temporary
    function in the same database). Printed; returns (ours, 0017's)."""
    import importlib
    import statistics

    from django.db import connection

    from timeline.models import Event

    old = importlib.import_module("timeline.migrations.0017_incident_version_note_edits").CREATE
    old = old.replace("FUNCTION timeline_incident_version(", "FUNCTION pg_temp.version_0017(")
    timings: dict[str, list[float]] = {"timeline_incident_version": [], "pg_temp.version_0017": []}
    with connection.cursor() as cur:
        cur.execute(old)
        for _ in range(repeat):
            for name, times in timings.items():
                started = time.perf_counter()
                cur.execute(f"SELECT {name}(%s)", [incident.pk])  # type: ignore[attr-defined]
                cur.fetchone()
                times.append(time.perf_counter() - started)
    ours, theirs = (statistics.median(t) * 1000 for t in timings.values())
    events = Event.objects.filter(incident=incident).count()
    print(
        f"incident version at {events:,} events: {ours:.2f} ms "
        f"(0017's counting function {theirs:.2f} ms, x{ours / theirs:.3f})"
    )
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=25_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument(
        "--big-events", type=int, default=1_000_000, help="the issue 17 run (0: skip it)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--time-limit", type=int, default=600)
    args = parser.parse_args()
    _common.setup("correlate", time_limit=args.time_limit)

    from timeline import analysis
    from timeline.correlation import engine
    from timeline.metrics import reader
    from timeline.models import Finding, Incident

    _, _, incident = _common.team_user_incident("correlate-bench")
    wedge_at_s = int(args.scrapes * 0.85)
    print("loading")
    with _common.timed("COPY samples"):
        n_samples = _common.load_fleet_metrics(incident, args.scrapes, wedge_at_s, rows_table=True)
    with _common.timed("COPY events"):
        n_events = load_events(incident, args.events, args.scrapes, wedge_at_s)
    assert reader.samples_count() == n_samples
    print(f"  {n_events:,} events, {n_samples:,} samples")

    print(f"\ntimings (best of {args.repeat})")
    incident = Incident.objects.get(pk=incident.pk)
    inputs = analysis.load_inputs(incident)
    n_engine = sum(len(s.ts) for s in inputs.series)
    t_load = _common.best_of(lambda: analysis.load_inputs(incident), args.repeat)
    t_series = _common.best_of(lambda: analysis._load_series(incident), args.repeat)
    started = time.perf_counter()
    old = load_inputs_orm(incident)
    t_baseline = time.perf_counter() - started
    t_engine = _common.best_of(lambda: engine.analyze(inputs), args.repeat)
    # The new loader gives exactly the Inputs of the original one.
    assert old == inputs, "load_inputs differs from the original loader"
    t_run, cpu_run = time_analysis_run(incident, args.repeat)
    result = analysis.current_analysis(incident)
    assert result is not None
    suspects = list(Finding.objects.filter(analysis=result, kind="suspect").order_by("rank")[:3])
    print(f"  load_inputs                                  {t_load:8.3f} s")
    print(
        f"    of which _load_series ({len(inputs.series)} series, {n_engine:,} samples) "
        f"{t_series:6.3f} s"
    )
    print(f"  baseline: the original ORM/fetchall loader   {t_baseline:8.3f} s (same Inputs)")
    print(f"  engine.analyze                               {t_engine:8.3f} s")
    print(f"  analysis_run end to end                      {t_run:8.3f} s   (CPU {cpu_run:.3f} s)")
    n_findings = Finding.objects.filter(analysis=result).count()
    print(
        f"    of which storing {n_findings:,} findings + result JSON (rest) "
        f"{t_run - t_load - t_engine:6.3f} s"
    )
    print(f"  first suspect: {suspects[0].title if suspects else '(none)'}")
    assert suspects and CTAS in suspects[0].title, [s.title for s in suspects]
    big = None
    if args.events >= args.big_events > 0:
        big = (args.events, t_run, cpu_run)
    elif args.big_events:
        print(f"\nissue 17: {args.big_events:,} events + {n_samples:,} samples")
        with _common.timed("build the incident (COPY)"):
            big_incident = build_big_incident(args.big_events, args.scrapes)
        big = (args.big_events, *time_analysis_run(big_incident, args.repeat))
        print(
            f"  analysis_run end to end                      {big[1]:8.3f} s   (CPU {big[2]:.3f} s)"
        )
    print("\nsummary")
    print(f"  RATIO load_inputs speed-up over the original loader {t_baseline / t_load:.1f}x")
    print(
        f"  breakdown ({n_events:,} events): load_inputs {t_load:.2f} s + engine "
        f"{t_engine:.2f} s; analysis_run {t_run:.2f} s"
    )
    if big is not None:
        n, wall, cpu = big
        print(
            f"  analysis_run at {n:,} events + {n_samples:,} samples: {wall:.2f} s "
            f"(CPU {cpu:.2f} s; target <= 2 s: {'met' if wall <= 2 else 'MISSED'}); "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )


if __name__ == "__main__":
    main()
