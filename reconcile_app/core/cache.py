"""A Redis cache that degrades instead of failing: an unreachable Redis reads as a miss and writes are
dropped, so a cache outage never turns a page into a 500. Counters say when they cannot count."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)

T = TypeVar("T")

# How long after a failure the cache counts as down (callers skip optional work meanwhile).
DOWN_FOR_SECONDS = 30.0
_last_failure = 0.0


class CacheUnavailable(ValueError):
    """An atomic counter could not be read: callers that must count fall back to the database.

    A ValueError, because Django's own `incr` raises ValueError for a missing key: callers written
    for that (set the key instead) degrade the same way."""


def cache_available() -> bool:
    """False for a short while after a cache operation failed in this process."""
    return time.monotonic() - _last_failure > DOWN_FOR_SECONDS


def _note_failure(operation: str, exc: Exception) -> None:
    global _last_failure
    if cache_available():  # log once per outage window, not once per call
        logger.warning("cache unavailable (%s: %s); degrading", operation, exc.__class__.__name__)
    _last_failure = time.monotonic()


def _redis_errors() -> tuple[type[BaseException], ...]:
    import redis

    return (redis.exceptions.RedisError, OSError)


class ResilientRedisCache(RedisCache):
    def _guard(self, operation: str, call: Callable[[], T], default: T) -> T:
        try:
            return call()
        except _redis_errors() as exc:
            _note_failure(operation, exc)
            return default

    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        return self._guard("get", lambda: super(ResilientRedisCache, self).get(key, default, version), default)

    def get_many(self, keys: Any, version: Any = None) -> dict:
        return self._guard("get_many", lambda: super(ResilientRedisCache, self).get_many(keys, version), {})

    def has_key(self, key: Any, version: Any = None) -> bool:
        return self._guard("has_key", lambda: super(ResilientRedisCache, self).has_key(key, version), False)

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> None:
        self._guard("set", lambda: super(ResilientRedisCache, self).set(key, value, timeout, version), None)

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> bool:
        return self._guard("add", lambda: super(ResilientRedisCache, self).add(key, value, timeout, version), False)

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> bool:
        return self._guard("touch", lambda: super(ResilientRedisCache, self).touch(key, timeout, version), False)

    def delete(self, key: Any, version: Any = None) -> bool:
        return self._guard("delete", lambda: super(ResilientRedisCache, self).delete(key, version), False)

    def set_many(self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> list:
        return self._guard("set_many", lambda: super(ResilientRedisCache, self).set_many(data, timeout, version), list(data))

    def delete_many(self, keys: Any, version: Any = None) -> None:
        self._guard("delete_many", lambda: super(ResilientRedisCache, self).delete_many(keys, version), None)

    def clear(self) -> None:
        self._guard("clear", lambda: super(ResilientRedisCache, self).clear(), None)

    def get_or_set(self, key: Any, default: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> Any:
        value = self.get(key, version=version)
        if value is None:
            value = default() if callable(default) else default
            self.add(key, value, timeout=timeout, version=version)
        return value

    def incr(self, key: Any, delta: int = 1, version: Any = None) -> int:
        try:
            return super().incr(key, delta, version)
        except _redis_errors() as exc:
            _note_failure("incr", exc)
            raise CacheUnavailable("the cache cannot count right now") from None
