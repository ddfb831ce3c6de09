"""Sample chunks re-packed from the plain layout (big-endian int8 microseconds and float8, 16
bytes a sample) to the compressed one (timeline.metrics.packing): in batches, each chunk once
(a converted chunk starts with the zstd magic, so a rerun skips it)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

BATCH = 2000


def _convert(schema_editor: Any, *, to_compressed: bool) -> None:
    from timeline.metrics import packing

    magic = packing.ZSTD_MAGIC
    done = "<>" if to_compressed else "="
    conn = schema_editor.connection
    last: tuple[int, Any] = (-1, None)
    while True:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT series_id, bucket, ts, vals FROM timeline_samplechunk "  # noqa: S608
                f"WHERE substring(ts FROM 1 FOR 4) {done} %s "
                "AND (series_id, bucket) > (%s, COALESCE(%s, '-infinity'::timestamptz)) "
                "ORDER BY series_id, bucket LIMIT %s",
                [magic, last[0], last[1], BATCH],
            )
            rows = cur.fetchall()
            if not rows:
                return
            ids, buckets, new_ts, new_vals = [], [], [], []
            for sid, bucket, ts, vals in rows:
                if to_compressed:
                    packed = packing.encode(*packing.decode_plain(bytes(ts), bytes(vals)))
                else:
                    packed = packing.encode_plain(*packing.decode_ms(bytes(ts), bytes(vals)))
                ids.append(sid)
                buckets.append(bucket)
                new_ts.append(packed[0])
                new_vals.append(packed[1])
            cur.execute(
                "UPDATE timeline_samplechunk AS c SET ts = u.ts, vals = u.vals "
                "FROM unnest(%s::int8[], %s::timestamptz[], %s::bytea[], %s::bytea[]) "
                "AS u (series_id, bucket, ts, vals) "
                "WHERE c.series_id = u.series_id AND c.bucket = u.bucket",
                [ids, buckets, new_ts, new_vals],
            )
            last = (rows[-1][0], rows[-1][1])


def compress(apps: Any, schema_editor: Any) -> None:
    _convert(schema_editor, to_compressed=True)


def decompress(apps: Any, schema_editor: Any) -> None:
    _convert(schema_editor, to_compressed=False)


class Migration(migrations.Migration):
    dependencies = [("timeline", "0008_metrics_pull")]
    operations = [migrations.RunPython(compress, decompress, elidable=False)]
