"""Row counts shared by the reliability tests: 'zero rows written' is a before/after equality."""

from __future__ import annotations

from typing import Any

from timeline.choices import RunStatus
from timeline.models import Artifact, ConfigChange, Event, Sample, Series


def row_counts(incident: Any = None) -> dict[str, int]:
    """Rows of every table ingest writes (for one incident, or all of them)."""
    scope = {} if incident is None else {"incident": incident}
    samples = Sample.objects.all()
    if incident is not None:
        samples = samples.filter(series__incident=incident)
    return {
        "events": Event.objects.filter(**scope).count(),
        "config_changes": ConfigChange.objects.filter(**scope).count(),
        "series": Series.objects.filter(**scope).count(),
        "samples": samples.count(),
        "artifacts_done": Artifact.objects.filter(**scope, status=RunStatus.DONE).count(),
    }
