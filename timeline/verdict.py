"""The verdict at the top of the timeline: what the current analysis concluded, in a few lines.

Everything here is read from the stored analysis (its findings and its ``result`` JSON); nothing
is re-derived from the evidence. The engine gives each suspect a score and its reasons, each
reason ending in its contribution ("... (+2)"). The "strongest reasons" are the ones that added
the most. When the analysis says it cannot separate the top suspects (its ``bisect`` revert
plan, from the server logs) the verdict says so and what to revert first; otherwise how sure the
ranking is comes from the server logs' verdict on the top suspect and the gap between the top
scores (the analysis' own separation threshold).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from timeline.choices import FindingKind
from timeline.models import Analysis, Finding, Incident, Series

TOP_SUSPECTS_ON_CHARTS = 3
STRONGEST_REASONS = 3
# Score gaps between the top suspect and the next one: at least CLEAR is a clear lead, below
# CLOSE the evidence does not separate them (the scores are sums of small integer weights).
CLEAR_LEAD = 2.0
CLOSE = 1.0
CONVICTED = "convicted"

_STEP = re.compile(r"\d+\.\s+Revert\s+(\S+)")
_CONTRIBUTION = re.compile(r"\(([+-]?\d+(?:\.\d+)?)\)\s*$")


def contribution(reason: str) -> float:
    """The score a reason added, from its trailing "(+N)"; 0 when it names none."""
    m = _CONTRIBUTION.search(reason)
    return float(m.group(1)) if m else 0.0


def strongest_reasons(reasons: list[str], n: int = STRONGEST_REASONS) -> list[str]:
    """The reasons that added the most to the score, best first (only those that added)."""
    ranked = sorted(reasons, key=contribution, reverse=True)
    return [r for r in ranked if contribution(r) > 0][:n] or ranked[:1]


@dataclass(frozen=True)
class Suspect:
    finding_id: int
    rank: int
    key: str
    title: str
    at: dt.datetime | None
    score: float
    sources: list[str]
    reasons: list[str]
    live_verdict: str = ""  # what the server logs showed: "convicted", "open", "cleared"


@dataclass(frozen=True)
class Verdict:
    first_bad: Finding | None
    last_good: Finding | None
    top: Suspect | None
    others: list[Suspect]
    confidence: str  # "high", "medium", "low" or "" when there is no suspect
    separable: bool  # False: the evidence cannot tell the top candidates apart
    try_first: list[Suspect] = field(default_factory=list)  # when not separable, in this order
    gap: float | None = None
    statement: str = ""  # the analysis' own words when it cannot separate them
    steps: list[str] = field(default_factory=list)  # its revert plan, first step first


def _suspect(f: Finding) -> Suspect:
    data = f.data or {}
    return Suspect(
        finding_id=f.pk,
        rank=f.rank,
        key=str(data.get("key") or f.title),
        title=f.title,
        at=f.at,
        score=float(f.score or 0.0),
        sources=[str(s) for s in data.get("sources") or []],
        reasons=strongest_reasons([str(r) for r in data.get("reasons") or []]),
        live_verdict=str((data.get("live") or {}).get("verdict") or ""),
    )


def verdict(analysis: Analysis | None, findings: list[Finding]) -> Verdict | None:
    """The verdict of an analysis from its findings (already fetched by the page)."""
    if analysis is None:
        return None
    by_kind: dict[str, list[Finding]] = {}
    for f in findings:
        by_kind.setdefault(f.kind, []).append(f)
    suspects = [_suspect(f) for f in sorted(by_kind.get(FindingKind.SUSPECT, []), key=_rank)]
    top = suspects[0] if suspects else None
    result: dict[str, Any] = analysis.result or {}
    gap = suspects[0].score - suspects[1].score if len(suspects) > 1 else None
    confidence, separable = _confidence(gap, top)
    # The analysis' own revert plan when the server logs could not separate the suspects:
    # its first line says so, the numbered steps say what to revert first.
    plan = [str(line) for line in result.get("bisect") or []]
    statement = plan[0] if plan else ""
    steps = [line for line in plan[1:] if line[:1].isdigit()]
    if plan and top is not None:
        separable, confidence = False, "low"
    try_first: list[Suspect] = []
    if not separable and top is not None:
        if steps:
            try_first = [s for step in steps for s in suspects if _names(step, s.key)]
        if not try_first:
            try_first = [s for s in suspects if top.score - s.score < CLOSE]
        try_first = try_first[:TOP_SUSPECTS_ON_CHARTS]
    return Verdict(
        first_bad=next(iter(by_kind.get(FindingKind.FIRST_BAD, [])), None),
        last_good=next(iter(by_kind.get(FindingKind.LAST_GOOD, [])), None),
        top=top,
        others=suspects[1:TOP_SUSPECTS_ON_CHARTS],
        confidence=confidence,
        separable=separable,
        try_first=try_first,
        gap=gap,
        statement=statement,
        steps=steps,
    )


def _names(step: str, key: str) -> bool:
    """Whether a plan step ("2. Revert KEY to ...") is about this key."""
    m = _STEP.match(step)
    return m is not None and m.group(1) == key


def _rank(f: Finding) -> int:
    return f.rank


def _confidence(gap: float | None, top: Suspect | None) -> tuple[str, bool]:
    """How sure the ranking is: high when the server logs convicted the top suspect or its
    score leads by CLEAR_LEAD; low (not separable) when the next one is within CLOSE, the
    analysis' own separation threshold."""
    if top is None:
        return "", True
    if top.live_verdict == CONVICTED or gap is None or gap >= CLEAR_LEAD:
        return "high", True
    if gap >= CLOSE:
        return "medium", True
    return "low", False


NO_METRICS = "no metrics were given"


def warning_texts(incident: Incident, warnings: list[Finding]) -> list[str]:
    """The analysis' caveats, worded from what the incident holds: "no metrics were given"
    when the incident does hold metrics (not those the analysis reads) says which it holds."""
    out = []
    for w in warnings:
        text = w.title
        if text.startswith(NO_METRICS):
            custom = list(
                Series.objects.filter(incident=incident)
                .order_by("name")
                .values_list("name", "sample_count")
            )
            if custom:
                names = sorted({name for name, _ in custom})
                samples = sum(n for _, n in custom)
                shown = ", ".join(names[:3]) + (
                    f" and {len(names) - 3} more" if len(names) > 3 else ""
                )
                text = (
                    f"none of the metrics the analysis reads (running requests, generation "
                    f"throughput, GPU utilisation) were given, so wedges were not checked; "
                    f"{len(names)} other metric{'s' if len(names) != 1 else ''} ({shown}, "
                    f"{samples:,} samples) can be drawn from the metric panels"
                )
        out.append(text)
    return out
