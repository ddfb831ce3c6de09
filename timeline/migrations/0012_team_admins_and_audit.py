"""Team admins (who manage a team on its page), single-use invite links, and audit entries of a
team (members, admins, API tokens, invites) beside those of an incident."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("timeline", "0011_run_claims"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="TeamInvite",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("digest", models.CharField(max_length=64, unique=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("expires_at", models.DateTimeField()),
                ("used_at", models.DateTimeField(blank=True, null=True)),
            ],
        ),
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
        migrations.AddField(
            model_name="teaminvite",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="teaminvite",
            name="team",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="invites",
                to="timeline.team",
            ),
        ),
        migrations.AddField(
            model_name="teaminvite",
            name="used_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]
