"""Team admins (who manage a team on its page), and audit entries of a team (members, admins,
API tokens) beside those of an incident."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("timeline", "0011_run_claims"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="auditentry",
            name="team",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="audit",
                to="timeline.team",
            ),
        ),
        migrations.AddField(
            model_name="team",
            name="admins",
            field=models.ManyToManyField(
                blank=True, related_name="admin_of_teams", to=settings.AUTH_USER_MODEL
            ),
        ),
        migrations.AlterField(
            model_name="auditentry",
            name="incident",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="audit",
                to="timeline.incident",
            ),
        ),
        migrations.AddIndex(
            model_name="auditentry",
            index=models.Index(fields=["team", "at"], name="audit_team_at"),
        ),
        migrations.AddConstraint(
            model_name="auditentry",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("incident__isnull", False), ("team__isnull", False), _connector="OR"
                ),
                name="auditentry_has_incident_or_team",
            ),
        ),
    ]
