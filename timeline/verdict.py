"""The verdict at the top of the timeline: what the current analysis concluded, in a few lines.

Everything here is read from the stored analysis (its findings and its ``result`` JSON); nothing
is re-derived from the evidence. The engine gives each suspect a score and its reasons, each
reason ending in its contribution ("... (+2)"). The "strongest reasons" are the ones that added
the most; how sure the ranking is comes from the analysis when it says so (a ``confidence`` or
``separable``/``tied`` field on the result), otherwise from the gap between the top scores.
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
    confidence, separable = _confidence(result, gap, top is not None)
    try_first: list[Suspect] = []
    if not separable and top is not None:
        order = result.get("try_first") or result.get("bisect_order")
        if isinstance(order, list) and order:
            keys = [str(k.get("key") if isinstance(k, dict) else k) for k in order]
            try_first = [s for k in keys for s in suspects if s.key == k][:TOP_SUSPECTS_ON_CHARTS]
        if not try_first:
            try_first = [s for s in suspects if top.score - s.score < CLOSE][
                :TOP_SUSPECTS_ON_CHARTS
            ]
    return Verdict(
        first_bad=next(iter(by_kind.get(FindingKind.FIRST_BAD, [])), None),
        last_good=next(iter(by_kind.get(FindingKind.LAST_GOOD, [])), None),
        top=top,
        others=suspects[1:TOP_SUSPECTS_ON_CHARTS],
        confidence=confidence,
        separable=separable,
        try_first=try_first,
        gap=gap,
    )


def _rank(f: Finding) -> int:
    return f.rank


def _confidence(result: dict[str, Any], gap: float | None, any_suspect: bool) -> tuple[str, bool]:
    if not any_suspect:
        return "", True
    stated = result.get("confidence")
    separable = result.get("separable")
    if separable is None and "tied" in result:
        separable = not result["tied"]
    if isinstance(stated, str) and stated:
        return stated, bool(separable) if separable is not None else stated != "low"
    if separable is not None:
        return ("high" if separable else "low"), bool(separable)
    if gap is None or gap >= CLEAR_LEAD:
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
