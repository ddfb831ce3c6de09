"""WSGI entry point (gunicorn timeline.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "timeline.settings")
application = get_wsgi_application()

# Import every view now, not on a worker's first request (0.8 s of imports there: under
# gunicorn --preload once in the master, shared by the workers it forks). Nothing here opens a
# database or Redis connection, so none is shared across the fork.
get_resolver().url_patterns  # noqa: B018

# Plotly's template as plain data (charts._template): built on a worker's first figure
# otherwise (~0.1 s, plotly's graph objects), in the request of whoever comes first.
from timeline import charts  # noqa: E402

charts.warm()
