"""Metrics pulled from a Prometheus server into an incident, through the one ingest path.

Each query is asked for its raw samples: an instant query with a range selector
(``metric[3600s]`` evaluated at the end of each hour of the window) answers with every sample
Prometheus holds there, at its own timestamp (``query_range`` would resample at its step).
The hours' answers of one query are joined into one ``query_range``-shaped JSON document, each
series labelled with ``source`` = the server's URL, and handed to ``files_ingest`` as an
in-memory file: storage, idempotency (the same answer twice is one artifact; samples at times
already stored are kept once) and parse warnings are the files' own.

A query that would load more than Prometheus's ``--query.max-samples`` is asked again in
halves of its time range, down to a minute.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ingest.clients.prometheus import PrometheusError, Server, public_url, query_fetch
from ingest.services import IngestError
from ingest.services.orchestration import Load, Upload, files_ingest
from timeline.choices import RunStatus
from timeline.metrics.remote import incident_window, server_for
from timeline.models import DataSource, Incident, MetricsPull
from timeline.services import analysis_request

log = logging.getLogger(__name__)

# The SGLang and DCGM series that tell the story (FORMATS.md), with the histograms' buckets.
DEFAULT_QUERIES = (
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:gen_throughput",
    "sglang:token_usage",
    "sglang:num_used_tokens",
    '{__name__=~"sglang:time_to_first_token_seconds_(bucket|sum|count)"}',
    '{__name__=~"sglang:e2e_request_latency_seconds_(bucket|sum|count)"}',
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_PROF_SM_ACTIVE",
)


def pull_create(
    *,
    incident: Incident,
    url: str = "",
    source: DataSource | None = None,
    queries: Sequence[str] = (),
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
    step: float = 0.0,
    user: Any = None,
) -> MetricsPull:
    """Record a pull (queued by ``pull_queue``). The window defaults to the incident's."""
    if source is not None:
        if source.team_id != incident.team_id:
            raise IngestError("that data source belongs to another team")
        url = source.url
    if not url:
        raise IngestError("give a Prometheus URL or a data source")
    if url != public_url(url) and "@" in url.split("//", 1)[-1].split("/", 1)[0]:
        # The URL is stored and shown on the pull: credentials belong in a data source.
        raise IngestError("the URL holds credentials: give them to a data source instead")
    if start is None or end is None:
        window = incident_window(incident)
        if window is None:
            raise IngestError(
                "the incident has no events or marks to take a window from: give start and end"
            )
        start, end = start or window[0], end or window[1]
    if end < start:
        raise IngestError(f"the window ends ({end:%Y-%m-%dT%H:%M:%SZ}) before it starts")
    return MetricsPull.objects.create(
        incident=incident,
        source=source,
        url=url,
        queries=list(queries) or list(DEFAULT_QUERIES),
        start=start,
        end=end,
        step=step,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


def pull_queue(*, pull: MetricsPull) -> None:
    """Queue the pull on the workers once its row has committed."""
    from ingest.tasks import pull_metrics  # the task module imports the services

    transaction.on_commit(lambda: pull_metrics.delay(pull.pk))


def pull_run(*, pull_id: int) -> MetricsPull:
    """What a worker (or ``prometheus_pull --here``) does with a pull: claim it, ask the
    server, ingest the answers here, record counts or the server's error. Idempotent: a done
    pull is left alone, and pulling the same samples again stores nothing new."""
    claimed = MetricsPull.objects.filter(
        Q(status=RunStatus.PENDING) | Q(status=RunStatus.RUNNING), pk=pull_id
    ).update(status=RunStatus.RUNNING, started_at=timezone.now(), progress=0.0, error="")
    pull = MetricsPull.objects.select_related("incident", "source").get(pk=pull_id)
    if not claimed:
        return pull
    server = _server(pull)
    origin = public_url(pull.url)
    counts: dict[str, Any] = {"artifacts": 0, "new_artifacts": 0, "samples": 0, "series": 0}
    warnings: list[str] = []
    n = len(pull.queries)
    try:
        for i, query in enumerate(pull.queries):

            def progress(part: float, i: int = i) -> None:
                _progress(pull.pk, (i + part * 0.8) / n)

            document = query_fetch(
                server,
                query,
                start=pull.start.timestamp(),
                end=pull.end.timestamp(),
                step=pull.step,
                origin=origin,
                on_progress=progress,
            )
            if not document["data"]["result"]:
                warnings.append(f"{query}: no series in the window")
                continue
            data = json.dumps(document, separators=(",", ":")).encode()
            outcome = files_ingest(
                incident=pull.incident,
                files=[Upload(name=_file_name(query, pull), size=len(data), data=data)],
                user=pull.created_by,
                load=Load.HERE,
                analyze=False,
            )
            if outcome.refused:
                raise IngestError("; ".join(outcome.refused))
            for artifact in outcome.artifacts:
                if artifact.status == RunStatus.FAILED:
                    raise IngestError(artifact.error)
                counts["artifacts"] += 1
                if artifact in outcome.created:
                    counts["new_artifacts"] += 1
                    counts["samples"] += int(artifact.counts.get("samples", 0))
                    counts["series"] += int(artifact.counts.get("series", 0))
                    warnings += artifact.counts.get("warnings", [])
            _progress(pull.pk, (i + 1) / n)
    except (PrometheusError, IngestError) as exc:
        message = str(exc)
        log.warning("pull %s from %s failed: %s", pull.pk, origin, message)
        MetricsPull.objects.filter(pk=pull.pk).update(
            status=RunStatus.FAILED,
            error=message[:5000],
            counts={**counts, "warnings": warnings[:50]},
            finished_at=timezone.now(),
        )
        pull.refresh_from_db()
        return pull
    counts["warnings"] = warnings[:50]
    MetricsPull.objects.filter(pk=pull.pk).update(
        status=RunStatus.DONE, progress=1.0, counts=counts, finished_at=timezone.now()
    )
    if counts["samples"]:
        analysis_request(incident_id=pull.incident_id)
    pull.refresh_from_db()
    return pull


def _server(pull: MetricsPull) -> Server:
    source = pull.source
    return Server(url=pull.url) if source is None else server_for(source)


def _progress(pull_id: int, value: float) -> None:
    MetricsPull.objects.filter(pk=pull_id).update(progress=min(max(value, 0.0), 1.0))


def _file_name(query: str, pull: MetricsPull) -> str:
    what = re.sub(r"[^A-Za-z0-9_.:-]+", "_", query).strip("_")[:120] or "query"
    return f"prometheus-{what}-{pull.start:%Y%m%dT%H%M%SZ}-{pull.end:%Y%m%dT%H%M%SZ}.json"
