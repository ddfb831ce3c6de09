"""The incident's version (timeline.versions) also changes when a remote series is added or
removed (timeline.metrics.remote): the figure cached under the version must show it. The same
function as 0015's with one more part; this migration also joins the two branches."""

import importlib

from django.db import migrations

# Back to 0015's function (a module name that starts with a digit is imported by name).
PREVIOUS = importlib.import_module("timeline.migrations.0015_incident_version_function").CREATE
_LAST = """       FROM timeline_series WHERE incident_id = incident)
"""
_REMOTE = """       FROM timeline_series WHERE incident_id = incident),
    (SELECT coalesce(max(id), 0) || '.' || count(*)
       FROM timeline_remoteseries WHERE incident_id = incident)
"""
assert PREVIOUS.count(_LAST) == 1
CREATE = PREVIOUS.replace(_LAST, _REMOTE)


class Migration(migrations.Migration):
    dependencies = [
        ("timeline", "0013_remote_series"),
        ("timeline", "0015_incident_version_function"),
    ]

    operations = [migrations.RunSQL(CREATE, PREVIOUS)]
