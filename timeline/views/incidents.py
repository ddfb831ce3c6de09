"""Incident list, creation and the timeline page with its data and detail fragments."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from typing import Any

import orjson
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Max, OuterRef, Q, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from evidence.vocabulary import EventKind
from timeline import access, charts, live_config, selectors, shared_cache
from timeline.analysis import current_analysis, merged_changes
from timeline.choices import EVENT_KIND_CHOICES, LANE_CHOICES, FindingKind, RunStatus
from timeline.figure_data import (
    overlay,
    picked_panels,
    timeline_figure_data,
    trace_name,
    zoom_is_small,
)
from timeline.forms import IncidentForm, parse_utc
from timeline.markdown import render as md
from timeline.metrics import remote
from timeline.models import Analysis, Artifact, Event, Finding, Incident, RemoteSeries
from timeline.services import ServiceError, incident_create
from timeline.verdict import verdict, warning_texts
from timeline.versions import incident_version
from timeline.views.live import etag_matches, revalidated


@require_GET
def incident_list(request: HttpRequest) -> HttpResponse:
    q = request.GET.get("q", "").strip()
    incidents = access.incidents_visible(request.user)
    if q:
        incidents = incidents.filter(title__icontains=q)
    # Findings of each incident's newest finished analysis (superseded runs are marked so).
    current = Finding.objects.filter(
        analysis__incident=OuterRef("pk"), analysis__status=RunStatus.DONE
    ).order_by("-analysis__version")
    incidents = incidents.annotate(
        first_bad=Subquery(current.filter(kind=FindingKind.FIRST_BAD).values("at")[:1]),
        top_suspect=Subquery(current.filter(kind=FindingKind.SUSPECT, rank=1).values("title")[:1]),
    )
    page = Paginator(incidents.order_by("-created_at"), 25).get_page(request.GET.get("page"))
    return render(
        request,
        "timeline/incident_list.html",
        {"page": page, "q": q, "form": IncidentForm(user=request.user)},
    )


@require_http_methods(["POST"])
def incident_new(request: HttpRequest) -> HttpResponse:
    form = IncidentForm(request.POST, user=request.user)
    if form.is_valid():
        try:
            incident = incident_create(
                team=form.cleaned_data["team"],
                title=form.cleaned_data["title"],
                timezone=form.cleaned_data["timezone"] or "UTC",
                user=request.user,
            )
        except ServiceError as exc:
            messages.error(request, str(exc))
            return redirect("incident_list")
        return redirect("incident_timeline", slug=incident.slug)
    messages.error(request, "Could not create the incident: " + form.errors.as_text())
    return redirect("incident_list")


@require_GET
def incident_timeline(request: HttpRequest, slug: str) -> HttpResponse:
    incident = access.incident_for(request.user, slug)
    analysis = current_analysis(incident)
    findings = list(analysis.findings.all()) if analysis else []
    by_kind: dict[str, list[Finding]] = {}
    for f in findings:
        by_kind.setdefault(f.kind, []).append(f)
    artifacts = list(Artifact.objects.filter(incident=incident).order_by("created_at"))
    newest = (
        Analysis.objects.filter(incident=incident, version=incident.analysis_version).first()
        if incident.analysis_version > (analysis.version if analysis else 0)
        else None
    )
    failed = newest is not None and newest.status == RunStatus.FAILED
    pending = incident.analysis_version > (analysis.version if analysis else 0) and not failed
    series_names = selectors.series_names(incident)
    return render(
        request,
        "timeline/timeline.html",
        {
            "incident": incident,
            "analysis": analysis,
            # The weights the shown analysis scored with, so its scores can be explained.
            "weights_json": json.dumps(analysis.weights, indent=2, sort_keys=True)
            if analysis and analysis.weights_version is not None
            else "",
            "analysis_pending": pending,
            "analysis_failed": newest if failed else None,
            "first_bad": next(iter(by_kind.get(FindingKind.FIRST_BAD, [])), None),
            "last_good": next(iter(by_kind.get(FindingKind.LAST_GOOD, [])), None),
            "suspects": by_kind.get(FindingKind.SUSPECT, []),
            "excluded": by_kind.get(FindingKind.EXCLUDED, []),
            "ruled_out": by_kind.get(FindingKind.RULED_OUT, []),
            "warnings": warning_texts(incident, by_kind.get(FindingKind.WARNING, [])),
            "verdict": verdict(analysis, findings),
            "artifacts": artifacts,
            "lanes": LANE_CHOICES,
            "kinds": EVENT_KIND_CHOICES,
            "series_names": series_names,
            "default_panels": picked_panels(request.GET.getlist("series"), series_names),
            "has_data": bool(artifacts)
            or Event.objects.filter(incident=incident).exists()
            or RemoteSeries.objects.filter(incident=incident).exists(),
            # what the page shows; its script polls for a newer one (timeline/views/live.py)
            "version": incident_version(incident),
        },
    )


@require_GET
def analysis_status(request: HttpRequest, slug: str) -> HttpResponse:
    """Polled while an analysis is pending: 204 until the newest requested run has finished,
    then an htmx refresh so the page shows its findings."""
    incident = access.incident_for(request.user, slug)
    analysis = current_analysis(incident)
    done = analysis is not None and analysis.version >= incident.analysis_version
    failed = Analysis.objects.filter(
        incident=incident, version=incident.analysis_version, status=RunStatus.FAILED
    ).exists()
    response = HttpResponse(status=204)
    if done or failed:
        response["HX-Refresh"] = "true"
    return response


def _parse_time(raw: str | None) -> dt.datetime | None:
    """A window bound from the query string; anything unreadable means "unbounded"."""
    if not raw:
        return None
    try:
        return parse_utc(raw)
    except ValueError:
        return None


FIGURE_CACHE_SECONDS = 600
FIGURE_BUILD_SECONDS = 20
KEEP_ZOOMS_SLOWER_THAN_S = 0.15


@require_GET
@access.fused_incident_view
def timeline_data(request: HttpRequest, incident: Incident) -> HttpResponse:
    """The figure for a time window: events on lanes plus downsampled metric panels.

    The body is cached in Redis (shared by every worker) under the incident's version, the
    window and the picked series, and carries that key as its ETag: a viewer asking again with
    ``If-None-Match`` gets a body-less 304, another viewer of the same window the cached body;
    anything new in the incident changes the version, so neither can show a stale figure."""
    start = _parse_time(request.GET.get("start"))
    end = _parse_time(request.GET.get("end"))
    series = request.GET.getlist("series")
    version = incident_version(incident)
    window = f"{start.timestamp() if start else ''}-{end.timestamp() if end else ''}"
    # Remote series (timeline.metrics.remote) change without the incident: a key of their own.
    # (From the overlay: kept per process and version, ~3 us when warm. An EXISTS read with
    # the incident instead cost every request 0.1 ms as RawSQL, 0.35 ms as Exists(OuterRef).)
    layer = overlay(incident, version)
    remote_part = remote.figure_token(layer.has_remotes)
    digest = hashlib.sha256(
        json.dumps([incident.pk, version, window, series, remote_part]).encode()
    ).hexdigest()[:32]
    etag = f'"{digest}"'
    if etag_matches(request, etag):
        response = HttpResponse(status=304)
    else:
        key = f"timeline-json:v1:{digest}"
        # A small zoom is built in a few ms and never kept (below): asking Redis for it would
        # be a round trip that cannot hit.
        small = zoom_is_small(layer, start, end, series)
        body = None if small else shared_cache.get(key)
        # Many viewers opening the same window at once: one worker builds it, the others
        # wait for its body rather than building it too.
        # (Zooms are built by whoever asks: two viewers rarely ask for the same one at once.)
        owner = body is None and (
            start is not None or shared_cache.claim(key, FIGURE_BUILD_SECONDS)
        )
        if body is None and not owner:
            body = shared_cache.wait_for(key, FIGURE_BUILD_SECONDS)
        if body is None:
            try:
                began = time.perf_counter()
                figure = timeline_figure_data(incident, start, end, series=series, version=version)
                meta = orjson.dumps(
                    {
                        "points": {
                            f"{p.name}{trace_name(p.labels)}": [len(p.ts), p.total]
                            for p in figure.points
                        }
                    }
                )
                body = b"".join(
                    (
                        b'{"figure":',
                        charts.figure_json_bytes(charts.timeline_figure(figure.data)),
                        b',"meta":',
                        meta,
                        b"}",
                    )
                )
                # The whole incident is what every viewer opens first: always kept. A zoom is
                # kept only when it was slow to build; most are one viewer's, asked once
                # (their reloads get 304s), and storing 3 MB costs a tenth of building it.
                if start is None or (
                    not small and time.perf_counter() - began > KEEP_ZOOMS_SLOWER_THAN_S
                ):
                    shared_cache.put(key, body, FIGURE_CACHE_SECONDS)
            finally:
                if owner and start is None:
                    shared_cache.release(key)
        response = HttpResponse(body, content_type="application/json")
    return revalidated(response, etag)


@require_GET
def event_detail(request: HttpRequest, slug: str, event_id: int) -> HttpResponse:
    """Side-panel fragment for one event (htmx)."""
    incident = access.incident_for(request.user, slug)
    event = get_object_or_404(Event, incident=incident, pk=event_id)
    change = (
        getattr(event, "config_change", None) if event.kind == EventKind.CONFIG_CHANGE else None
    )
    start = live_config.start_diff(event) if event.kind == EventKind.SERVER_START else None
    sources: list[str] = []
    if change is not None:
        # The change as the analysis sees it: every source that recorded it.
        own = f"{change.source}:{change.ref}"
        merged = [c for c in merged_changes(incident) if c.key == change.key and own in c.sources]
        sources = list(merged[0].sources) if merged else [own]
    return render(
        request,
        "timeline/_event_detail.html",
        {
            "incident": incident,
            "event": event,
            "change": change,
            "start": start,
            "sources": sources,
            "unfinished": unfinished_request(incident, event),
            "body_html": md(event.body),
            "attrs_json": json.dumps(event.attrs, indent=2, sort_keys=True)[:20000],
        },
    )


def unfinished_request(incident: Incident, event: Event) -> dict[str, Any] | None:
    """For a request that never finished: since when, how long the server kept logging after
    it, and the analysis' verdict on it (dropped, or still open when the log ended)."""
    if event.kind != EventKind.REQUEST or event.ends_at is not None:
        return None
    log_end = (
        Event.objects.filter(incident=incident, kind=EventKind.LOG_SPAN)
        .exclude(attrs__has_key="router")  # the servers' logging, not a router's
        .aggregate(end=Max("ends_at"))["end"]
    )
    analysis = current_analysis(incident)
    finding = (
        analysis.findings.filter(kind=FindingKind.SYMPTOM)
        .filter(Q(event_id=event.pk) | Q(data__refs__contains=[event.pk]))
        .first()
        if analysis
        else None
    )
    return {
        "since": event.at,
        "log_end": log_end,
        "open_for": log_end - event.at if log_end and log_end > event.at else None,
        "dropped": finding is not None,
        "finding": finding,
    }


@require_GET
def finding_detail(request: HttpRequest, slug: str, finding_id: int) -> HttpResponse:
    incident = access.incident_for(request.user, slug)
    finding = get_object_or_404(Finding, analysis__incident=incident, pk=finding_id)
    return render(
        request,
        "timeline/_finding_detail.html",
        {"incident": incident, "finding": finding, "explanation_html": md(finding.explanation)},
    )


@require_GET
def event_table(request: HttpRequest, slug: str) -> HttpResponse:
    """The event table under the chart: lane, kind, full-text search, time range, pages."""
    incident = access.incident_for(request.user, slug)
    lanes = [x for x in request.GET.getlist("lane") if x]
    kinds = [x for x in request.GET.getlist("kind") if x]
    q = request.GET.get("q", "").strip()
    qs = selectors.events_in_window(
        incident,
        _parse_time(request.GET.get("start")),
        _parse_time(request.GET.get("end")),
        lanes=lanes,
        kinds=kinds,
        search=q,
    ).only("id", "at", "kind", "lane", "title")
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    template = (
        "timeline/_event_table.html"
        if request.headers.get("HX-Request")
        else "timeline/event_table_page.html"
    )
    return render(
        request,
        template,
        {
            "incident": incident,
            "page": page,
            "q": q,
            "start": request.GET.get("start", "")[:40],
            "end": request.GET.get("end", "")[:40],
            "lanes": lanes,
            "kinds": kinds,
            "lane_choices": LANE_CHOICES,
            "kind_choices": EVENT_KIND_CHOICES,
            "querystring": request.GET.urlencode(),
        },
    )
