"""Each analysis keeps the correlation weights it scored with and their version. Runs stored
before have no recorded weights: their version stays null rather than a guess."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("timeline", "0005_event_lane_choices"),
    ]

    operations = [
        migrations.AddField(
            model_name="analysis",
            name="weights_version",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="analysis",
            name="weights",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
