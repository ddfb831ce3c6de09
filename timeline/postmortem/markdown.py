"""The postmortem document written as Markdown (the HTML export renders this text).

User text goes in as inline text or block quotes, so nothing a user writes can break the
outline; every time is shown in UTC.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from timeline.correlation import config_state
from timeline.postmortem.document import MAX_SYMPTOMS_LISTED, parse_iso


def _when(iso: str | None) -> str:
    t = parse_iso(iso)
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
    score = f", score {c['score']:.3f}" if c.get("score") is not None else ""  # score is nullable
    rank = f" (suspect #{c['rank']}{score})" if c["rank"] else ""
    lines = [
        f"- {_code(c['key'])}: {_code(c['old'])} → {_code(c['new'])} at {_when(c['at'])}{rank}"
    ]
    if c["sources"]:
        lines.append(f"  - sources: {', '.join(_code(s) for s in c['sources'])}")
    live = c.get("live")
    if live:
        return lines + _live_lines(live)
    lines += [f"  - {_inline(r)}" for r in c["reasons"]]
    return lines


def _live_lines(live: dict[str, Any]) -> list[str]:
    """What the server logs showed about a suspect: when it went live, before/after, evidence."""
    where = f" ({_inline(live['live_where'])})" if live.get("live_where") else ""
    assumed = " (assumed: the log does not show this setting)" if live.get("assumed") else ""
    when = live.get("live_at_text") or _when(live.get("live_at"))
    lines = [
        f"  - went live: {when}{where}{assumed}",
        f"  - ran before: {_code(live['before'])}; after: {_code(live['after'])}",
        f"  - verdict of the evidence: **{_inline(live['verdict'])}**",
    ]
    lines += [f"  - for: {_inline(e)}" for e in live.get("evidence_for") or []]
    lines += [f"  - against: {_inline(e)}" for e in live.get("evidence_against") or []]
    return lines


def to_markdown(doc: dict[str, Any]) -> str:
    """The postmortem as Markdown, section by section, from :func:`document`'s data."""
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

    if doc.get("bisect"):
        out += ["Bisect plan:", ""] + [f"- {_inline(b)}" for b in doc["bisect"]] + [""]

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

    if doc.get("drift"):
        out += ["", "## Doc vs live", ""]
        out += [f"- {_inline(d)}" for d in doc["drift"]]
    if doc.get("restarts"):
        out += ["", "## Live configuration, start by start", ""]
        out += [f"- {_inline(r)}" for r in doc["restarts"]]

    out += ["", "## Action items", ""]
    out.append(doc["action_items"].strip() or "_None recorded yet._")
    return "\n".join(out).rstrip() + "\n"


def _status_line(h: dict[str, Any]) -> list[str]:
    steps = "; ".join(
        f"{s['to']} {_when(s['at'])}" + (f" by {_inline(s['by'])}" if s["by"] else "")
        for s in h["history"]
    )
    return [f"Status: **{h['status']}** ({steps})", ""]
