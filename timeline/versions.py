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


def changes_compact() -> int:
    """Fold each incident's change log (migration 0018) into one new row, and drop the rows
    of incidents that no longer exist; returns the rows removed. Beat, hourly.

    The new row is what keeps versions honest: the folded set is one no reader has seen, so
    the version changes once here and can never come back to an earlier value (a transaction
    that logged a lower id and committed after a read changed the set; folding it away must
    not change it back)."""
    with connection.cursor() as cur:
        cur.execute(
            "WITH many AS ("
            "  SELECT incident_id FROM timeline_incidentchange GROUP BY incident_id"
            "  HAVING count(*) > 1 OR NOT EXISTS ("
            "    SELECT 1 FROM timeline_incident i WHERE i.id = incident_id)"
            "), gone AS ("
            "  DELETE FROM timeline_incidentchange c USING many m"
            "  WHERE c.incident_id = m.incident_id RETURNING c.incident_id"
            "), folded AS ("
            "  INSERT INTO timeline_incidentchange (incident_id)"
            "  SELECT DISTINCT g.incident_id FROM gone g"
            "  WHERE EXISTS (SELECT 1 FROM timeline_incident i WHERE i.id = g.incident_id)"
            ") SELECT count(*) FROM gone"
        )
        row = cur.fetchone()
    return int(row[0]) if row else 0
