"""The incident's version also changes when a note is edited (its time or text), not only when
one is added or removed: the figure cached under the version showed an edited note's old
marker. The same function as 0016's with the note part reading what the notes say."""

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
    (SELECT coalesce(max(id), 0) || '.' || count(*) || '.'
         || md5(coalesce(string_agg(at::text || body, '' ORDER BY id), ''))
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

_0016 = importlib.import_module("timeline.migrations.0016_incident_version_remote_series")


class Migration(migrations.Migration):
    dependencies = [("timeline", "0016_incident_version_remote_series")]

    operations = [migrations.RunSQL(CREATE, _0016.CREATE)]
