"""Hypothesis status history, the incident's action items, and an append-only audit log.

The audit trigger refuses every UPDATE of timeline_auditentry except nulling the actor (what
ON DELETE SET_NULL does when a user is deleted), and every DELETE unless the transaction set
timeline.audit_purge = 'on' (services.incident_delete does, to delete a whole incident).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

AUDIT_TRIGGER = """
CREATE FUNCTION timeline_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.actor_id IS NULL AND OLD.actor_id IS NOT NULL
           AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'the audit log is append-only: entry % cannot be changed', OLD.id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF coalesce(current_setting('timeline.audit_purge', true), '') = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only: entry % cannot be deleted', OLD.id
        USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER timeline_audit_append_only
    BEFORE UPDATE OR DELETE ON timeline_auditentry
    FOR EACH ROW EXECUTE FUNCTION timeline_audit_append_only();
"""

AUDIT_TRIGGER_REVERSE = """
DROP TRIGGER IF EXISTS timeline_audit_append_only ON timeline_auditentry;
DROP FUNCTION IF EXISTS timeline_audit_append_only();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("timeline", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunSQL(AUDIT_TRIGGER, reverse_sql=AUDIT_TRIGGER_REVERSE),
        migrations.AddField(
            model_name="incident",
            name="action_items",
            field=models.TextField(blank=True),
        ),
        migrations.CreateModel(
            name="HypothesisStatusChange",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "old_status",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("open", "Open"),
                            ("supported", "Supported"),
                            ("refuted", "Refuted"),
                            ("confirmed", "Confirmed"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "new_status",
                    models.CharField(
                        choices=[
                            ("open", "Open"),
                            ("supported", "Supported"),
                            ("refuted", "Refuted"),
                            ("confirmed", "Confirmed"),
                        ],
                        max_length=20,
                    ),
                ),
                ("at", models.DateTimeField(auto_now_add=True)),
                ("note", models.TextField(blank=True)),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "hypothesis",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="status_changes",
                        to="timeline.hypothesis",
                    ),
                ),
            ],
            options={
                "ordering": ["at", "id"],
                "indexes": [
                    models.Index(fields=["hypothesis", "at"], name="hypstatus_hypothesis_at")
                ],
            },
        ),
    ]
