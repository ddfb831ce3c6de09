"""The situations of issue 13, each a scenario built from a seed (culprit, decoys, times, time
zone and noise drawn from it). The scenario suite runs each with fixed seeds; bench/accuracy.py
draws many more."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import replace

from evidence.vocabulary import SymptomKind
from tests.correlation.livestory import (
    BASE_ARGS,
    BASE_ENV,
    CRASH_KINDS,
    CULPRITS,
    DECOYS,
    OOM_CULPRITS,
    Edit,
    Plan,
    Scenario,
    zone,
)
from timeline.correlation.relevance import LOW, relevance

ZONES = (
    "UTC",
    "America/Los_Angeles",
    "America/New_York",
    "Europe/Berlin",
    "Europe/London",
    "Asia/Shanghai",
    "Asia/Kolkata",
    "Australia/Sydney",
)
# The nights the clocks go back (2026): the hour after 01:00 happens twice.
FALL_BACK = {
    "America/Los_Angeles": dt.date(2026, 11, 1),
    "America/New_York": dt.date(2026, 11, 1),
    "Europe/Berlin": dt.date(2026, 10, 25),
    "Europe/London": dt.date(2026, 10, 25),
}


class Draw:
    """The random choices of one scenario."""

    def __init__(self, seed: int, tz: str | None = None) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.tz_name = tz or self.rng.choice(ZONES)
        self.tz = zone(self.tz_name)
        self.day = dt.date(2026, 1, 5) + dt.timedelta(days=self.rng.randint(0, 330))
        self.used: set[str] = set()

    def local(self, hours: float, day: dt.date | None = None) -> dt.datetime:
        """``hours`` after local midnight of the day (``hours`` may pass 24), as aware UTC."""
        base = dt.datetime.combine(day or self.day, dt.time(0), tzinfo=self.tz)
        return (base.astimezone(dt.UTC) + dt.timedelta(hours=hours)).astimezone(dt.UTC)

    def culprit(self, pool: list[tuple[str, object]] = CULPRITS) -> tuple[str, object]:
        key, value = self.rng.choice(pool)
        self.used.add(key)
        return key, value

    def decoy(self, low: bool | None = None) -> tuple[str, object]:
        """A harmless change; ``low`` True: one whose name is plumbing (it must not outrank a
        culprit it ships with, which only the evidence or the prior can tell apart)."""
        pool = [
            (k, v)
            for k, v in DECOYS
            if k not in self.used
            and (low is None or (relevance(k, SymptomKind.WEDGE).level == LOW) == low)
        ]
        key, value = self.rng.choice(pool)
        self.used.add(key)
        return key, value

    def old(self, key: str) -> object:
        return BASE_ENV.get(key) if key.isupper() else BASE_ARGS.get(key)

    def trigger(self) -> dt.timedelta:
        return dt.timedelta(minutes=self.rng.randint(25, 80))

    def hours(self, lo: float, hi: float) -> float:
        return round(self.rng.uniform(lo, hi), 2)

    def noise(self, plans: list[Plan], trigger: dt.timedelta) -> list[Plan]:
        """A quiet restart with nothing changed inside the clean first interval, sometimes with
        no ServerArgs line: what real logs hold."""
        first = plans[0]
        if self.rng.random() < 0.5 and first.hours > 4.5:
            split = self.hours(2.2, first.hours - 2.2)
            plans = [
                Plan(first.at, split, first.edits),
                Plan(
                    first.at + dt.timedelta(hours=split),
                    first.hours - split,
                    (),
                    logged=self.rng.random() < 0.7,
                ),
                *plans[1:],
            ]
        last = plans[-1]
        if self.rng.random() < 0.3 and last.edits and last.hours > 1.5:
            # Restarted again soon after the deploy, before the culprit had bitten: the culprit
            # itself then shows a short clean run under its bad value.
            brief = round(self.rng.uniform(0.15, 0.35), 2)
            plans = [
                *plans[:-1],
                Plan(last.at, brief, last.edits),
                Plan(last.at + dt.timedelta(hours=brief), last.hours - brief, ()),
            ]
        return plans


def _start(d: Draw) -> float:
    return d.rng.uniform(5.0, 9.0)


def deploy_at_restart(d: Draw) -> Scenario:
    """Recorded hours before, live only at the restart; a plumbing decoy ships with it."""
    key, bad = d.culprit()
    dkey, dval = d.decoy(low=True)
    t0 = _start(d)
    p0 = Plan(d.local(t0), d.hours(4.5, 7))
    p1 = Plan(
        p0.at + dt.timedelta(hours=p0.hours), d.hours(2, 4), (Edit(key, bad), Edit(dkey, dval))
    )
    trig = d.trigger()
    return Scenario(
        "deploy at restart",
        d.tz,
        tuple(d.noise([p0, p1], trig)),
        key,
        bad,
        trigger=trig,
        seed=d.seed,
    )


def committed_not_deployed(d: Draw) -> Scenario:
    """A scheduling change committed just before first bad but never deployed."""
    s = deploy_at_restart(d)
    ukey, uval = d.decoy(low=False)
    first_bad = s.plans[-1].at + s.trigger
    unrun = ((first_bad - dt.timedelta(minutes=d.rng.randint(5, 40)), ukey, uval),)
    return Scenario(
        "committed, not deployed",
        d.tz,
        s.plans,
        s.culprit,
        s.bad,
        unrun=unrun,
        trigger=s.trigger,
        seed=d.seed,
    )


def hand_launched_drift(d: Draw) -> Scenario:
    """The culprit was passed by hand at the restart: no doc or commit has it."""
    key, bad = d.culprit([c for c in CULPRITS if not c[0].isupper()])
    dkey, dval = d.decoy(low=True)
    p0 = Plan(d.local(_start(d)), d.hours(4.5, 7))
    p1 = Plan(
        p0.at + dt.timedelta(hours=p0.hours),
        d.hours(2, 4),
        (Edit(key, bad, "drift"), Edit(dkey, dval)),
    )
    trig = d.trigger()
    return Scenario(
        "hand-launched drift",
        d.tz,
        tuple(d.noise([p0, p1], trig)),
        key,
        bad,
        trigger=trig,
        seed=d.seed,
    )


def decoys_ran_cleanly(d: Draw) -> Scenario:
    """Scheduling-named changes went live first and ran cleanly, not long enough to be last
    known good; the culprit (any name) went live after them."""
    key, bad = d.culprit()
    decoys = tuple(Edit(*d.decoy(low=False)) for _ in range(d.rng.randint(1, 2)))
    p0 = Plan(d.local(_start(d)), d.hours(4.5, 6))
    p1 = Plan(p0.at + dt.timedelta(hours=p0.hours), d.hours(1.2, 1.9), decoys)
    p2 = Plan(p1.at + dt.timedelta(hours=p1.hours), d.hours(2, 4), (Edit(key, bad),))
    trig = d.trigger()
    return Scenario("decoys ran cleanly", d.tz, (p0, p1, p2), key, bad, trigger=trig, seed=d.seed)


def fix_attempt(d: Draw) -> Scenario:
    """Culprit and a scheduling decoy shipped together; after first bad the decoy was reverted
    and the symptoms went on."""
    key, bad = d.culprit()
    dkey, dval = d.decoy(low=False)
    trig = d.trigger()
    p0 = Plan(d.local(_start(d)), d.hours(4.5, 6))
    p1 = Plan(
        p0.at + dt.timedelta(hours=p0.hours),
        trig.total_seconds() / 3600 + 0.6,
        (Edit(key, bad), Edit(dkey, dval)),
    )
    p2 = Plan(p1.at + dt.timedelta(hours=p1.hours), d.hours(2, 3), (Edit(dkey, d.old(dkey)),))
    return Scenario(
        "fix attempt after first bad", d.tz, (p0, p1, p2), key, bad, trigger=trig, seed=d.seed
    )


def revert_and_restore(d: Draw) -> Scenario:
    """The culprit was reverted (clean for hours), then restored (the symptoms came back)."""
    key, bad = d.culprit()
    dkey, dval = d.decoy(low=False)
    trig = d.trigger()
    bite = trig.total_seconds() / 3600 + 0.6
    p0 = Plan(d.local(_start(d)), d.hours(4.5, 6))
    p1 = Plan(p0.at + dt.timedelta(hours=p0.hours), bite, (Edit(key, bad), Edit(dkey, dval)))
    p2 = Plan(p1.at + dt.timedelta(hours=p1.hours), d.hours(2.2, 3.5), (Edit(key, d.old(key)),))
    p3 = Plan(p2.at + dt.timedelta(hours=p2.hours), bite + 0.5, (Edit(key, bad),))
    return Scenario(
        "revert and restore", d.tz, (p0, p1, p2, p3), key, bad, trigger=trig, seed=d.seed
    )


def crash_only(d: Draw) -> Scenario:
    """The only symptoms are crashes (scheduler exception, OOM, watchdog) and their restarts."""
    kind = d.rng.choice(CRASH_KINDS)
    s = deploy_at_restart(d) if kind != SymptomKind.OOM else None
    if s is None:
        key, bad = d.culprit(OOM_CULPRITS)
        dkey, dval = d.decoy(low=True)
        p0 = Plan(d.local(_start(d)), d.hours(4.5, 7))
        p1 = Plan(
            p0.at + dt.timedelta(hours=p0.hours), d.hours(2, 4), (Edit(key, bad), Edit(dkey, dval))
        )
        s = Scenario("", d.tz, (p0, p1), key, bad, trigger=d.trigger())
    return Scenario(
        "crash-only symptoms",
        d.tz,
        s.plans,
        s.culprit,
        s.bad,
        symptom=kind,
        trigger=s.trigger,
        metrics=d.rng.random() < 0.5,
        seed=d.seed,
    )


def logs_without_metrics(d: Draw) -> Scenario:
    s = decoys_ran_cleanly(d)
    return replace(
        s, name="logs without metrics", symptom=SymptomKind.DROPPED_REQUEST, metrics=False
    )


def metrics_without_logs(d: Draw) -> Scenario:
    """No server log: the changes are dated by their records, as before issue 13."""
    key, bad = d.culprit()
    dkey, dval = d.decoy()
    p0 = Plan(d.local(_start(d)), d.hours(2.5, 4))
    p1 = Plan(p0.at + dt.timedelta(hours=p0.hours), d.hours(3, 5), (Edit(dkey, dval),))
    p2 = Plan(p1.at + dt.timedelta(hours=p1.hours), d.hours(2, 4), (Edit(key, bad),))
    return Scenario(
        "metrics without logs",
        d.tz,
        (p0, p1, p2),
        key,
        bad,
        trigger=d.trigger(),
        logs=False,
        seed=d.seed,
    )


def no_harness(d: Draw) -> Scenario:
    return replace(committed_not_deployed(d), name="no harness", harness=False)


def dst_night(d: Draw) -> Scenario:
    """The culprit bites in the hour the clocks go back."""
    d.tz_name = d.rng.choice(sorted(FALL_BACK))
    d.tz = zone(d.tz_name)
    night = FALL_BACK[d.tz_name]
    key, bad = d.culprit()
    dkey, dval = d.decoy(low=True)
    trig = d.trigger()
    p0 = Plan(d.local(18.5 + d.rng.random(), night - dt.timedelta(days=1)), 0.0)
    live = d.local(25.0, night - dt.timedelta(days=1)) - trig  # the culprit bites at 01:00-02:00
    live += dt.timedelta(minutes=d.rng.randint(0, 50))
    p0 = Plan(p0.at, (live - p0.at).total_seconds() / 3600)
    p1 = Plan(live, d.hours(3, 4), (Edit(key, bad), Edit(dkey, dval)))
    return Scenario("DST night", d.tz, (p0, p1), key, bad, trigger=trig, seed=d.seed)


def many_changes_one_minute(d: Draw) -> Scenario:
    """A doc rewrite records many settings in one minute; most change nothing that runs."""
    key, bad = d.culprit()
    dkey, dval = d.decoy(low=True)
    p0 = Plan(d.local(_start(d)), d.hours(4.5, 6))
    at = p0.at + dt.timedelta(hours=p0.hours)
    lead = dt.timedelta(minutes=d.rng.randint(10, 60))
    when = at - lead
    edits = [Edit(key, bad, lead=lead), Edit(dkey, dval, lead=lead)]
    plan = Plan(at, d.hours(2, 4), tuple(edits))
    same = [
        k
        for k in (
            "tp_size",
            "mem_fraction_static",
            "stream_interval",
            "log_requests",
            "schedule_conservativeness",
            "SGLANG_ENABLE_PDL",
        )
        if k not in d.used
    ]
    unrun = tuple((when, k, d.old(k)) for k in same)
    return Scenario(
        "many changes in one minute",
        d.tz,
        (p0, plan),
        key,
        bad,
        unrun=unrun,
        trigger=d.trigger(),
        seed=d.seed,
    )


SITUATIONS: dict[str, Callable[[Draw], Scenario]] = {
    "deploy_at_restart": deploy_at_restart,
    "committed_not_deployed": committed_not_deployed,
    "hand_launched_drift": hand_launched_drift,
    "decoys_ran_cleanly": decoys_ran_cleanly,
    "fix_attempt": fix_attempt,
    "revert_and_restore": revert_and_restore,
    "crash_only": crash_only,
    "logs_without_metrics": logs_without_metrics,
    "metrics_without_logs": metrics_without_logs,
    "no_harness": no_harness,
    "dst_night": dst_night,
    "many_changes_one_minute": many_changes_one_minute,
}


def scenario(name: str, seed: int, tz: str | None = None) -> Scenario:
    return SITUATIONS[name](Draw(seed, tz))
