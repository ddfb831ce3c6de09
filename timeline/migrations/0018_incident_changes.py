"""The incident's version reads a change log instead of counting the incident's events.

0015-0017's function counted every event and series of the incident on each call: ~1 ms for a
small incident, ~60 ms at 1M events, paid by every poll of every open page (every 4 s) and by
every ``timeline.json``. Statement-level triggers on the two big tables now log which incidents
a statement touched (one ``timeline_incidentchange`` row per incident per statement, read from
the statement's transition table, so a COPY of 1M events logs one row, not a million) and the
function reads those few rows. The small per-incident tables (analyses, notes, hypotheses,
evidence, files, remote series) keep their aggregates.

The log's ids are compared as a whole set (``string_agg`` of every id, not ``max`` and
``count``): a transaction that took an id earlier and commits later still changes the set.
:func:`timeline.versions.changes_compact` folds an incident's rows into one new row.
"""

import importlib

from django.db import migrations, models

_0017 = importlib.import_module("timeline.migrations.0017_incident_version_note_edits")

LOG = """
CREATE FUNCTION timeline_log_incident_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO timeline_incidentchange (incident_id)
      SELECT DISTINCT incident_id FROM new_rows;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO timeline_incidentchange (incident_id)
      SELECT DISTINCT incident_id FROM old_rows;
  ELSE
    INSERT INTO timeline_incidentchange (incident_id)
      SELECT incident_id FROM new_rows UNION SELECT incident_id FROM old_rows;
  END IF;
  RETURN NULL;
END
$$;
"""
# Transition tables allow one event per trigger: three per table.
TRIGGERS = "".join(
    f"""
CREATE TRIGGER {table}_log_{op.lower()} AFTER {op} ON {table}
  REFERENCING {refs} FOR EACH STATEMENT EXECUTE FUNCTION timeline_log_incident_change();
"""
    for table in ("timeline_event", "timeline_series")
    for op, refs in (
        ("INSERT", "NEW TABLE AS new_rows"),
        ("UPDATE", "NEW TABLE AS new_rows OLD TABLE AS old_rows"),
        ("DELETE", "OLD TABLE AS old_rows"),
    )
)
# Every incident starts with one row: its version changes once, on this migration.
SEED = "INSERT INTO timeline_incidentchange (incident_id) SELECT id FROM timeline_incident;"
DROP = (
    "".join(
        f"DROP TRIGGER IF EXISTS {table}_log_{op} ON {table};"
        for table in ("timeline_event", "timeline_series")
        for op in ("insert", "update", "delete")
    )
    + "DROP FUNCTION IF EXISTS timeline_log_incident_change();"
)

_EVENTS = """    (SELECT coalesce(max(id), 0) || '.' || count(*)
       FROM timeline_event WHERE incident_id = incident),"""
_CHANGES = """    (SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '')
       FROM timeline_incidentchange WHERE incident_id = incident),"""
_SERIES = (
    "    (SELECT coalesce(max(id), 0) || '.' || count(*) || '.' "
    "|| coalesce(sum(sample_count), 0)\n"
    "         || '.' || coalesce(max(last_ts)::text, '')\n"
    "       FROM timeline_series WHERE incident_id = incident),"
)
assert _EVENTS in _0017.CREATE and _SERIES in _0017.CREATE
CREATE = _0017.CREATE.replace(_EVENTS, _CHANGES).replace(_SERIES, "")


class Migration(migrations.Migration):
    dependencies = [("timeline", "0017_incident_version_note_edits")]

    operations = [
        migrations.CreateModel(
            name="IncidentChange",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("incident_id", models.BigIntegerField()),
            ],
            options={
                "indexes": [
                    models.Index(fields=["incident_id", "id"], name="incidentchange_incident_id")
                ],
            },
        ),
        migrations.RunSQL(LOG + TRIGGERS + SEED, DROP),
        migrations.RunSQL(CREATE, _0017.CREATE),
    ]
