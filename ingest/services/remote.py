"""Remote series added to and removed from an incident (drawn and analysed by
timeline.metrics.remote, never copied). Each write is audited; a series the analysis reads
asks for a new analysis."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from ingest.clients.prometheus import PrometheusError, public_url
from ingest.services import IngestError
from timeline.analysis import ENGINE_SERIES
from timeline.metrics import remote
from timeline.models import DataSource, Incident, RemoteSeries
from timeline.services import analysis_request
from timeline.services.audit import audit
from timeline.services.common import actor_or_none

# The (incident, source, query) unique index holds the query itself: Postgres refuses an index
# row over ~2.7 kB, so a longer query would fail in the database instead of here.
MAX_QUERY_BYTES = 2000
PROBE_TIMEOUT_S = 10.0


def remote_series_add(
    *,
    incident: Incident,
    source: DataSource,
    query: str,
    name: str = "",
    title: str = "",
    user: Any = None,
) -> RemoteSeries:
    """Add a series the incident draws from ``source`` (of the incident's team). The server is
    asked once: a query it refuses is refused with its own words. ``name`` (the metric the
    series stands for) defaults to the selector's metric name."""
    if source.team_id != incident.team_id:
        raise IngestError("that data source belongs to another team")
    query, name, title = query.strip(), name.strip(), title.strip()
    if not query:
        raise IngestError("give a PromQL query")
    if len(query.encode()) > MAX_QUERY_BYTES:
        raise IngestError(f"the query is longer than {MAX_QUERY_BYTES:,} bytes (UTF-8)")
    if RemoteSeries.objects.filter(incident=incident, source=source, query=query).exists():
        raise IngestError(f"the incident already draws this query from {source.name}")
    window = remote.incident_window(incident)
    at = (window[1] if window else timezone.now()).timestamp()
    try:
        resolution = remote.probe(remote.server_for(source, timeout=PROBE_TIMEOUT_S), query, at=at)
    except PrometheusError as exc:
        raise IngestError(f"{public_url(source.url)} refused the query: {exc}") from None
    try:
        with transaction.atomic():
            series = _create(incident, source, query, name, title, resolution, user)
    except IntegrityError:  # added by someone else while the server was being asked
        raise IngestError(f"the incident already draws this query from {source.name}") from None
    return series


def _create(
    incident: Incident,
    source: DataSource,
    query: str,
    name: str,
    title: str,
    resolution: float,
    user: Any,
) -> RemoteSeries:
    series = RemoteSeries.objects.create(
        incident=incident,
        source=source,
        query=query,
        name=name or remote.selector_name(query),
        title=title,
        resolution_s=resolution,
        created_by=actor_or_none(user),
    )
    audit(
        incident=incident,
        actor=user,
        action="remote_series.add",
        target=f"remote_series:{series.pk}",
        data={"source": source.name, "query": query, "name": series.name, "title": title},
    )
    if series.name in ENGINE_SERIES:
        analysis_request(incident_id=incident.pk)
    return series


@transaction.atomic
def remote_series_remove(*, series: RemoteSeries, user: Any = None) -> None:
    """Stop drawing a remote series (nothing of it is stored, so nothing else goes)."""
    audit(
        incident=series.incident,
        actor=user,
        action="remote_series.remove",
        target=f"remote_series:{series.pk}",
        data={"source": series.source.name, "query": series.query, "name": series.name},
    )
    series.delete()
    if series.name in ENGINE_SERIES:
        analysis_request(incident_id=series.incident_id)
