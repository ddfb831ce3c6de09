import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("timeline", "0003_sample_rollup"),
    ]

    operations = [
        migrations.CreateModel(
            name="SampleChunk",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "series_id",
                        "bucket",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("bucket", models.DateTimeField()),
                ("n", models.IntegerField()),
                ("ts", models.BinaryField()),
                ("vals", models.BinaryField()),
                (
                    "series",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        to="timeline.series",
                    ),
                ),
            ],
        ),
        # The arrays are incompressible enough that pglz costs more than it saves (5x slower
        # COPY measured); keep them out of line, uncompressed.
        migrations.RunSQL(
            "ALTER TABLE timeline_samplechunk ALTER COLUMN ts SET STORAGE EXTERNAL, "
            "ALTER COLUMN vals SET STORAGE EXTERNAL",
            migrations.RunSQL.noop,
        ),
        # Samples stored a row each move into their hours, nothing lost.
        migrations.RunSQL(
            "INSERT INTO timeline_samplechunk (series_id, bucket, n, ts, vals) "
            "SELECT series_id, date_trunc('hour', ts AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', "
            "count(*), string_agg(timestamptz_send(ts), ''::bytea ORDER BY ts), "
            "string_agg(float8send(value), ''::bytea ORDER BY ts) "
            "FROM timeline_sample GROUP BY 1, 2",
            migrations.RunSQL.noop,
        ),
        migrations.DeleteModel(
            name="Sample",
        ),
    ]
