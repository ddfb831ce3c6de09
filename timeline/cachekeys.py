"""Keys of the shared Redis cache: the settings' prefix, then the database they describe.

A key names things by their database ids (an incident's pk and version, a series' pk and
sample count). A database dropped and created again under the same name (a test run, a bench,
a restore) starts its ids from 1, and Redis outlives it: so the key holds the database's OID
as well as its name, and a new database never reads an old one's entries.
"""

from __future__ import annotations

from django.conf import settings
from django.db import DatabaseError, connection

_epochs: dict[str, str] = {}


def database_epoch() -> str:
    """``name.oid`` of the default database (read once per process and database)."""
    name = str(settings.DATABASES["default"]["NAME"])
    if name not in _epochs:
        try:
            with connection.cursor() as cur:
                cur.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
                row = cur.fetchone()
        except DatabaseError:
            return name  # asked again next time
        _epochs[name] = f"{name}.{row[0] if row else ''}"
    return _epochs[name]


def make_key(key: str, key_prefix: str, version: int) -> str:
    """Django's KEY_FUNCTION for settings.CACHES."""
    return f"{key_prefix}:{database_epoch()}:{version}:{key}"
