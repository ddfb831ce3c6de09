"""Postgres announces (NOTIFY ``timeline_proofs``) every change that can undo a proven access.

``timeline.proofs`` keeps, per web process, what ``access.incident_by_session`` proved (this
session may view this incident, at this version), and forgets it all on any announcement:
a session written or removed (a logout, a new login, a password change), a user changed (made
inactive, a new password, no longer superuser), a team's members changed, an incident changed
or removed, or a new row in the incident's change log (its version: new evidence, an analysis,
a note). Statement triggers: one ``pg_notify`` per statement, folded by Postgres into one per
transaction.
"""

from typing import Any

from django.conf import settings
from django.db import migrations

CHANNEL = "timeline_proofs"

FUNCTION = f"""
CREATE FUNCTION timeline_announce_proof_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('{CHANNEL}', TG_TABLE_NAME);
  RETURN NULL;
END
$$;
"""


def _tables(apps: Any) -> list[str]:
    app_label, model_name = settings.AUTH_USER_MODEL.split(".")
    user = apps.get_model(app_label, model_name)
    team = apps.get_model("timeline", "Team")
    return [
        apps.get_model("sessions", "Session")._meta.db_table,
        user._meta.db_table,
        team.members.through._meta.db_table,
        apps.get_model("timeline", "Incident")._meta.db_table,
        "timeline_incidentchange",
    ]


def forwards(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute(FUNCTION)
    for table in _tables(apps):
        # Table names from the models' metadata, not from anyone's input.
        schema_editor.execute(
            f'CREATE TRIGGER "{table}_announce" '
            f'AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "{table}" '
            "FOR EACH STATEMENT EXECUTE FUNCTION timeline_announce_proof_change()"
        )


def backwards(apps: Any, schema_editor: Any) -> None:
    for table in _tables(apps):
        schema_editor.execute(f'DROP TRIGGER IF EXISTS "{table}_announce" ON "{table}"')
    schema_editor.execute("DROP FUNCTION IF EXISTS timeline_announce_proof_change()")


class Migration(migrations.Migration):
    dependencies = [
        ("timeline", "0020_config_change_keys_with_where"),
        ("sessions", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
