"""The incident's version (timeline.versions) also changes when a remote series is added or
removed (timeline.metrics.remote): the figure cached under the version must show it. The same
function as 0015's with one more part; this migration also joins the two branches."""

import importlib

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION timeline_incident_version(incident bigint) RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN left(md5(concat_ws('|',
    (SELECT coalesce(max(id), 0) || '.' || count(*)
       FROM timeline_event WHERE incident_id = incident),
    (SELECT coalesce(max(id), 0) || '.' || count(*) || '.'
         || coalesce(max(finished_at)::text, '') || '.'
         || coalesce(string_agg(status, '' ORDER BY id), '')
       FROM timeline_analysis WHERE incident_id = incident),
    (SELECT coalesce(max(id), 0) || '.' || count(*)
       FROM timeline_note WHERE incident_id = incident),
    (SELECT coalesce(max(updated_at)::text, '') || '.' || count(*)
       FROM timeline_hypothesis WHERE incident_id = incident),
    (SELECT coalesce(max(e.id), 0) || '.' || count(*)
       FROM timeline_evidence e JOIN timeline_hypothesis h ON h.id = e.hypothesis_id
       WHERE h.incident_id = incident),
    (SELECT coalesce(max(c.id), 0)
       FROM timeline_hypothesisstatuschange c
       JOIN timeline_hypothesis h ON h.id = c.hypothesis_id
       WHERE h.incident_id = incident),
    (SELECT coalesce(max(id), 0) || '.' || count(*) || '.'
         || coalesce(string_agg(status, '' ORDER BY id), '')
       FROM timeline_artifact WHERE incident_id = incident),
    (SELECT updated_at::text || '.' || analysis_version
       FROM timeline_incident WHERE id = incident),
    (SELECT coalesce(max(id), 0) || '.' || count(*) || '.' || coalesce(sum(sample_count), 0)
         || '.' || coalesce(max(last_ts)::text, '')
       FROM timeline_series WHERE incident_id = incident),
    (SELECT coalesce(max(id), 0) || '.' || count(*)
       FROM timeline_remoteseries WHERE incident_id = incident)
  )), 20);
END
$$;
"""

# Back to 0015's function (a module name that starts with a digit is imported by name).
PREVIOUS = importlib.import_module("timeline.migrations.0015_incident_version_function").CREATE


class Migration(migrations.Migration):
    dependencies = [
        ("timeline", "0013_remote_series"),
        ("timeline", "0015_incident_version_function"),
    ]

    operations = [migrations.RunSQL(CREATE, PREVIOUS)]
