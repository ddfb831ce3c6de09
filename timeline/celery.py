"""The one place Celery is wired: settings under the CELERY_ namespace, tasks autodiscovered."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "timeline.settings")

app = Celery("timeline")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
