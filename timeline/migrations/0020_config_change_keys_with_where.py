"""A config change's event key holds the file it was recorded at (ingest.loaders).

Before, two changes of one commit or doc revision with the same key and values in two files
(``--tp 4 -> 8`` in both a prefill and a decode launch script) had one key: the second was
dropped as "already on the timeline" (47 % of a real repository's changes on a first ingest).
Existing events are re-keyed the way the loader now keys them, so re-ingesting the same bytes
still adds nothing. A stored key cut at the column's 500 characters cannot be extended
exactly and is left as it was.
"""

import hashlib
from typing import Any

from django.db import migrations

KEY_MAX = 500


def _fingerprint(kind: str, key: str) -> str:
    return hashlib.sha256(f"{kind}\x00{key}".encode()).hexdigest()


def rekey(apps: Any, schema_editor: Any) -> None:
    ConfigChange = apps.get_model("timeline", "ConfigChange")
    Event = apps.get_model("timeline", "Event")
    changed = []
    rows = (
        ConfigChange.objects.exclude(where="")
        .select_related("event")
        .only("where", "event__key", "event__kind")
    )
    for change in rows.iterator(chunk_size=2000):
        event = change.event
        if len(event.key) >= KEY_MAX:
            continue
        full = f"{event.key}\x1f{change.where}"
        event.key = full[:KEY_MAX]
        event.fingerprint = _fingerprint(event.kind, full)
        changed.append(event)
        if len(changed) >= 2000:
            Event.objects.bulk_update(changed, ["key", "fingerprint"])
            changed = []
    if changed:
        Event.objects.bulk_update(changed, ["key", "fingerprint"])


class Migration(migrations.Migration):
    dependencies = [("timeline", "0019_incident_version_from_log_only")]

    operations = [migrations.RunPython(rekey, migrations.RunPython.noop)]
