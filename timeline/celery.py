"""The one place Celery is wired: settings under the CELERY_ namespace, tasks autodiscovered,
and the queues.

Two queues per deployment, named from ``CELERY_QUEUE`` (``timeline``): ingest work (loads,
pulls) on the queue itself, analyses on ``<queue>.analysis``. A worker started with
``-Q timeline,timeline.analysis`` takes both; workers that take one of them scale that
kind of work on its own. The names are read when a task is sent, so a test session that sets
its own default queue routes both kinds into its own pair.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "timeline.settings")

app = Celery("timeline")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

ANALYSIS_SUFFIX = ".analysis"


def queues(base: str = "") -> list[str]:
    """The deployment's queues: ingest (the default queue) and analysis."""
    base = base or str(app.conf.task_default_queue)
    return [base, base + ANALYSIS_SUFFIX]


# Short housekeeping tasks (beat): on the analysis queue, so a backlog of loads never delays
# the reaper that finds loads a dead worker left running.
HOUSEKEEPING = frozenset({"ingest.reap_stale_runs", "ingest.uploads_sweep"})


def route_task(name: str, args: Any, kwargs: Any, options: Any, **_: Any) -> dict[str, str]:
    """Analyses (``timeline.*`` tasks) and housekeeping on the analysis queue, the rest on the
    ingest queue."""
    ingest, analysis = queues()
    short = name.startswith("timeline.") or name in HOUSEKEEPING
    return {"queue": analysis if short else ingest}
