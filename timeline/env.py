"""Typed readers for settings from environment variables; malformed values fail loudly."""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import unquote, urlsplit


class ConfigError(RuntimeError):
    """A setting in the environment is present but malformed."""


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={raw!r}: expected one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r}: expected an integer") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def redis_client_url(url: str) -> str:
    """``url`` as redis-py (the cache) takes it. Celery's broker (kombu) names a Unix socket
    ``redis+socket://PATH`` (the embedded Redis's URL) or ``socket://PATH``; redis-py refuses
    both and wants ``unix://PATH``."""
    for scheme in ("redis+socket://", "socket://"):
        if url.startswith(scheme):
            return "unix://" + url.removeprefix(scheme)
    return url


def redis_broker_url(url: str) -> str:
    """``url`` as Celery's broker (kombu) takes it: kombu knows no ``unix://`` scheme and names
    a Unix socket ``redis+socket://PATH``."""
    if url.startswith("unix://"):
        return "redis+socket://" + url.removeprefix("unix://")
    return url


def database_from_url(url: str) -> dict[str, object]:
    """Django DATABASES entry from a postgres:// URL (host may be a socket dir in ?host=)."""
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ConfigError(f"DATABASE_URL={url!r}: expected a postgres:// or postgresql:// URL")
    query = dict(pair.split("=", 1) for pair in parts.query.split("&") if "=" in pair)
    name = unquote(parts.path.lstrip("/")) or "postgres"
    host = unquote(parts.hostname or "") or unquote(query.get("host", ""))
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"DATABASE_URL={url!r}: the port is not a number") from None
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or "postgres"),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(port or ""),
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
        # psycopg prepares a statement run this many times on a connection. Django's own
        # cursors bind on the client and never prepare; the hot reads that go through psycopg
        # cursors (the chunks of a window, the figure's session + incident query) then skip
        # parsing and planning: ~0.3 ms less each. (Behind PgBouncer in transaction mode, older
        # than 1.21, prepared statements fail: use session mode there.)
        "OPTIONS": {"prepare_threshold": 5},
    }


def is_local_database(url: str) -> bool:
    """True when DATABASE_URL is unset (the embedded server) or names this machine: a loopback
    address, localhost, or a Unix socket (no host, or a host that is a directory)."""
    if not url:
        return True
    host = str(database_from_url(url)["HOST"])
    if not host or host.startswith("/") or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
