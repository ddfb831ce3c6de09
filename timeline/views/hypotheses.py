"""Hypotheses (the board and the timeline's panel), accepting findings, and their evidence."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from timeline import access, selectors, services
from timeline.analysis import current_analysis
from timeline.choices import FindingKind, HypothesisStatus, Stance
from timeline.forms import EvidenceForm, HypothesisForm, StatusForm
from timeline.markdown import render as md
from timeline.models import Event, Evidence, Finding, Hypothesis, Incident
from timeline.services import ServiceError
from timeline.views.common import done, failed, form_error, is_htmx, submit

ACCEPTABLE = (FindingKind.SUSPECT, FindingKind.RULED_OUT)


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


def hypothesis_board(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the board (a fragment for htmx). POST: a new hypothesis."""
    if request.method == "POST":
        incident = access.incident_for(request.user, slug)
        return submit(
            request,
            incident,
            HypothesisForm(request.POST),
            lambda data: services.hypothesis_create(
                incident=incident, user=request.user, title=data["title"], body=data["body"]
            ),
            "Hypothesis added.",
        )
    if request.method != "GET":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    incident = access.incident_for(request.user, slug)
    template = "timeline/collab/_board.html" if is_htmx(request) else "timeline/collab/board.html"
    return render(request, template, _board_context(incident))


@require_GET
def hypothesis_panel(request: HttpRequest, slug: str) -> HttpResponse:
    """The compact hypotheses panel of the timeline page (htmx fragment)."""
    incident = access.incident_for(request.user, slug)
    return render(request, "timeline/collab/_panel.html", _board_context(incident))


@require_POST
def hypothesis_edit(request: HttpRequest, slug: str, hypothesis_id: int) -> HttpResponse:
    incident = access.incident_for(request.user, slug)
    hypothesis = get_object_or_404(Hypothesis, incident=incident, pk=hypothesis_id)
    return submit(
        request,
        incident,
        HypothesisForm(request.POST),
        lambda data: services.hypothesis_update(
            hypothesis=hypothesis, user=request.user, title=data["title"], body=data["body"]
        ),
        "Hypothesis saved.",
    )


@require_POST
def hypothesis_status(request: HttpRequest, slug: str, hypothesis_id: int) -> HttpResponse:
    incident = access.incident_for(request.user, slug)
    hypothesis = get_object_or_404(Hypothesis, incident=incident, pk=hypothesis_id)
    return submit(
        request,
        incident,
        StatusForm(request.POST),
        lambda data: services.hypothesis_set_status(
            hypothesis=hypothesis, user=request.user, status=data["status"], note=data["note"]
        ),
        lambda data: f"Hypothesis marked {data['status']}.",
    )


@require_POST
def hypothesis_delete(request: HttpRequest, slug: str, hypothesis_id: int) -> HttpResponse:
    incident = access.incident_for(request.user, slug)
    hypothesis = get_object_or_404(Hypothesis, incident=incident, pk=hypothesis_id)
    services.hypothesis_delete(hypothesis=hypothesis, user=request.user)
    return done(request, incident, "Hypothesis deleted.")


@require_POST
def finding_accept(request: HttpRequest, slug: str, finding_id: int) -> HttpResponse:
    """One click: an automatic finding becomes a hypothesis with the finding as evidence."""
    incident = access.incident_for(request.user, slug)
    finding = get_object_or_404(
        Finding.objects.select_related("analysis", "event"),
        analysis__incident=incident,
        pk=finding_id,
    )
    try:
        services.hypothesis_from_finding(finding=finding, user=request.user)
    except ServiceError as exc:
        return failed(request, incident, str(exc))
    return done(request, incident, "Finding accepted as a hypothesis.")


@require_POST
def evidence_add(request: HttpRequest, slug: str, hypothesis_id: int = 0) -> HttpResponse:
    """Link an event or finding (or a note alone) to a hypothesis: the hypothesis comes from the
    URL (board) or from the form (the timeline panel's "link the open item" form)."""
    incident = access.incident_for(request.user, slug)
    form = EvidenceForm(request.POST)
    if not form.is_valid():
        return failed(request, incident, form_error(form))
    data = form.cleaned_data
    hypothesis = Hypothesis.objects.filter(
        incident=incident, pk=hypothesis_id or data["hypothesis"] or 0
    ).first()
    if hypothesis is None:
        return failed(request, incident, "Choose a hypothesis of this incident.")
    event = finding = None
    if data["event"]:
        event = Event.objects.filter(incident=incident, pk=data["event"]).first()
        if event is None:
            return failed(request, incident, f"This incident has no event {data['event']}.")
    if data["finding"]:
        finding = (
            Finding.objects.select_related("analysis")
            .filter(analysis__incident=incident, pk=data["finding"])
            .first()
        )
        if finding is None:
            return failed(request, incident, f"This incident has no finding {data['finding']}.")
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
        return failed(request, incident, str(exc))
    return done(request, incident, "Evidence linked.")


@require_POST
def evidence_remove(request: HttpRequest, slug: str, evidence_id: int) -> HttpResponse:
    incident = access.incident_for(request.user, slug)
    evidence = get_object_or_404(
        Evidence.objects.select_related("hypothesis__incident"),
        hypothesis__incident=incident,
        pk=evidence_id,
    )
    services.evidence_remove(evidence=evidence, user=request.user)
    return done(request, incident, "Evidence removed.")
