"""Row counts shared by the reliability tests: 'zero rows written' is a before/after equality."""

from __future__ import annotations

from typing import Any

import numpy as np

from timeline.choices import RunStatus
from timeline.metrics import reader
from timeline.models import Artifact, ConfigChange, Event, Series


def row_counts(incident: Any = None) -> dict[str, int]:
    """Rows of every table ingest writes (for one incident, or all of them)."""
    scope = {} if incident is None else {"incident": incident}
    series_ids = list(Series.objects.filter(**scope).values_list("pk", flat=True))
    return {
        "events": Event.objects.filter(**scope).count(),
        "config_changes": ConfigChange.objects.filter(**scope).count(),
        "series": Series.objects.filter(**scope).count(),
        "samples": reader.samples_count(None if incident is None else series_ids),
        "artifacts_done": Artifact.objects.filter(**scope, status=RunStatus.DONE).count(),
    }


def stored_samples(incident: Any) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Every stored sample of the incident: series id -> (times in ms, values), in time order."""
    return reader.samples_read(
        list(Series.objects.filter(incident=incident).values_list("pk", flat=True))
    )
