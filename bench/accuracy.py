"""Issue 13: how often the right change ranks first on incidents the engine has never seen.

Draws incidents across the twelve situations of tests/correlation/situations.py (deploy at
restart, committed not deployed, hand-launched drift, decoys that ran cleanly, a fix attempt,
revert and restore, crash-only symptoms, logs without metrics, metrics without logs, no
harness, a DST night, many changes in one minute) with seeds, time zones, dates, trigger times,
decoys and quiet restarts drawn at random (seeds from 1,000,000 up: never the tests' seeds).
Each incident is written as real files and read back through the ingest parsers (``--via
inputs`` skips the files), then analysed; prints top-1, top-3 and crashes per situation, and
the same incidents analysed the pre-issue-13 way (server starts ignored) for comparison.

    .venv/bin/python bench/accuracy.py [--incidents 600] [--seed 2026] [--via files|inputs]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

# Run as a script, sys.path[0] is bench/; the project root must come first.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

from tests.correlation.livestory import World, simulate, world_inputs  # noqa: E402
from tests.correlation.realformat import parse_inputs, render  # noqa: E402
from tests.correlation.situations import SITUATIONS, scenario  # noqa: E402
from timeline.correlation import keys  # noqa: E402
from timeline.correlation.engine import analyze  # noqa: E402
from timeline.correlation.types import Inputs, Result  # noqa: E402

TEST_SEEDS = frozenset(range(1000))


def _inputs(world: World, via: str) -> Inputs:
    if via == "inputs":
        return world_inputs(world)
    return parse_inputs(render(world), world.scenario.tz)


def _rank(world: World, result: Result) -> int | None:
    fields = frozenset(world.starts[0][1]) if world.starts else frozenset()
    ranked = [keys.canonical(s.change.key, s.change.scope, fields) for s in result.suspects]
    culprit = world.scenario.culprit
    return ranked.index(culprit) + 1 if culprit in ranked else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--incidents", type=int, default=600)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--via", choices=("files", "inputs"), default="files")
    parser.add_argument("--show", type=int, default=5, help="misses to print")
    parser.add_argument("--traceback", action="store_true", help="print each crash's traceback")
    args = parser.parse_args()

    draw = random.Random(args.seed)
    names = sorted(SITUATIONS)
    stats: Counter[tuple[str, str]] = Counter()
    misses: list[str] = []
    started = time.perf_counter()
    for n in range(args.incidents):
        name = names[n % len(names)]
        seed = draw.randrange(1_000_000, 2**31)
        assert seed not in TEST_SEEDS
        stats[name, "n"] += 1
        try:
            world = simulate(scenario(name, seed))
            inputs = _inputs(world, args.via)
            result = analyze(inputs)
            before = analyze(dataclasses.replace(inputs, starts=(), errors=()))
        except Exception as exc:  # a crash is a figure of this benchmark, never a stop
            stats[name, "crash"] += 1
            misses.append(f"{name} seed {seed}: crashed: {type(exc).__name__}: {exc}")
            if args.traceback:
                traceback.print_exc()
            continue
        rank = _rank(world, result)
        stats[name, "top1"] += rank == 1
        stats[name, "top3"] += rank is not None and rank <= 3
        stats[name, "before1"] += _rank(world, before) == 1
        if rank != 1:
            top = [s.change.key for s in result.suspects[:3]]
            misses.append(f"{name} seed {seed}: culprit {world.scenario.culprit} at {rank}; {top}")
    elapsed = time.perf_counter() - started

    print(f"{args.incidents} incidents (--seed {args.seed}, via {args.via}) in {elapsed:.1f} s")
    print(f"{'situation':28} {'n':>4} {'top-1':>7} {'top-3':>7} {'crash':>5} {'pre-13 top-1':>13}")
    for name in names + ["all"]:
        keys_ = names if name == "all" else [name]
        n = sum(stats[k, "n"] for k in keys_)
        top1 = sum(stats[k, "top1"] for k in keys_)
        top3 = sum(stats[k, "top3"] for k in keys_)
        crash = sum(stats[k, "crash"] for k in keys_)
        before1 = sum(stats[k, "before1"] for k in keys_)
        print(
            f"{name:28} {n:>4} {100 * top1 / n:>6.1f}% {100 * top3 / n:>6.1f}% {crash:>5} "
            f"{100 * before1 / n:>12.1f}%"
        )
    for line in misses[: args.show]:
        print("miss:", line)
    n = args.incidents
    top1 = sum(stats[k, "top1"] for k in names) / n
    top3 = sum(stats[k, "top3"] for k in names) / n
    crashes = sum(stats[k, "crash"] for k in names)
    return 0 if top1 >= 0.95 and top3 == 1.0 and crashes == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
