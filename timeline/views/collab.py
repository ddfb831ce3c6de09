"""Collaboration views: hypotheses (board and timeline panel), evidence, notes, operator marks,
incident fields, the audit log and the postmortem export.

Writes answer htmx with 204 and an ``HX-Trigger: collab-changed`` event (the board, the panel and
the chart reload themselves on it) or 422 with the error text for the form's error slot; without
htmx they redirect back with a message. Only members of the incident's team may write; everyone
else gets the same 404 as for reading.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from timeline import postmortem, selectors, services
from timeline.analysis import current_analysis
from timeline.choices import FindingKind, HypothesisStatus, IncidentStatus, Stance
from timeline.markdown import render as md
from timeline.models import (
    AuditEntry,
    Event,
    Evidence,
    Finding,
    Hypothesis,
    Incident,
    Note,
)
from timeline.services import ServiceError

ACCEPTABLE = (FindingKind.SUSPECT, FindingKind.RULED_OUT)


# --- forms ---------------------------------------------------------------------------------------


class UTCDateTimeField(forms.CharField):
    """ISO 8601 or a datetime-local value; a time without a zone is read as UTC."""

    def to_python(self, value: Any) -> dt.datetime | None:  # type: ignore[override]
        raw = (super().to_python(value) or "").strip()
        if not raw:
            return None
        try:
            parsed = dt.datetime.fromisoformat(raw.replace("Z", "+00:00").replace(" ", "T"))
        except ValueError:
            raise forms.ValidationError(
                f"{raw[:40]!r} is not a time; use e.g. 2026-11-20T23:39:58 (UTC)."
            ) from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


class HypothesisForm(forms.Form):
    title = forms.CharField(max_length=services.MAX_TITLE)
    body = forms.CharField(required=False, max_length=services.MAX_TEXT, widget=forms.Textarea)


class StatusForm(forms.Form):
    status = forms.ChoiceField(choices=HypothesisStatus.choices)
    note = forms.CharField(required=False, max_length=services.MAX_TEXT)


class EvidenceForm(forms.Form):
    stance = forms.ChoiceField(choices=Stance.choices)
    note = forms.CharField(required=False, max_length=services.MAX_TEXT)
    event = forms.IntegerField(required=False, min_value=1)
    finding = forms.IntegerField(required=False, min_value=1)
    hypothesis = forms.IntegerField(required=False, min_value=1)


class NoteForm(forms.Form):
    at = UTCDateTimeField()
    body = forms.CharField(max_length=services.MAX_TEXT, widget=forms.Textarea)


class MarkForm(forms.Form):
    action = forms.ChoiceField(
        choices=[
            ("set_last_good", "mark as last known good"),
            ("set_first_bad", "mark as first bad"),
            ("clear_last_good", "clear the last known good mark"),
            ("clear_first_bad", "clear the first bad mark"),
        ]
    )
    at = UTCDateTimeField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if str(data.get("action", "")).startswith("set_") and not data.get("at"):
            raise forms.ValidationError("Give the time of the mark.")
        return data


class IncidentEditForm(forms.Form):
    title = forms.CharField(max_length=200)
    status = forms.ChoiceField(choices=IncidentStatus.choices)
    summary = forms.CharField(required=False, widget=forms.Textarea, max_length=services.MAX_TEXT)
    resolved_at = UTCDateTimeField(required=False)
    action_items = forms.CharField(
        required=False, widget=forms.Textarea, max_length=services.MAX_TEXT
    )


# --- helpers -------------------------------------------------------------------------------------


def _is_htmx(request: HttpRequest) -> bool:
    return bool(request.headers.get("HX-Request"))


def _editable(request: HttpRequest, slug: str) -> Incident:
    """The incident, for a write: 404 for other teams; members only (a superuser who is not a
    member can read but not write)."""
    incident = selectors.incident_for_user(request.user, slug)
    if not incident.team.members.filter(pk=request.user.pk or 0).exists():
        raise PermissionDenied("Only members of the incident's team can change it.")
    return incident


def _back(request: HttpRequest, incident: Incident) -> str:
    nxt = request.POST.get("next") or request.GET.get("next") or ""
    if nxt and url_has_allowed_host_and_scheme(nxt, {request.get_host()}, request.is_secure()):
        return nxt
    return reverse("hypothesis_board", args=[incident.slug])


def _done(
    request: HttpRequest, incident: Incident, message: str, *, replaces_detail: bool = False
) -> HttpResponse:
    if _is_htmx(request):
        if replaces_detail:  # the side panel showed what was just removed
            response = render(request, "timeline/collab/_error.html", {"error": message})
            response["HX-Retarget"] = "#detail"
            response["HX-Reswap"] = "innerHTML"
        else:
            response = HttpResponse(status=204)
        response["HX-Trigger"] = "collab-changed"
        return response
    messages.success(request, message)
    return redirect(_back(request, incident))


def _failed(request: HttpRequest, incident: Incident, error: str) -> HttpResponse:
    if _is_htmx(request):
        # Plain text, autoescaped by the template engine; the form's error slot shows it.
        return render(request, "timeline/collab/_error.html", {"error": error}, status=422)
    messages.error(request, error)
    return redirect(_back(request, incident))


def _form_error(form: forms.Form) -> str:
    parts = []
    for field, errors in form.errors.items():
        label = "" if field == "__all__" else f"{field}: "
        parts.append(label + " ".join(str(e) for e in errors))
    return "; ".join(parts)


def _acceptable(incident: Incident, hypotheses: list[Hypothesis]) -> list[dict[str, Any]]:
    """Findings of the current analysis that can become hypotheses, and whether they have."""
    analysis = current_analysis(incident)
    if analysis is None:
        return []
    titles = {h.title for h in hypotheses}
    findings = analysis.findings.filter(kind__in=ACCEPTABLE).order_by("kind", "rank", "id")
    return [
        {"finding": f, "accepted": services.finding_hypothesis_title(f) in titles}
        for f in findings.select_related("analysis")
    ]


def _board_context(incident: Incident) -> dict[str, Any]:
    hypotheses = selectors.hypotheses_for(incident)
    for h in hypotheses:
        h.body_html = md(h.body)  # type: ignore[attr-defined]
    columns = [
        (value, label, [h for h in hypotheses if h.status == value])
        for value, label in HypothesisStatus.choices
    ]
    acceptable = _acceptable(incident, hypotheses)
    return {
        "incident": incident,
        "hypotheses": hypotheses,
        "columns": columns,
        "acceptable": acceptable,
        "linkable": [a["finding"] for a in acceptable],
        "statuses": HypothesisStatus.choices,
        "stances": Stance.choices,
    }


# --- hypotheses ----------------------------------------------------------------------------------


def hypothesis_board(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the board (a fragment for htmx). POST: a new hypothesis."""
    if request.method == "POST":
        incident = _editable(request, slug)
        form = HypothesisForm(request.POST)
        if not form.is_valid():
            return _failed(request, incident, _form_error(form))
        try:
            services.hypothesis_create(
                incident=incident,
                user=request.user,
                title=form.cleaned_data["title"],
                body=form.cleaned_data["body"],
            )
        except ServiceError as exc:
            return _failed(request, incident, str(exc))
        return _done(request, incident, "Hypothesis added.")
    if request.method != "GET":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    incident = selectors.incident_for_user(request.user, slug)
    template = "timeline/collab/_board.html" if _is_htmx(request) else "timeline/collab/board.html"
    return render(request, template, _board_context(incident))


@require_GET
def hypothesis_panel(request: HttpRequest, slug: str) -> HttpResponse:
    """The compact hypotheses panel of the timeline page (htmx fragment)."""
    incident = selectors.incident_for_user(request.user, slug)
    return render(request, "timeline/collab/_panel.html", _board_context(incident))


@require_POST
def hypothesis_edit(request: HttpRequest, slug: str, hypothesis_id: int) -> HttpResponse:
    incident = _editable(request, slug)
    hypothesis = get_object_or_404(Hypothesis, incident=incident, pk=hypothesis_id)
    form = HypothesisForm(request.POST)
    if not form.is_valid():
        return _failed(request, incident, _form_error(form))
    try:
        services.hypothesis_update(
            hypothesis=hypothesis,
            user=request.user,
            title=form.cleaned_data["title"],
            body=form.cleaned_data["body"],
        )
    except ServiceError as exc:
        return _failed(request, incident, str(exc))
    return _done(request, incident, "Hypothesis saved.")


@require_POST
def hypothesis_status(request: HttpRequest, slug: str, hypothesis_id: int) -> HttpResponse:
    incident = _editable(request, slug)
    hypothesis = get_object_or_404(Hypothesis, incident=incident, pk=hypothesis_id)
    form = StatusForm(request.POST)
    if not form.is_valid():
        return _failed(request, incident, _form_error(form))
    try:
        services.hypothesis_set_status(
            hypothesis=hypothesis,
            user=request.user,
            status=form.cleaned_data["status"],
            note=form.cleaned_data["note"],
        )
    except ServiceError as exc:
        return _failed(request, incident, str(exc))
    return _done(request, incident, f"Hypothesis marked {form.cleaned_data['status']}.")


@require_POST
def hypothesis_delete(request: HttpRequest, slug: str, hypothesis_id: int) -> HttpResponse:
    incident = _editable(request, slug)
    hypothesis = get_object_or_404(Hypothesis, incident=incident, pk=hypothesis_id)
    services.hypothesis_delete(hypothesis=hypothesis, user=request.user)
    return _done(request, incident, "Hypothesis deleted.")


@require_POST
def finding_accept(request: HttpRequest, slug: str, finding_id: int) -> HttpResponse:
    """One click: an automatic finding becomes a hypothesis with the finding as evidence."""
    incident = _editable(request, slug)
    finding = get_object_or_404(
        Finding.objects.select_related("analysis", "event"),
        analysis__incident=incident,
        pk=finding_id,
    )
    try:
        services.hypothesis_from_finding(finding=finding, user=request.user)
    except ServiceError as exc:
        return _failed(request, incident, str(exc))
    return _done(request, incident, "Finding accepted as a hypothesis.")


# --- evidence ------------------------------------------------------------------------------------


@require_POST
def evidence_add(request: HttpRequest, slug: str, hypothesis_id: int = 0) -> HttpResponse:
    """Link an event or finding (or a note alone) to a hypothesis: the hypothesis comes from the
    URL (board) or from the form (the timeline panel's "link the open item" form)."""
    incident = _editable(request, slug)
    form = EvidenceForm(request.POST)
    if not form.is_valid():
        return _failed(request, incident, _form_error(form))
    data = form.cleaned_data
    hypothesis = Hypothesis.objects.filter(
        incident=incident, pk=hypothesis_id or data["hypothesis"] or 0
    ).first()
    if hypothesis is None:
        return _failed(request, incident, "Choose a hypothesis of this incident.")
    event = finding = None
    if data["event"]:
        event = Event.objects.filter(incident=incident, pk=data["event"]).first()
        if event is None:
            return _failed(request, incident, f"This incident has no event {data['event']}.")
    if data["finding"]:
        finding = (
            Finding.objects.select_related("analysis")
            .filter(analysis__incident=incident, pk=data["finding"])
            .first()
        )
        if finding is None:
            return _failed(request, incident, f"This incident has no finding {data['finding']}.")
    try:
        services.evidence_add(
            hypothesis=hypothesis,
            user=request.user,
            stance=data["stance"],
            note=data["note"],
            event=event,
            finding=finding,
        )
    except ServiceError as exc:
        return _failed(request, incident, str(exc))
    return _done(request, incident, "Evidence linked.")


@require_POST
def evidence_remove(request: HttpRequest, slug: str, evidence_id: int) -> HttpResponse:
    incident = _editable(request, slug)
    evidence = get_object_or_404(
        Evidence.objects.select_related("hypothesis__incident"),
        hypothesis__incident=incident,
        pk=evidence_id,
    )
    services.evidence_remove(evidence=evidence, user=request.user)
    return _done(request, incident, "Evidence removed.")


# --- notes ---------------------------------------------------------------------------------------


@require_POST
def note_add(request: HttpRequest, slug: str) -> HttpResponse:
    incident = _editable(request, slug)
    form = NoteForm(request.POST)
    if not form.is_valid():
        return _failed(request, incident, _form_error(form))
    try:
        services.note_add(
            incident=incident,
            user=request.user,
            at=form.cleaned_data["at"],
            body=form.cleaned_data["body"],
        )
    except ServiceError as exc:
        return _failed(request, incident, str(exc))
    return _done(request, incident, "Note added.")


def note_detail(request: HttpRequest, slug: str, note_id: int) -> HttpResponse:
    """GET: the side-panel fragment a click on a note marker opens. POST: edit the note."""
    if request.method == "POST":
        incident = _editable(request, slug)
        note = get_object_or_404(Note, incident=incident, pk=note_id)
        form = NoteForm(request.POST)
        if not form.is_valid():
            return _failed(request, incident, _form_error(form))
        try:
            services.note_update(
                note=note,
                user=request.user,
                at=form.cleaned_data["at"],
                body=form.cleaned_data["body"],
            )
        except ServiceError as exc:
            return _failed(request, incident, str(exc))
        return _done(request, incident, "Note saved.")
    if request.method != "GET":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    incident = selectors.incident_for_user(request.user, slug)
    note = get_object_or_404(Note.objects.select_related("author"), incident=incident, pk=note_id)
    return render(
        request,
        "timeline/collab/_note_detail.html",
        {"incident": incident, "note": note, "body_html": md(note.body)},
    )


@require_POST
def note_delete(request: HttpRequest, slug: str, note_id: int) -> HttpResponse:
    incident = _editable(request, slug)
    note = get_object_or_404(Note, incident=incident, pk=note_id)
    services.note_delete(note=note, user=request.user)
    return _done(request, incident, "Note deleted.", replaces_detail=True)


# --- marks and incident fields -------------------------------------------------------------------


@require_POST
def marks(request: HttpRequest, slug: str) -> HttpResponse:
    """Set or clear last known good / first bad; the analysis re-runs on the workers."""
    incident = _editable(request, slug)
    form = MarkForm(request.POST)
    if not form.is_valid():
        return _failed(request, incident, _form_error(form))
    op, mark = form.cleaned_data["action"].split("_", 1)
    try:
        services.incident_set_mark(
            incident=incident,
            user=request.user,
            mark=mark,
            at=form.cleaned_data["at"] if op == "set" else None,
        )
    except ServiceError as exc:
        return _failed(request, incident, str(exc))
    what = "Last known good" if mark == "last_good" else "First bad"
    verb = "marked" if op == "set" else "mark cleared"
    return _done(request, incident, f"{what} {verb}; the analysis is re-running.")


def incident_edit(request: HttpRequest, slug: str) -> HttpResponse:
    """The incident's own fields: title, status, summary, resolution time, action items."""
    if request.method == "POST":
        incident = _editable(request, slug)
        form = IncidentEditForm(request.POST)
        if form.is_valid():
            try:
                services.incident_update(incident=incident, user=request.user, **form.cleaned_data)
            except ServiceError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, "Incident saved.")
                return redirect("incident_edit", slug=incident.slug)
        return render(
            request,
            "timeline/collab/incident_edit.html",
            {"incident": incident, "form": form},
            status=422,
        )
    if request.method != "GET":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    incident = selectors.incident_for_user(request.user, slug)
    form = IncidentEditForm(
        initial={
            "title": incident.title,
            "status": incident.status,
            "summary": incident.summary,
            "resolved_at": incident.resolved_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
            if incident.resolved_at
            else "",
            "action_items": incident.action_items,
        }
    )
    return render(
        request, "timeline/collab/incident_edit.html", {"incident": incident, "form": form}
    )


# --- audit log and postmortem --------------------------------------------------------------------


@require_GET
def audit_log(request: HttpRequest, slug: str) -> HttpResponse:
    incident = selectors.incident_for_user(request.user, slug)
    entries = AuditEntry.objects.filter(incident=incident).select_related("actor")
    page = Paginator(entries.order_by("-at", "-id"), 100).get_page(request.GET.get("page"))
    for entry in page:
        entry.rows = [  # type: ignore[attr-defined]
            (k, _audit_value(v)) for k, v in sorted((entry.data or {}).items())
        ]
    return render(request, "timeline/collab/audit.html", {"incident": incident, "page": page})


def _audit_value(value: Any) -> str:
    """A field change ``[old, new]`` as "old → new"; anything else as its text."""

    def one(v: Any) -> str:
        text = "∅" if v is None or v == "" else str(v)
        return text if len(text) <= 200 else text[:199] + "…"

    if isinstance(value, list) and len(value) == 2:
        return f"{one(value[0])} → {one(value[1])}"
    return one(value)


EXPORTS = {
    "md": ("text/markdown; charset=utf-8", "md"),
    "html": ("text/html; charset=utf-8", "html"),
    "json": ("application/json", "json"),
}


@require_GET
def postmortem_export(request: HttpRequest, slug: str, fmt: str) -> HttpResponse:
    """The postmortem as a download: Markdown, one self-contained HTML file, or JSON."""
    incident = selectors.incident_for_user(request.user, slug)
    if fmt not in EXPORTS:
        return HttpResponse("Unknown format: use md, html or json.", status=404)
    doc = postmortem.document(incident)
    if fmt == "md":
        body = postmortem.to_markdown(doc)
    elif fmt == "json":
        body = postmortem.to_json(doc)
    else:
        body = postmortem.to_html(doc, postmortem.figure(incident))
    content_type, ext = EXPORTS[fmt]
    response = HttpResponse(body.encode("utf-8"), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{incident.slug}-postmortem.{ext}"'
    return response
