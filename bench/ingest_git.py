"""Issue 14 B: a real repository's history ingested, against ``git log --numstat`` on it.

The product's side is what ``manage.py ingest REPO`` does, without the analysis: register the
repository as an artifact (its HEAD), read the history with the git client, turn it into
records with the pure parser and load them into Postgres in one transaction. The baseline is
``git log --numstat`` on the same repository, its output read to the end (sent to a pipe, as
the product reads it). Both are timed best of ``--repeat``; each product run ingests into a
new incident of the scratch database, so no run is a no-op re-ingest.

    git clone -q PATH/TO/a-5000-commit-repository /tmp/flask   # e.g. pallets/flask
    .venv/bin/python bench/ingest_git.py /tmp/flask [--repeat 3]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import resource
import subprocess
import sys
import time
from pathlib import Path

# Run as a script, sys.path[0] is bench/, where this file would shadow the ingest package.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import _common  # noqa: E402

TARGET = 3.0


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (git) so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def backend_cpu_seconds() -> float:
    """CPU time of this process's Postgres backend so far (/proc: the server is local)."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def git_log_numstat(repo: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds for ``git log --numstat`` over HEAD, and the bytes it wrote."""
    cpu = cpu_seconds()
    started = time.perf_counter()
    proc = subprocess.run(
        ["git", "-C", str(repo), "log", "--numstat", "HEAD"],
        capture_output=True,
        check=True,
    )
    return time.perf_counter() - started, cpu_seconds() - cpu, len(proc.stdout)


def product_ingest(repo: Path, run: int) -> tuple[float, float, dict[str, int], dict[str, float]]:
    """One ``ingest REPO`` (no analysis) into a fresh incident: wall and CPU seconds (this
    process, git, and the Postgres backend), counts, phases."""
    from ingest.clients import git as git_client
    from ingest.parsers import gitcommits
    from ingest.services.orchestration import Load, NewIncident, bundle_ingest
    from timeline.models import ConfigChange, Event

    phases: dict[str, float] = {}
    read = git_client.read_history
    to_result = gitcommits.commits_to_result

    def timed_read(*args: object, **kwargs: object) -> object:
        started = time.perf_counter()
        try:
            return read(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            phases["git client (git log + blobs)"] = time.perf_counter() - started

    def timed_result(*args: object, **kwargs: object) -> object:
        started = time.perf_counter()
        try:
            return to_result(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            phases["parser (commits -> records)"] = time.perf_counter() - started

    git_client.read_history = timed_read  # type: ignore[assignment]
    gitcommits.commits_to_result = timed_result  # type: ignore[assignment]
    gc.collect()
    cpu = cpu_seconds() + backend_cpu_seconds()
    started = time.perf_counter()
    try:
        outcome = bundle_ingest(
            incident=NewIncident(slug=f"bench-git-{run}"),
            path=repo,
            load=Load.HERE,
            analyze=False,
        )
    finally:
        git_client.read_history = read  # type: ignore[assignment]
        gitcommits.commits_to_result = to_result  # type: ignore[assignment]
    total = time.perf_counter() - started
    cpu = cpu_seconds() + backend_cpu_seconds() - cpu
    phases["load (rows) and the rest"] = total - sum(phases.values())
    failed = [f"{a.name}: {a.error}" for a in outcome.failed]
    if failed or len(outcome.artifacts) != 1:
        raise SystemExit(
            f"the ingest did not give one loaded repository artifact: "
            f"{len(outcome.artifacts)} artifacts, failed: {failed[:3]}"
        )
    incident = outcome.incident
    counts = {
        "commits": Event.objects.filter(incident=incident, kind="commit").count(),
        "doc revisions": Event.objects.filter(incident=incident, kind="doc_revision").count(),
        "config changes": ConfigChange.objects.filter(incident=incident).count(),
        "warnings": len((outcome.artifacts[0].counts or {}).get("warnings", [])),
    }
    return total, cpu, counts, phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="a local clone (never the read-only mirror)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--time-limit", type=int, default=900)
    parser.add_argument("--profile", action="store_true", help="cProfile one more product run")
    args = parser.parse_args()
    repo = args.repo.resolve()
    commits = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--count", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    _common.setup("ingest_git", time_limit=args.time_limit)
    print(f"repository {repo}: {commits} commits on HEAD")

    # Alternate the two, so that both meet the same load from the machine's other work.
    baseline: list[tuple[float, float]] = []
    ours: list[tuple[float, float]] = []
    counts: dict[str, int] = {}
    best_phases: dict[str, float] = {}
    size = 0
    for run in range(args.repeat):
        seconds, cpu, size = git_log_numstat(repo)
        baseline.append((seconds, cpu))
        seconds, cpu, counts, phases = product_ingest(repo, run)
        if not ours or seconds < min(ours)[0]:
            best_phases = phases
        ours.append((seconds, cpu))
        print(f"  run {run + 1}: git log --numstat {baseline[-1][0]:.2f} s, ingest {seconds:.2f} s")
    base_wall, base_cpu = min(w for w, _ in baseline), min(c for _, c in baseline)
    our_wall, our_cpu = min(w for w, _ in ours), min(c for _, c in ours)
    print(f"  git log --numstat (best of {args.repeat})        {base_wall:8.3f} s  {size:,} B")
    print(f"  ingest REPO, no analysis (best of {args.repeat}) {our_wall:8.3f} s")
    for label, seconds in best_phases.items():
        print(f"    {label:<40} {seconds:8.3f} s")
    print("  loaded: " + ", ".join(f"{n:,} {what}" for what, n in counts.items()))
    print(
        f"  CPU (best): git log --numstat {base_cpu:.2f} s; ingest {our_cpu:.2f} s "
        f"(this process + git + its Postgres backend) -> {our_cpu / base_cpu:.2f}"
    )

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        product_ingest(repo, args.repeat)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)

    ratio = our_wall / base_wall
    verdict = "met" if ratio <= TARGET else "NOT met"
    print(
        f"\nRATIO ingest / git log --numstat {ratio:.2f} "
        f"({our_wall:.2f} s vs {base_wall:.2f} s wall; target <= {TARGET:g}) -> {verdict}"
    )


if __name__ == "__main__":
    main()
