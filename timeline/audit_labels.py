"""What an audit entry's ids stand for: ``hypothesis:1`` and ``event 58`` become the hypothesis'
title and the event's title, with a link while the thing exists and "(deleted)" after.

``label_entries`` reads each kind of object once for a whole page of entries (one query per kind
that the page mentions), never once per entry.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from timeline.models import AuditEntry, Event, Evidence, Finding, Hypothesis, Incident, Note

EXCERPT = 80
# Keys of an entry's data that hold the id of an object of the incident.
ID_KEYS = ("event", "finding", "evidence")


@dataclass(frozen=True)
class Label:
    text: str
    url: str = ""  # where it can be seen; empty when deleted or when there is no page for it
    fragment: bool = False  # url is a side-panel fragment (opened in place with htmx)
    deleted: bool = False


def excerpt(text: str, limit: int = EXCERPT) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ids(entries: Iterable[AuditEntry]) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {"hypothesis": set(), "note": set()}
    found |= {key: set() for key in ID_KEYS}
    for e in entries:
        kind, _, raw = e.target.partition(":")
        if kind in ("hypothesis", "note") and raw.isdigit():
            found[kind].add(int(raw))
        for key in ID_KEYS:
            value = (e.data or {}).get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                found[key].add(value)
    return found


def _read(incident: Incident, ids: dict[str, set[int]]) -> dict[str, dict[int, Any]]:
    """Each kind's rows by id: one query per kind that has ids."""
    out: dict[str, dict[int, Any]] = {k: {} for k in ids}
    if ids["hypothesis"]:
        rows = Hypothesis.objects.filter(incident=incident, pk__in=ids["hypothesis"])
        out["hypothesis"] = {h.pk: h for h in rows.only("pk", "title")}
    if ids["note"]:
        rows_n = Note.objects.filter(incident=incident, pk__in=ids["note"])
        out["note"] = {n.pk: n for n in rows_n.only("pk", "body")}
    if ids["event"]:
        rows_e = Event.objects.filter(incident=incident, pk__in=ids["event"])
        out["event"] = {e.pk: e for e in rows_e.only("pk", "title")}
    if ids["finding"]:
        rows_f = Finding.objects.filter(analysis__incident=incident, pk__in=ids["finding"])
        out["finding"] = {f.pk: f for f in rows_f.only("pk", "title")}
    if ids["evidence"]:
        rows_v = Evidence.objects.filter(hypothesis__incident=incident, pk__in=ids["evidence"])
        out["evidence"] = {v.pk: v for v in rows_v.only("pk", "stance", "hypothesis_id")}
    return out


class _Labeller:
    def __init__(self, incident: Incident, rows: dict[str, dict[int, Any]]) -> None:
        self.incident = incident
        self.rows = rows
        self.board = reverse("hypothesis_board", args=[incident.slug])

    def _url(self, name: str, pk: int) -> str:
        return reverse(name, args=[self.incident.slug, pk])

    def target(self, entry: AuditEntry) -> Label:
        kind, _, raw = entry.target.partition(":")
        data = entry.data or {}
        if kind == "hypothesis" and raw.isdigit():
            h = self.rows["hypothesis"].get(int(raw))
            if h is not None:
                return Label(f"hypothesis “{h.title}”", f"{self.board}#hypothesis-{h.pk}")
            title = data.get("title")
            text = f"hypothesis “{title}”" if isinstance(title, str) else f"hypothesis {raw}"
            return Label(text, deleted=True)
        if kind == "note" and raw.isdigit():
            n = self.rows["note"].get(int(raw))
            if n is not None:
                return Label(
                    f"note “{excerpt(n.body)}”", self._url("note_detail", n.pk), fragment=True
                )
            body = data.get("body")
            text = f"note “{excerpt(body)}”" if isinstance(body, str) else f"note {raw}"
            return Label(text, deleted=True)
        if kind == "incident" or entry.action == "incident.create":
            return Label(
                f"incident “{self.incident.title}”",
                reverse("incident_timeline", args=[self.incident.slug]),
            )
        return Label(entry.target)

    def value(self, key: str, value: Any) -> Label | None:
        """The label of an id in the entry's data, or None when ``key`` holds no id."""
        if key not in ID_KEYS or not isinstance(value, int) or isinstance(value, bool):
            return None
        row = self.rows[key].get(value)
        if key == "event":
            if row is None:
                return Label(f"event {value}", deleted=True)
            return Label(row.title, self._url("event_detail", row.pk), fragment=True)
        if key == "finding":
            if row is None:
                return Label(f"finding {value}", deleted=True)
            return Label(row.title, self._url("finding_detail", row.pk), fragment=True)
        if row is None:
            return Label(f"evidence {value}", deleted=True)
        return Label(f"{row.stance} link", f"{self.board}#hypothesis-{row.hypothesis_id}")


def label_entries(
    incident: Incident, entries: list[AuditEntry], value_text: Any
) -> list[dict[str, Any]]:
    """Each entry with its target's label and its data rows (key, text or label), in order.

    ``value_text`` turns a plain value (not an id) into its text."""
    labeller = _Labeller(incident, _read(incident, _ids(entries)))
    out = []
    for e in entries:
        rows = []
        for key, value in sorted((e.data or {}).items()):
            label = labeller.value(key, value)
            rows.append((key, label if label is not None else Label(value_text(value))))
        out.append({"entry": e, "target": labeller.target(e), "rows": rows})
    return out
