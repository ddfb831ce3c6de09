"""Reads: team-scoped incident lookups, events in a window, downsampled series."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import Q, QuerySet
from django.http import Http404

from timeline.choices import EventKind
from timeline.models import Event, Incident, Series

# The panels shown without asking, in order; any other series can be picked.
DEFAULT_PANELS: tuple[tuple[str, str], ...] = (
    ("sglang:num_running_reqs", "Running requests"),
    ("sglang:num_queue_reqs", "Queued requests"),
    ("sglang:gen_throughput", "Generation throughput (tok/s)"),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilisation (%)"),
)
MAX_POINTS_PER_TRACE = 1500
MAX_EVENTS_PER_LANE = 3000


def incidents_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Incident]:
    """Incidents of the user's teams; superusers see all."""
    qs = Incident.objects.select_related("team")
    if getattr(user, "is_superuser", False):
        return qs
    return qs.filter(team__members=user)


def incident_for_user(user: AbstractBaseUser | AnonymousUser, slug: str) -> Incident:
    """The incident, or 404 for incidents of other teams (no hint that it exists)."""
    incident = incidents_for_user(user).filter(slug=slug).first()
    if incident is None:
        raise Http404("No such incident")
    return incident


def events_in_window(
    incident: Incident,
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
    *,
    lanes: list[str] | None = None,
    kinds: list[str] | None = None,
    search: str = "",
) -> QuerySet[Event]:
    qs = Event.objects.filter(incident=incident)
    if start is not None:
        qs = qs.filter(Q(at__gte=start) | Q(ends_at__gte=start))
    if end is not None:
        qs = qs.filter(at__lte=end)
    if lanes:
        qs = qs.filter(lane__in=lanes)
    if kinds:
        qs = qs.filter(kind__in=kinds)
    if search:
        # Same expression as the event_fulltext GIN index.
        qs = qs.annotate(search=SearchVector("title", "body", config="english")).filter(
            search=SearchQuery(search, config="english", search_type="websearch")
        )
    return qs.order_by("at", "id")


def timeline_events(
    incident: Incident, start: dt.datetime | None, end: dt.datetime | None
) -> list[dict[str, Any]]:
    """Events for the chart's lanes: requests only when they never finished (the symptoms);
    log spans are context, not markers."""
    qs = events_in_window(incident, start, end).exclude(kind=EventKind.LOG_SPAN)
    qs = qs.exclude(kind=EventKind.REQUEST, ends_at__isnull=False)
    return list(
        qs.values("id", "at", "ends_at", "kind", "lane", "title")[: MAX_EVENTS_PER_LANE * 8]
    )


@dataclass(frozen=True)
class SeriesPoints:
    series_id: int
    name: str
    labels: dict[str, str]
    ts: np.ndarray  # epoch milliseconds
    values: np.ndarray
    total: int  # points in the window before downsampling


def series_for_panels(incident: Incident, names: list[str]) -> list[Series]:
    return list(Series.objects.filter(incident=incident, name__in=names).order_by("name", "id"))


def series_downsampled(
    series: list[Series],
    start: dt.datetime | None,
    end: dt.datetime | None,
    *,
    max_points: int = MAX_POINTS_PER_TRACE,
) -> list[SeriesPoints]:
    """Each series' samples in the window, reduced to at most ``max_points`` by MinMaxLTTB
    (keeps spikes and dips that plain striding would drop)."""
    from tsdownsample import MinMaxLTTBDownsampler

    if not series:
        return []
    sql = (
        "SELECT series_id, (EXTRACT(EPOCH FROM ts) * 1000)::int8, value FROM timeline_sample "
        "WHERE series_id = ANY(%s)"
    )
    params: list[Any] = [[s.pk for s in series]]
    if start is not None:
        sql += " AND ts >= %s"
        params.append(start)
    if end is not None:
        sql += " AND ts <= %s"
        params.append(end)
    with connection.cursor() as cur:
        cur.execute(sql + " ORDER BY series_id, ts", params)
        rows = cur.fetchall()
    if not rows:
        return []
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    all_ts = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    all_values = np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows))
    bounds = np.flatnonzero(np.diff(ids)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [len(ids)]))
    by_id = {s.pk: s for s in series}
    out = []
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        s = by_id[int(ids[a])]
        ts, values = all_ts[a:b], all_values[a:b]
        total = len(ts)
        if total > max_points:
            finite = np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
            idx = MinMaxLTTBDownsampler().downsample(ts, finite, n_out=max_points)
            ts, values = ts[idx], values[idx]
        out.append(
            SeriesPoints(
                series_id=s.pk,
                name=s.name,
                labels=dict(s.labels or {}),
                ts=ts,
                values=values,
                total=total,
            )
        )
    return out


def series_names(incident: Incident) -> list[str]:
    """Distinct metric names of the incident, for the panel picker."""
    return list(
        Series.objects.filter(incident=incident)
        .order_by("name")
        .values_list("name", flat=True)
        .distinct()
    )
