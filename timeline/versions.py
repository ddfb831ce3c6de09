"""The version of an incident: a short string that changes whenever anything its timeline page
shows changes (polled by the page, timeline.views.live; the key of the cached figure,
timeline.figure_data and timeline.views.incidents)."""

from __future__ import annotations

from django.db import connection
from django.db.models.expressions import RawSQL

from timeline.models import Incident

# Each part changes when something the page shows changes: new or removed events (an ingest,
# a push), analyses (requested, finished, failed), notes, hypotheses and their evidence and
# status history, files and their ingest state, the incident itself (marks, edits) and its
# metric series (samples added to one).
_VERSION_PARTS = (
    "SELECT coalesce(max(id), 0) || '.' || count(*) FROM timeline_event WHERE incident_id = {i}",
    "SELECT coalesce(max(id), 0) || '.' || count(*) || '.' || coalesce(max(finished_at)::text, '')"
    " || '.' || coalesce(string_agg(status, '' ORDER BY id), '')"
    " FROM timeline_analysis WHERE incident_id = {i}",
    "SELECT coalesce(max(id), 0) || '.' || count(*) FROM timeline_note WHERE incident_id = {i}",
    "SELECT coalesce(max(updated_at)::text, '') || '.' || count(*) FROM timeline_hypothesis"
    " WHERE incident_id = {i}",
    "SELECT coalesce(max(e.id), 0) || '.' || count(*) FROM timeline_evidence e"
    " JOIN timeline_hypothesis h ON h.id = e.hypothesis_id WHERE h.incident_id = {i}",
    "SELECT coalesce(max(c.id), 0) FROM timeline_hypothesisstatuschange c"
    " JOIN timeline_hypothesis h ON h.id = c.hypothesis_id WHERE h.incident_id = {i}",
    "SELECT coalesce(max(id), 0) || '.' || count(*) || '.'"
    " || coalesce(string_agg(status, '' ORDER BY id), '')"
    " FROM timeline_artifact WHERE incident_id = {i}",
    "SELECT updated_at::text || '.' || analysis_version FROM timeline_incident WHERE id = {i}",
    "SELECT coalesce(max(id), 0) || '.' || count(*) || '.' || coalesce(sum(sample_count), 0)"
    " || '.' || coalesce(max(last_ts)::text, '') FROM timeline_series WHERE incident_id = {i}",
    # remote series added or removed (their samples are the server's: timeline.metrics.remote)
    "SELECT coalesce(max(id), 0) || '.' || count(*) FROM timeline_remoteseries"
    " WHERE incident_id = {i}",
)


def _version_sql(incident_ref: str) -> str:
    """One expression of the parts: the first 20 hex digits of their md5."""
    parts = ", ".join(f"({part.format(i=incident_ref)})" for part in _VERSION_PARTS)
    return f"SELECT left(md5(concat_ws('|', {parts})), 20)"


def version_annotation() -> RawSQL:
    """The version as an annotation of an Incident query (``access.incident_for(...,
    annotate=...)``): the incident and its version in one round trip."""
    # Constant SQL: the parts above and a column reference, no input of anyone's.
    return RawSQL(_version_sql('"timeline_incident"."id"'), ())  # noqa: S611


def incident_version(incident: Incident) -> str:
    """A short string that changes whenever anything the timeline page shows changes."""
    known = getattr(incident, "version", None)
    if isinstance(known, str):
        return known
    with connection.cursor() as cur:
        cur.execute(_version_sql("%(i)s"), {"i": incident.pk})
        row = cur.fetchone()
    return str(row[0]) if row else ""
