"""Series rows kept up by the writes of samples: created for a load, then their sample count,
time range and metadata (type, unit, help) updated in one statement each.

The reads of a window estimate their size from the count and range (timeline.selectors), so
these are written here, next to the samples, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from django.db import connection

from timeline.models import Artifact, Incident, Series

_Key = tuple[str, tuple[tuple[str, str], ...], str]


class SeriesSpec(NamedTuple):
    """A series a load brings: its identity (name, labels) and what is known of it so far."""

    name: str
    labels: Sequence[tuple[str, str]] | Mapping[str, str]
    type: str = ""
    unit: str = ""
    help: str = ""
    origin: str = ""  # the file, when the labels do not say where the series came from


def _key(name: str, labels: Any, origin: str = "") -> _Key:
    """Name, sorted label pairs (through a dict, as the row stores them: one value a name) and
    origin: a series' identity."""
    return name, tuple(sorted((str(k), str(v)) for k, v in dict(labels).items())), origin


def series_ids_for(
    incident: Incident, artifact: Artifact | None, specs: Sequence[SeriesSpec]
) -> list[int]:
    """The Series id of each spec, creating the missing rows in one INSERT."""
    wanted = [_key(s.name[:300], s.labels, s.origin[:500]) for s in specs]

    def existing() -> dict[_Key, int]:
        rows = Series.objects.filter(
            incident=incident, name__in={name for name, _, _ in wanted}
        ).values_list("id", "name", "labels", "origin")
        return {_key(name, labels or {}, origin): pk for pk, name, labels, origin in rows}

    found = existing()
    missing: dict[_Key, SeriesSpec] = {}
    for key, spec in zip(wanted, specs, strict=True):
        if key not in found:
            missing.setdefault(key, spec)
    if missing:
        Series.objects.bulk_create(
            [
                Series(
                    incident=incident,
                    artifact=artifact,
                    name=name,
                    labels=dict(labels),
                    origin=origin,
                    type=spec.type[:20],
                    unit=spec.unit[:40],
                    help=spec.help,
                )
                for (name, labels, origin), spec in missing.items()
            ],
            ignore_conflicts=True,
        )
        found = existing()
    return [found[key] for key in wanted]


def series_stats_update(stats: Mapping[int, Sequence[int]]) -> None:
    """``stats``: series id -> [samples written, first ms, last ms]; one UPDATE for all."""
    if not stats:
        return
    ids = list(stats)
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE timeline_series AS s SET sample_count = s.sample_count + u.n, "
            "first_ts = LEAST(COALESCE(s.first_ts, u.lo), u.lo), "
            "last_ts = GREATEST(COALESCE(s.last_ts, u.hi), u.hi) "
            "FROM (SELECT unnest(%s::int8[]) AS id, unnest(%s::int8[]) AS n, "
            "to_timestamp(unnest(%s::int8[]) / 1000.0) AS lo, "
            "to_timestamp(unnest(%s::int8[]) / 1000.0) AS hi) AS u WHERE s.id = u.id",
            [
                ids,
                [stats[sid][0] for sid in ids],
                [stats[sid][1] for sid in ids],
                [stats[sid][2] for sid in ids],
            ],
        )


def series_meta_fill(metas: Mapping[int, tuple[str, str, str]]) -> None:
    """Set (type, unit, help) on the series that have no type yet, in one statement: a
    streamed file knows them only once it is read to the end."""
    ids = [sid for sid, meta in metas.items() if any(meta)]
    if not ids:
        return
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE timeline_series AS s SET type = u.type, unit = u.unit, help = u.help "
            "FROM (SELECT unnest(%s::int8[]) AS id, unnest(%s::text[]) AS type, "
            "unnest(%s::text[]) AS unit, unnest(%s::text[]) AS help) AS u "
            "WHERE s.id = u.id AND s.type = ''",
            [
                ids,
                [metas[sid][0][:20] for sid in ids],
                [metas[sid][1][:40] for sid in ids],
                [metas[sid][2] for sid in ids],
            ],
        )
