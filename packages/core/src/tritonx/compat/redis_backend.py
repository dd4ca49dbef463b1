"""Triton's remote cache on Redis, as an accelerator only: it may make a compile faster, never fail or hang it.

Triton's ``RemoteCacheManager`` builds one backend per compile (``TRITON_REMOTE_CACHE_BACKEND``) and
calls ``get``/``put`` on it with no guard: an exception fails the compile, a server that never answers
blocks it. :class:`RedisBackend` (also reachable as ``tritonx.compat.cache:RedisBackend``) differs from
Triton's ``RedisRemoteCacheBackend`` in that:

* every call has a connect and a read timeout (``TRITONX_REDIS_CONNECT_TIMEOUT``/``_TIMEOUT``) and is
  not retried (redis-py retries 10 times with back-off by default);
* any error (refused, timed out, bad settings, no ``redis`` package) is a no-op for ``put``, and ``get``
  answers from the local cache dir instead (what this process materialized there): the compile goes on
  locally, with local cache hits. The first error warns (:class:`tritonx.RemoteCacheWarning`);
* after ``TRITONX_REDIS_BREAKER_FAILURES`` failures in a row the process stops calling the server for
  ``TRITONX_REDIS_BREAKER_COOLDOWN`` seconds (:mod:`.breaker`), so a dead server costs a few timeouts in
  all, not one per call;
* entries are sealed with their key, file name and payload hash (:mod:`.remote_entry`); one that does
  not verify is ignored, counted and warned about once;
* AUTH (``TRITONX_REDIS_USERNAME``/``_PASSWORD``) and TLS (``TRITONX_REDIS_TLS`` and its files) are
  passed to redis-py. Host, port and key format are Triton's own ``knobs.redis`` settings.

One client (connection pool) and one breaker are shared per server configuration by every thread.
:func:`remote_cache_stats` counts what happened.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from triton import knobs
from triton.runtime.cache import RemoteCacheBackend

from ..errors import RemoteCacheWarning
from ..settings import SettingsError, settings
from . import remote_entry
from .breaker import CircuitBreaker

#: A file name the backend refuses to serve (it would be joined to the local cache dir).
BAD_NAME = "bad-name"

_lock = threading.Lock()
_stats: Counter[str] = Counter()
_warned: set[str] = set()
_servers: dict[RedisConfig, _Server] = {}


@dataclass(frozen=True)
class RedisConfig:
    """Everything that picks and reaches one Redis server (read afresh for each compile)."""

    host: str
    port: int
    key_format: str
    connect_timeout: float
    timeout: float
    failures: int
    cooldown: float
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: bool = False
    tls_ca_certs: str | None = None
    tls_certfile: str | None = None
    tls_keyfile: str | None = None
    secret: str | None = field(default=None, repr=False)

    @classmethod
    def current(cls) -> RedisConfig:
        """From Triton's ``knobs.redis`` and tritonx's settings; a bad value raises naming its variable."""
        triton_redis = getattr(knobs.cache, "redis", None) or knobs.redis
        fields = type(settings).fields()
        for name in ("redis_connect_timeout", "redis_timeout", "redis_breaker_cooldown"):
            value = getattr(settings, name)
            if not (math.isfinite(value) and value > 0):
                raise SettingsError(f"{fields[name].var}={value!r}: must be a number of seconds above 0")
        if settings.redis_breaker_failures < 1:
            raise SettingsError(f"{fields['redis_breaker_failures'].var}={settings.redis_breaker_failures}: "
                                f"must be at least 1")
        key_format = triton_redis.key_format
        try:
            key_format.format(key="k", filename="f")
        except (KeyError, IndexError, ValueError) as exc:
            raise SettingsError(f"TRITON_REDIS_KEY_FORMAT={key_format!r} is not a format of {{key}} and "
                                f"{{filename}}: {exc}") from None
        return cls(host=triton_redis.host, port=int(triton_redis.port), key_format=key_format,
                   connect_timeout=settings.redis_connect_timeout, timeout=settings.redis_timeout,
                   failures=settings.redis_breaker_failures, cooldown=settings.redis_breaker_cooldown,
                   username=settings.redis_username, password=settings.redis_password, tls=settings.redis_tls,
                   tls_ca_certs=settings.redis_tls_ca_certs, tls_certfile=settings.redis_tls_certfile,
                   tls_keyfile=settings.redis_tls_keyfile, secret=settings.redis_secret)

    @property
    def where(self) -> str:
        return f"{'rediss' if self.tls else 'redis'}://{self.host}:{self.port}"

    def client_options(self) -> dict[str, Any]:
        """The redis-py ``Redis(...)`` arguments, less ``retry`` (built where redis is imported)."""
        options: dict[str, Any] = {"host": self.host, "port": self.port, "socket_connect_timeout": self.connect_timeout,
                                   "socket_timeout": self.timeout, "retry_on_timeout": False}
        if self.username is not None:
            options["username"] = self.username
        if self.password is not None:
            options["password"] = self.password
        if self.tls:
            options["ssl"] = True
            for option, value in (("ssl_ca_certs", self.tls_ca_certs), ("ssl_certfile", self.tls_certfile),
                                  ("ssl_keyfile", self.tls_keyfile)):
                if value is not None:
                    options[option] = value
        return options


class _Server:
    """One server's client and breaker, shared by every backend (every compile) that uses it."""

    def __init__(self, config: RedisConfig) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.config = config
        self.client = redis.Redis(retry=Retry(NoBackoff(), 0), **config.client_options())
        self.breaker = CircuitBreaker(config.failures, config.cooldown)

    def call(self, what: str, fn: Callable[[Any], Any]) -> tuple[bool, Any]:
        """``(True, fn(client))``, or ``(False, None)`` when the breaker is open or the call failed."""
        if not self.breaker.allow():
            _count("skipped")
            return False, None
        try:
            result = fn(self.client)
        except Exception as exc:  # any failure of the remote cache is a miss, never a failed compile
            _count("errors")
            if self.breaker.failure():
                _count("breaker_opened")
            c = self.config
            _warn_once("failure", f"tritonx remote cache: {what} {c.where} failed ({type(exc).__name__}: "
                                  f"{exc}); compiling locally. After {c.failures} failures in a row the server is "
                                  f"left alone for {c.cooldown:g} s (shown once; "
                                  f"tritonx.compat.remote_cache_stats() counts them)")
            return False, None
        except BaseException:  # KeyboardInterrupt and the like: not the server's fault, but end a trial call
            self.breaker.failure()
            raise
        self.breaker.success()
        return True, result


def _server(config: RedisConfig) -> _Server:
    with _lock:
        server = _servers.get(config)
        if server is None:
            server = _servers[config] = _Server(config)
        return server


def _count(name: str, n: int = 1) -> None:
    with _lock:
        _stats[name] += n


def _warn_once(kind: str, message: str) -> None:
    with _lock:
        if kind in _warned:
            return
        _warned.add(kind)
    warnings.warn(message, RemoteCacheWarning, stacklevel=3)


def _plain_name(filename: str) -> bool:
    return (isinstance(filename, str) and filename not in ("", ".", "..") and "/" not in filename
            and "\\" not in filename and "\0" not in filename)


def remote_cache_stats() -> dict[str, int]:
    """What the Redis remote cache did in this process: ``hits``/``misses`` (files), ``stored``, ``local_hits``
    (files read from the local dir instead: server unreachable), ``errors``
    (failed calls), ``skipped`` (calls not made: breaker open), ``breaker_opened``, ``rejected`` (entries
    ignored) and ``rejected_<reason>`` (foreign, mismatched, corrupt, unsigned, bad-name), ``disabled``
    (compiles whose backend could not be set up)."""
    with _lock:
        return dict(_stats)


def reset_remote_cache() -> None:
    """Forget clients, breakers, counters and warnings (tests; or after changing the settings' server)."""
    with _lock:
        _servers.clear()
        _stats.clear()
        _warned.clear()


class RedisBackend(RemoteCacheBackend):
    """``TRITON_REMOTE_CACHE_BACKEND=tritonx.compat.cache:RedisBackend``: see the module docstring."""

    def __init__(self, key: str) -> None:
        self._key = key
        self._server: _Server | None = None
        try:
            self._server = _server(RedisConfig.current())
        except Exception as exc:  # bad settings, no redis package: the compile goes on without the remote cache
            _count("disabled")
            _warn_once("setup", f"tritonx remote cache off: {type(exc).__name__}: {exc}; compiling locally")

    def _redis_key(self, filename: str) -> str:
        assert self._server is not None
        return self._server.config.key_format.format(key=self._key, filename=filename)

    def get(self, filenames: list[str]) -> dict[str, bytes]:
        server = self._server
        names = [f for f in filenames if _plain_name(f)]
        if len(names) != len(filenames):
            self._rejected(len(filenames) - len(names), BAD_NAME, "a file name that is not a plain name")
        if not names:
            return {}
        if server is None:
            return self._local(names)
        ok, values = server.call("a read from", lambda client: client.mget([self._redis_key(f) for f in names]))
        if not ok or not isinstance(values, list) or len(values) != len(names):
            return self._local(names)
        out: dict[str, bytes] = {}
        for filename, blob in zip(names, values, strict=True):
            if blob is None:
                continue
            payload, reason = remote_entry.open_entry(self._key, filename, blob, server.config.secret)
            if payload is None:
                self._rejected(1, reason or remote_entry.CORRUPT, f"{filename} under key {self._key}")
                continue
            out[filename] = payload
        _count("hits", len(out))
        _count("misses", len(names) - len(out))
        return out

    def _local(self, names: list[str]) -> dict[str, bytes]:
        """The server cannot answer: what Triton materialized in the local dir for this key (its own cache).

        Triton's ``RemoteCacheManager`` never reads its local dir itself, so without this a dead server
        would turn every compile into a full one."""
        out: dict[str, bytes] = {}
        directory = os.path.join(knobs.cache.dir, self._key)
        for name in names:
            path = os.path.join(directory, name)
            try:
                if os.path.isfile(path):
                    with open(path, "rb") as f:
                        out[name] = f.read()
            except OSError:
                continue
        _count("local_hits", len(out))
        return out

    def put(self, filename: str, data: bytes) -> None:
        server = self._server
        if server is None or not _plain_name(filename):
            return
        blob = remote_entry.seal(self._key, filename, data, server.config.secret)
        ok, _ = server.call("a write to", lambda client: client.set(self._redis_key(filename), blob))
        if ok:
            _count("stored")

    def _rejected(self, n: int, reason: str, what: str) -> None:
        _count("rejected", n)
        _count(f"rejected_{reason}", n)
        where = self._server.config.where if self._server is not None else "the remote cache"
        _warn_once("rejected", f"tritonx remote cache: ignored an entry from {where} ({reason}: {what}); "
                               f"compiling locally (shown once; tritonx.compat.remote_cache_stats() counts them)")
