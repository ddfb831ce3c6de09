"""The incident's version is the change log alone: the small per-incident tables log too.

0018 moved events and series to a change log its triggers keep; the version function still
aggregated the analyses, notes, hypotheses, evidence, status changes, files, remote series and
the incident row on every call: nine subqueries, ~0.1 ms of every ``timeline.json`` and every
page poll. Row triggers on those tables now log the incident a write touched, but only for
what the version watched before (an analysis's status and end, a note's time and text, a
hypothesis's ``updated_at``, a file's status, the incident's ``updated_at`` and
``analysis_version``; rows added or removed): a file's progress or an analysis's heartbeat
changes nothing on the page and logs nothing. The function reads the log and nothing else.
"""

import importlib

from django.db import migrations

_0018 = importlib.import_module("timeline.migrations.0018_incident_changes")

LOG_ROW = """
CREATE FUNCTION timeline_log_row_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  inc bigint;
BEGIN
  IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
  IF TG_ARGV[0] = 'hypothesis' THEN
    SELECT h.incident_id INTO inc FROM timeline_hypothesis h WHERE h.id = r.hypothesis_id;
  ELSIF TG_ARGV[0] = 'id' THEN
    inc := r.id;
  ELSE
    inc := r.incident_id;
  END IF;
  IF inc IS NOT NULL THEN
    INSERT INTO timeline_incidentchange (incident_id) VALUES (inc);
  END IF;
  RETURN NULL;
END
$$;
"""

# table -> (how its rows name their incident, the columns whose change is a new version;
# empty: only rows added or removed count)
WATCHED = {
    "timeline_analysis": ("incident_id", ("status", "finished_at")),
    "timeline_note": ("incident_id", ("at", "body")),
    "timeline_hypothesis": ("incident_id", ("updated_at",)),
    "timeline_evidence": ("hypothesis", ()),
    "timeline_hypothesisstatuschange": ("hypothesis", ()),
    "timeline_artifact": ("incident_id", ("status",)),
    "timeline_remoteseries": ("incident_id", ()),
    "timeline_incident": ("id", ("updated_at", "analysis_version")),
}


def _triggers() -> str:
    out = []
    for table, (via, columns) in WATCHED.items():
        out.append(
            f"CREATE TRIGGER {table}_log_rows AFTER INSERT OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION timeline_log_row_change('{via}');"
        )
        if columns:
            changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in columns)
            out.append(
                f"CREATE TRIGGER {table}_log_edits AFTER UPDATE ON {table} "
                f"FOR EACH ROW WHEN ({changed}) "
                f"EXECUTE FUNCTION timeline_log_row_change('{via}');"
            )
    return "\n".join(out)


DROP = (
    "".join(
        f"DROP TRIGGER IF EXISTS {table}_log_rows ON {table};"
        f"DROP TRIGGER IF EXISTS {table}_log_edits ON {table};"
        for table in WATCHED
    )
    + "DROP FUNCTION IF EXISTS timeline_log_row_change();"
)

# Every incident's version changes once, here (the set of its log's ids is a new one).
SEED = "INSERT INTO timeline_incidentchange (incident_id) SELECT id FROM timeline_incident;"

# PL/pgSQL, as before: its query is planned once per connection (a LANGUAGE sql function
# with a FROM is not inlined, and was planned on every call: 0.6 ms).
CREATE = """
CREATE OR REPLACE FUNCTION timeline_incident_version(incident bigint) RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (
    SELECT left(md5(coalesce(string_agg(id::text, ',' ORDER BY id), '')), 20)
    FROM timeline_incidentchange WHERE incident_id = incident
  );
END
$$;
"""
RESTORE = _0018.CREATE  # (CREATE OR REPLACE: plans that call it are replanned, not broken)


class Migration(migrations.Migration):
    dependencies = [("timeline", "0018_incident_changes")]

    operations = [
        migrations.RunSQL(LOG_ROW + _triggers() + SEED, DROP),
        migrations.RunSQL(CREATE, RESTORE),
    ]
