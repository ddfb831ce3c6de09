"""Bytes in the shared Redis cache, for the hot paths (the built ``timeline.json`` bodies).

Django's cache API pickles every value and makes a new Redis client per call (~0.4 ms); a
figure served from the cache should cost about one Redis round trip. One client per process
(redis-py's pool reconnects after a fork), the keys under the same prefix and database as
Django's cache (settings.CACHES, timeline.cachekeys).
"""

from __future__ import annotations

import functools
import time
from typing import Any

import redis
from django.conf import settings
from django.core.cache import cache

from timeline.cachekeys import database_epoch


@functools.cache
def _client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_CLIENT_URL, socket_timeout=5)


def _key(key: str) -> str:
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "")
    return f"{prefix}:{database_epoch()}:bytes:{key}"


def get(key: str) -> bytes | None:
    """The bytes stored under ``key``, or None (also when Redis does not answer: a cache that
    is down costs a rebuild, never a failed page)."""
    try:
        value = _client().get(_key(key))
    except redis.RedisError:
        return None
    return value if isinstance(value, bytes) else None


def put(key: str, value: bytes, seconds: int) -> None:
    try:
        _client().set(_key(key), value, ex=seconds)
    except redis.RedisError:
        return


def drop(key: str) -> None:
    """Forget what is stored under ``key`` (nothing when Redis does not answer)."""
    try:
        _client().delete(_key(key))
    except redis.RedisError:
        return


def claim(key: str, seconds: int) -> bool:
    """True for the one caller that may build what goes under ``key`` (for ``seconds`` at
    most); the others wait for it (:func:`wait_for`) instead of building it again. True when
    Redis does not answer (everyone builds, nothing waits on a cache that is down)."""
    try:
        return bool(_client().set(_key(f"building:{key}"), b"1", nx=True, ex=seconds))
    except redis.RedisError:
        return True


def release(key: str) -> None:
    try:
        _client().delete(_key(f"building:{key}"))
    except redis.RedisError:
        return


def wait_for(key: str, seconds: float) -> bytes | None:
    """What another caller is building under ``key``, once it is there; None after ``seconds``
    or when the builder gave up (its claim is gone and nothing was stored)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.02)
        value = get(key)
        if value is not None:
            return value
        try:
            if not _client().exists(_key(f"building:{key}")):
                return get(key)
        except redis.RedisError:
            return None
    return None


def cache_get(key: str) -> Any:
    """Django's cache ``get``, None when Redis does not answer (a miss, never a failed page)."""
    try:
        return cache.get(key)
    except redis.RedisError:
        return None


def cache_get_many(keys: list[str]) -> dict[str, Any]:
    try:
        return dict(cache.get_many(keys))
    except redis.RedisError:
        return {}


def cache_set(key: str, value: Any, seconds: int) -> None:
    """Django's cache ``set``, dropped when Redis does not answer."""
    try:
        cache.set(key, value, seconds)
    except redis.RedisError:
        return
