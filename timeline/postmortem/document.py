"""What the postmortem says, read from the stored data once, as plain JSON-ready data.

Nothing here reads the clock and everything is sorted: the same stored data gives a
byte-identical document (and so byte-identical JSON and Markdown).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from evidence.vocabulary import EventKind
from timeline import selectors
from timeline.analysis import current_analysis, load_changes
from timeline.choices import FindingKind, HypothesisStatus, IncidentStatus, Stance
from timeline.correlation import config_state
from timeline.correlation.types import Change, Params
from timeline.models import (
    Analysis,
    Evidence,
    Finding,
    Hypothesis,
    Incident,
    Note,
)
from timeline.services import finding_hypothesis_title

FORMAT_VERSION = 1
MAX_SYMPTOMS_LISTED = 5


def iso(t: dt.datetime | None) -> str | None:
    """A stored time as ISO 8601 in UTC (None stays None)."""
    return t.astimezone(dt.UTC).isoformat() if t else None


def parse_iso(t: str | None) -> dt.datetime | None:
    """The inverse of :func:`iso`."""
    return dt.datetime.fromisoformat(t) if t else None


def _user(u: Any) -> str:
    return u.get_username() if u is not None else ""


# --- reading -------------------------------------------------------------------------------------


def _evidence(e: Evidence) -> dict[str, Any]:
    at: dt.datetime | None
    if e.event is not None:
        what = e.event.title
        at = e.event.at
    elif e.finding is not None:
        what = e.finding.title
        at = e.finding.at
    else:
        what, at = "", None
    return {
        "stance": e.stance,
        "what": what,
        "at": iso(at),
        "event": e.event_id,
        "finding": e.finding_id,
        "note": e.note,
        "author": _user(e.author),
    }


def _suspect(f: Finding) -> dict[str, Any]:
    data = f.data or {}
    return {
        "key": data.get("key"),
        "old": data.get("old"),
        "new": data.get("new"),
        "at": iso(f.at),
        "rank": f.rank,
        "score": f.score,
        "sources": list(data.get("sources") or []),
        "reasons": list(data.get("reasons") or []),
        "event": f.event_id,
        "live": data.get("live"),
    }


def _change_of(
    h: Hypothesis, suspects_by_event: dict[int, Finding], changes_by_event: dict[int, Change]
) -> list[dict[str, Any]]:
    """The config changes a hypothesis' supporting evidence points at, with the analysis'
    reasons when the change is one of its suspects."""
    event_ids: list[int] = []
    linked: dict[int, Finding] = {}
    for e in h.evidence.all():
        if e.stance == Stance.REFUTES:
            continue
        if e.finding is not None and e.finding.kind == FindingKind.SUSPECT and e.finding.event_id:
            event_ids.append(e.finding.event_id)
            linked[e.finding.event_id] = e.finding
        if e.event is not None and e.event.kind == EventKind.CONFIG_CHANGE:
            event_ids.append(e.event_id)  # type: ignore[arg-type]
    out = []
    for event_id in sorted(set(event_ids)):
        finding = suspects_by_event.get(event_id) or linked.get(event_id)
        if finding is not None:
            out.append(_suspect(finding))
            continue
        c = changes_by_event.get(event_id)
        if c is not None:
            out.append(
                {
                    "key": c.key,
                    "old": c.old,
                    "new": c.new,
                    "at": iso(c.at),
                    "rank": None,
                    "score": None,
                    "sources": list(c.sources),
                    "reasons": [],
                    "event": event_id,
                    "live": None,
                }
            )
    return out


def _hypothesis(h: Hypothesis) -> dict[str, Any]:
    return {
        "id": h.pk,
        "title": h.title,
        "body": h.body,
        "status": h.status,
        "author": _user(h.author),
        "created_at": iso(h.created_at),
        "history": [
            {
                "at": iso(s.at),
                "from": s.old_status,
                "to": s.new_status,
                "by": _user(s.actor),
                "note": s.note,
            }
            for s in h.status_changes.all()
        ],
        "evidence": [_evidence(e) for e in h.evidence.all()],
    }


def document(incident: Incident) -> dict[str, Any]:
    """Everything the postmortem says, as JSON-ready data."""
    analysis: Analysis | None = current_analysis(incident)
    findings = list(analysis.findings.order_by("kind", "rank", "id")) if analysis else []
    result = analysis.result if analysis else {}
    by_kind: dict[str, list[Finding]] = {}
    for f in findings:
        by_kind.setdefault(f.kind, []).append(f)

    first_bad = incident.first_bad_at or parse_iso(result.get("first_bad"))
    last_good = incident.last_good_at or parse_iso(result.get("last_good"))
    changes = list(load_changes(incident))
    merged = config_state.merge_changes(changes, Params().same_change_window)
    diff = config_state.diff_states(merged, last_good, first_bad) if last_good and first_bad else []
    live = sorted(
        (str(d["key"]), d["live"]["before"], d["live"]["after"])
        for d in (f.data or {} for f in by_kind.get(FindingKind.SUSPECT, []))
        if d.get("live")
    )
    if live:  # the server logged what ran: compare that, not what the records say
        diff = live
    suspects = by_kind.get(FindingKind.SUSPECT, [])
    symptoms = by_kind.get(FindingKind.SYMPTOM, [])
    hypotheses = selectors.hypotheses_for(incident)
    notes = list(
        Note.objects.filter(incident=incident).select_related("author").order_by("at", "id")
    )

    suspects_by_event = {f.event_id: f for f in suspects if f.event_id}
    changes_by_event = {c.ref: c for c in changes}
    confirmed = [h for h in hypotheses if h.status == HypothesisStatus.CONFIRMED]
    refuted = [h for h in hypotheses if h.status == HypothesisStatus.REFUTED]
    others = [
        h for h in hypotheses if h.status in (HypothesisStatus.OPEN, HypothesisStatus.SUPPORTED)
    ]
    symptom_kinds: dict[str, int] = {}
    for s in symptoms:
        kind = str((s.data or {}).get("kind") or "symptom")
        symptom_kinds[kind] = symptom_kinds.get(kind, 0) + 1
    symptoms_total = len(symptoms)
    first_bad_finding = next(iter(by_kind.get(FindingKind.FIRST_BAD, [])), None)
    if first_bad_finding is not None and (first_bad_finding.data or {}).get("symptom_counts"):
        # The analysis stores only the first symptoms as findings; it counts all of them here.
        symptom_kinds = dict(first_bad_finding.data["symptom_counts"])
        symptoms_total = int(first_bad_finding.data.get("symptoms_total", symptoms_total))

    key_events: list[dict[str, Any]] = []
    if last_good:
        source = "operator mark" if incident.last_good_at else "analysis"
        key_events.append(
            {
                "at": iso(last_good),
                "kind": FindingKind.LAST_GOOD,
                "what": f"Last known good ({source})",
            }
        )
    for f in suspects:
        key_events.append(
            {
                "at": iso(f.at),
                "kind": EventKind.CONFIG_CHANGE,
                "what": f"Config change {f.title} (suspect #{f.rank})",
            }
        )
    if first_bad:
        source = "operator mark" if incident.first_bad_at else "analysis"
        key_events.append(
            {"at": iso(first_bad), "kind": FindingKind.FIRST_BAD, "what": f"First bad ({source})"}
        )
    for s in symptoms[:MAX_SYMPTOMS_LISTED]:
        key_events.append({"at": iso(s.at), "kind": FindingKind.SYMPTOM, "what": s.title})
    for n in notes:
        key_events.append(
            {
                "at": iso(n.at),
                "kind": EventKind.NOTE,
                "what": f"Note by {_user(n.author) or 'someone'}: {n.body}",
            }
        )
    if incident.resolved_at:
        key_events.append(
            {"at": iso(incident.resolved_at), "kind": IncidentStatus.RESOLVED, "what": "Resolved"}
        )
    key_events.sort(key=lambda e: (e["at"] or "", e["kind"], e["what"]))

    return {
        "format": FORMAT_VERSION,
        "incident": {
            "slug": incident.slug,
            "title": incident.title,
            "team": incident.team.name,
            "status": incident.status,
            "summary": incident.summary,
        },
        "analysis": {
            "version": analysis.version if analysis else None,
            "first_bad": result.get("first_bad"),
            "last_good": result.get("last_good"),
        },
        "impact": {
            "start": iso(first_bad),
            "end": iso(incident.resolved_at),
            "duration_seconds": int((incident.resolved_at - first_bad).total_seconds())
            if first_bad and incident.resolved_at
            else None,
            "symptoms": dict(sorted(symptom_kinds.items())),
            "last_good": iso(last_good),
            "marks": {
                "last_good": iso(incident.last_good_at),
                "first_bad": iso(incident.first_bad_at),
            },
        },
        "key_events": key_events,
        "symptoms_total": symptoms_total,
        "root_cause": [
            {**_hypothesis(h), "changes": _change_of(h, suspects_by_event, changes_by_event)}
            for h in confirmed
        ],
        "top_suspect": _suspect(suspects[0]) if suspects else None,
        "ruled_out": [_hypothesis(h) for h in refuted],
        # Findings the team has not accepted as hypotheses yet (accepted ones are listed above).
        "analysis_ruled_out": [
            {"title": f.title, "evidence": list((f.data or {}).get("evidence") or [])}
            for f in by_kind.get(FindingKind.RULED_OUT, [])
            if finding_hypothesis_title(f) not in {h.title for h in hypotheses}
        ],
        "other_hypotheses": [_hypothesis(h) for h in others],
        "config_diff": [{"key": k, "before": a, "after": b} for k, a, b in diff],
        # From the server starts (issue 13); empty when no start was logged.
        "bisect": list(result.get("bisect") or []),
        "drift": list(result.get("drift") or []),
        "restarts": list(result.get("restarts") or []),
        "action_items": incident.action_items,
    }


def to_json(doc: dict[str, Any]) -> str:
    """The document as the JSON export: sorted keys, so stable bytes."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
