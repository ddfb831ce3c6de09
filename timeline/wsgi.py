"""WSGI entry point (gunicorn timeline.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "timeline.settings")
application = get_wsgi_application()
