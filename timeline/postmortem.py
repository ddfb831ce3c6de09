"""The postmortem of an incident, from the stored data only: JSON, Markdown and one HTML file.

``document(incident)`` reads everything once and returns plain JSON-ready data; the Markdown is
written from that data and the HTML is that Markdown rendered safely (raw HTML off) with the
styles, plotly.js and the timeline figure inlined, so the file opens offline. Nothing here reads
the clock and everything is sorted: the same stored data gives byte-identical JSON and Markdown.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.html import escape

from evidence.vocabulary import EventKind
from timeline import charts, selectors
from timeline.analysis import current_analysis, load_changes
from timeline.choices import FindingKind, HypothesisStatus, Stance
from timeline.correlation import config_state
from timeline.correlation.types import Change, Params
from timeline.markdown import render as md_render
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
FIGURE_POINTS = 600  # per metric trace in the exported figure: enough to see the wedge


def _iso(t: dt.datetime | None) -> str | None:
    return t.astimezone(dt.UTC).isoformat() if t else None


def _parse(t: str | None) -> dt.datetime | None:
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
        "at": _iso(at),
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
        "at": _iso(f.at),
        "rank": f.rank,
        "score": f.score,
        "sources": list(data.get("sources") or []),
        "reasons": list(data.get("reasons") or []),
        "event": f.event_id,
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
                    "at": _iso(c.at),
                    "rank": None,
                    "score": None,
                    "sources": list(c.sources),
                    "reasons": [],
                    "event": event_id,
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
        "created_at": _iso(h.created_at),
        "history": [
            {
                "at": _iso(s.at),
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

    first_bad = incident.first_bad_at or _parse(result.get("first_bad"))
    last_good = incident.last_good_at or _parse(result.get("last_good"))
    changes = list(load_changes(incident))
    merged = config_state.merge_changes(changes, Params().same_change_window)
    diff = config_state.diff_states(merged, last_good, first_bad) if last_good and first_bad else []
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
            {"at": _iso(last_good), "kind": "last_good", "what": f"Last known good ({source})"}
        )
    for f in suspects:
        key_events.append(
            {
                "at": _iso(f.at),
                "kind": "config_change",
                "what": f"Config change {f.title} (suspect #{f.rank})",
            }
        )
    if first_bad:
        source = "operator mark" if incident.first_bad_at else "analysis"
        key_events.append(
            {"at": _iso(first_bad), "kind": "first_bad", "what": f"First bad ({source})"}
        )
    for s in symptoms[:MAX_SYMPTOMS_LISTED]:
        key_events.append({"at": _iso(s.at), "kind": "symptom", "what": s.title})
    for n in notes:
        key_events.append(
            {
                "at": _iso(n.at),
                "kind": "note",
                "what": f"Note by {_user(n.author) or 'someone'}: {n.body}",
            }
        )
    if incident.resolved_at:
        key_events.append(
            {"at": _iso(incident.resolved_at), "kind": "resolved", "what": "Resolved"}
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
            "start": _iso(first_bad),
            "end": _iso(incident.resolved_at),
            "duration_seconds": int((incident.resolved_at - first_bad).total_seconds())
            if first_bad and incident.resolved_at
            else None,
            "symptoms": dict(sorted(symptom_kinds.items())),
            "last_good": _iso(last_good),
            "marks": {
                "last_good": _iso(incident.last_good_at),
                "first_bad": _iso(incident.first_bad_at),
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
        "action_items": incident.action_items,
    }


def to_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --- Markdown ------------------------------------------------------------------------------------


def _when(iso: str | None) -> str:
    t = _parse(iso)
    return config_state.fmt_time(t) if t else "unknown"


def _inline(text: Any) -> str:
    """One line of user text inside a Markdown table or list item."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(value: Any) -> str:
    if value is None:
        return "(unset)"
    text = _inline(value)
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}" if text else "(empty)"


def _quote(text: str) -> list[str]:
    """User Markdown kept inside a block quote, so its headings cannot break the outline."""
    return [f"> {line}".rstrip() for line in text.strip().splitlines()] if text.strip() else []


def _evidence_lines(items: list[dict[str, Any]]) -> list[str]:
    lines = []
    for e in items:
        what = _inline(e["what"]) if e["what"] else "(note)"
        when = f" ({_when(e['at'])})" if e["at"] else ""
        note = f" — {_inline(e['note'])}" if e["note"] else ""
        lines.append(f"- **{e['stance']}**: {what}{when}{note}")
    return lines or ["- no evidence linked"]


def _change_lines(c: dict[str, Any]) -> list[str]:
    rank = f" (suspect #{c['rank']}, score {c['score']:.3f})" if c["rank"] else ""
    lines = [
        f"- {_code(c['key'])}: {_code(c['old'])} → {_code(c['new'])} at {_when(c['at'])}{rank}"
    ]
    if c["sources"]:
        lines.append(f"  - sources: {', '.join(_code(s) for s in c['sources'])}")
    lines += [f"  - {_inline(r)}" for r in c["reasons"]]
    return lines


def to_markdown(doc: dict[str, Any]) -> str:
    inc = doc["incident"]
    out: list[str] = [f"# Postmortem: {_inline(inc['title'])}", ""]
    out.append(f"Incident `{inc['slug']}` · team {_inline(inc['team'])} · status {inc['status']}")
    out += ["", "## Summary", ""]
    out += [inc["summary"].strip() if inc["summary"].strip() else "_No summary written yet._"]

    imp = doc["impact"]
    out += ["", "## Impact window", ""]
    out.append(f"- first bad: {_when(imp['start'])}")
    if imp["end"]:
        duration = config_state.fmt_duration(dt.timedelta(seconds=imp["duration_seconds"] or 0))
        out.append(f"- resolved: {_when(imp['end'])} ({duration} after first bad)")
    else:
        out.append("- resolved: not yet")
    out.append(f"- last known good before it: {_when(imp['last_good'])}")
    if imp["symptoms"]:
        counts = ", ".join(f"{n} × {k.replace('_', ' ')}" for k, n in imp["symptoms"].items())
        out.append(f"- symptoms found by the analysis: {counts}")

    out += ["", "## Timeline of key events", ""]
    if doc["key_events"]:
        out += ["| time (UTC) | event |", "|---|---|"]
        out += [f"| {_when(e['at'])} | {_inline(e['what'])} |" for e in doc["key_events"]]
        more = doc["symptoms_total"] - MAX_SYMPTOMS_LISTED
        if more > 0:
            out += ["", f"_{more} more symptoms are not listed._"]
    else:
        out.append("_No events yet._")

    out += ["", "## Root cause", ""]
    if doc["root_cause"]:
        for h in doc["root_cause"]:
            out += [f"### {_inline(h['title'])}", ""]
            out += _status_line(h)
            out += _quote(h["body"])
            if h["body"].strip():
                out.append("")
            if h["changes"]:
                out += ["Suspect change:", ""]
                for c in h["changes"]:
                    out += _change_lines(c)
                out.append("")
            out += ["Evidence:", ""] + _evidence_lines(h["evidence"]) + [""]
    else:
        out.append("_No hypothesis is confirmed yet._")
        if doc["top_suspect"]:
            out += ["", "The analysis' top suspect:", ""] + _change_lines(doc["top_suspect"])
        out.append("")

    out += ["## Hypotheses ruled out", ""]
    if doc["ruled_out"]:
        for h in doc["ruled_out"]:
            out += [f"### {_inline(h['title'])}", ""] + _status_line(h) + _quote(h["body"])
            if h["body"].strip():
                out.append("")
            out += ["Evidence:", ""] + _evidence_lines(h["evidence"]) + [""]
    else:
        out += ["_No hypothesis is refuted yet._", ""]
    if doc["analysis_ruled_out"]:
        out += ["Ruled out by the analysis:", ""]
        for r in doc["analysis_ruled_out"]:
            out.append(f"- **{_inline(r['title'])}**")
            out += [f"  - {_inline(e)}" for e in r["evidence"]]
        out.append("")
    if doc["other_hypotheses"]:
        out += ["Still open:", ""]
        out += [f"- {_inline(h['title'])} ({h['status']})" for h in doc["other_hypotheses"]]
        out.append("")

    out += ["## What changed between last known good and first bad", ""]
    if doc["config_diff"]:
        out += [
            f"From {_when(imp['last_good'])} to {_when(imp['start'])}:",
            "",
            "| setting | before | after |",
            "|---|---|---|",
        ]
        out += [
            f"| {_code(r['key'])} | {_code(r['before'])} | {_code(r['after'])} |"
            for r in doc["config_diff"]
        ]
    elif imp["last_good"] and imp["start"]:
        out.append("_No setting differs between the two moments._")
    else:
        out.append("_Last known good or first bad is unknown, so there is nothing to compare._")

    out += ["", "## Action items", ""]
    out.append(doc["action_items"].strip() or "_None recorded yet._")
    return "\n".join(out).rstrip() + "\n"


def _status_line(h: dict[str, Any]) -> list[str]:
    steps = "; ".join(
        f"{s['to']} {_when(s['at'])}" + (f" by {_inline(s['by'])}" if s["by"] else "")
        for s in h["history"]
    )
    return [f"Status: **{h['status']}** ({steps})", ""]


# --- HTML ----------------------------------------------------------------------------------------

_EXTRA_CSS = """
body { background:#fff; }
.postmortem { max-width:1100px; margin:0 auto; padding:24px; }
.postmortem table { border-collapse:collapse; margin:8px 0; }
.postmortem th, .postmortem td { border:1px solid #e5e7eb; padding:4px 8px; text-align:left;
  vertical-align:top; }
.postmortem blockquote { border-left:3px solid #cbd5e1; margin:6px 0; padding:2px 12px;
  color:#374151; }
.postmortem h2 { font-size:18px; margin-top:26px; border-bottom:1px solid #e5e7eb; }
.postmortem h3 { font-size:15px; margin-top:14px; }
#pm-figure { border:1px solid #e5e7eb; border-radius:8px; margin:8px 0 16px; }
"""


_FIGURE_JS = """(function () {
  var fig = JSON.parse(document.getElementById("pm-figure-data").textContent);
  Plotly.newPlot("pm-figure", fig.data, fig.layout, {displaylogo: false, responsive: true})
    .then(function () { document.body.dataset.figure = "ready"; });
})();
"""


def _static(relative: str) -> str:
    for folder in settings.STATICFILES_DIRS:
        path = Path(folder) / relative
        if path.exists():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(relative)


def _script_safe(text: str) -> str:
    """JSON or code placed inside <script>: no '</' can close the element early."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def figure(incident: Incident, doc: dict[str, Any]) -> str:
    """The timeline figure as Plotly JSON: events and notes on lanes, the default metric panels."""
    markers = [
        charts.Marker(
            id=e["id"],
            at=e["at"],
            lane=e["lane"],
            title=e["title"],
            failed=e["kind"] == EventKind.HARNESS_RUN and "pass" not in e["title"].lower(),
        )
        for e in selectors.timeline_events(incident, None, None)
    ]
    analysis = current_analysis(incident)
    spans = []
    if analysis is not None:
        for f in analysis.findings.filter(kind=FindingKind.SYMPTOM).order_by("rank", "id"):
            if f.at is None:
                continue
            markers.append(charts.Marker(id=f"f{f.pk}", at=f.at, lane="symptoms", title=f.title))
            ends = (f.data or {}).get("ends_at")
            if ends:
                spans.append((f.at, dt.datetime.fromisoformat(ends)))
    for n in Note.objects.filter(incident=incident).order_by("at", "id"):
        markers.append(
            charts.Marker(id=f"n{n.pk}", at=n.at, lane="notes", title=escape(n.body[:160]))
        )
    names = [name for name, _ in selectors.DEFAULT_PANELS]
    titles = dict(selectors.DEFAULT_PANELS)
    points = selectors.series_downsampled(
        selectors.series_for_panels(incident, names), None, None, max_points=FIGURE_POINTS
    )
    panels = []
    for name in names:
        traces = [
            charts.Trace(
                name=",".join(f"{k}={v}" for k, v in sorted(p.labels.items())) or name,
                ts_ms=p.ts,
                values=p.values,
            )
            for p in points
            if p.name == name
        ]
        if traces:
            panels.append(charts.Panel(title=titles[name], traces=traces))
    fig = charts.timeline_figure(
        charts.TimelineData(
            markers=markers,
            panels=panels,
            first_bad=_parse(doc["impact"]["start"]),
            last_good=_parse(doc["impact"]["last_good"]),
            symptom_spans=spans,
        )
    )
    return charts.figure_json(fig)


def to_html(doc: dict[str, Any], figure_json: str) -> str:
    """One self-contained file: styles, plotly.js and the figure inline, no external URL."""
    body = str(md_render(to_markdown(doc)))
    marker = "<h2>Timeline of key events</h2>"
    figure_div = '<div id="pm-figure"></div>\n'
    body = (
        body.replace(marker, marker + "\n" + figure_div, 1)
        if marker in body
        else (figure_div + body)
    )
    title = escape(f"Postmortem: {doc['incident']['title']}")
    css = _static("app/app.css") + _EXTRA_CSS
    plotly_js = _static("vendor/plotly.min.js")
    if "</script" in plotly_js.lower():  # would end the inline element early
        raise ValueError("plotly.min.js contains '</script'; it cannot be inlined")
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n"
        f"<style>\n{css}\n</style>\n"
        f"<script>\n{plotly_js}\n</script>\n"
        "</head>\n<body>\n"
        f'<main class="postmortem markdown">\n{body}</main>\n'
        f'<script type="application/json" id="pm-figure-data">{_script_safe(figure_json)}'
        "</script>\n"
        f"<script>\n{_FIGURE_JS}</script>\n"
        "</body>\n</html>\n"
    )
