"""The lane choices as evidence.vocabulary labels them (choices only: no schema change). The
vocabulary commit changed the labels without this migration, so makemigrations --check failed."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("timeline", "0004_sample_chunks"),
    ]

    operations = [
        migrations.AlterField(
            model_name="event",
            name="lane",
            field=models.CharField(
                choices=[
                    ("config", "Config changes"),
                    ("commits", "Commits"),
                    ("docs", "Doc revisions"),
                    ("harness", "Harness"),
                    ("symptoms", "Symptoms"),
                    ("requests", "Dropped requests"),
                    ("server", "Server"),
                    ("dumps", "Stack dumps"),
                    ("notes", "Notes"),
                ],
                max_length=30,
            ),
        ),
    ]
