"""The version of an incident: a short string that changes whenever anything its timeline page
shows changes (polled by the page, timeline.views.live; the key of the cached figure,
timeline.figure_data and timeline.views.incidents)."""

from __future__ import annotations

from django.db import connection
from django.db.models.expressions import RawSQL

from timeline.models import Incident

# The parts and the hash are a database function (migration 0015, which says what each part
# watches; 0016 adds the remote series): its queries are planned once per connection, not on
# each of the page's polls.
VERSION_SQL = "SELECT timeline_incident_version({i})"


def version_annotation() -> RawSQL:
    """The version as an annotation of an Incident query (``access.incident_for(...,
    annotate=...)``): the incident and its version in one round trip."""
    # Constant SQL: the function and a column reference, no input of anyone's.
    return RawSQL(VERSION_SQL.format(i='"timeline_incident"."id"'), ())  # noqa: S611


def incident_version(incident: Incident) -> str:
    """A short string that changes whenever anything the timeline page shows changes."""
    known = getattr(incident, "version", None)
    if isinstance(known, str):
        return known
    with connection.cursor() as cur:
        cur.execute(VERSION_SQL.format(i="%(i)s"), {"i": incident.pk})
        row = cur.fetchone()
    return str(row[0]) if row else ""
