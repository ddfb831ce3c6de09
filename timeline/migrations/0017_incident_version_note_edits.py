"""The incident's version also changes when a note is edited (its time or text), not only when
one is added or removed: the figure cached under the version showed an edited note's old
marker. The same function as 0016's with the note part reading what the notes say."""

import importlib

from django.db import migrations

_0016 = importlib.import_module("timeline.migrations.0016_incident_version_remote_series")

_NOTES_0016 = """    (SELECT coalesce(max(id), 0) || '.' || count(*)
       FROM timeline_note WHERE incident_id = incident),"""
_NOTES = """    (SELECT coalesce(max(id), 0) || '.' || count(*) || '.'
         || md5(coalesce(string_agg(at::text || body, '' ORDER BY id), ''))
       FROM timeline_note WHERE incident_id = incident),"""
assert _NOTES_0016 in _0016.CREATE
CREATE = _0016.CREATE.replace(_NOTES_0016, _NOTES)


class Migration(migrations.Migration):
    dependencies = [("timeline", "0016_incident_version_remote_series")]

    operations = [migrations.RunSQL(CREATE, _0016.CREATE)]
