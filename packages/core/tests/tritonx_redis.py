"""A real Redis server on 127.0.0.1 for the remote-cache tests: the one ``.ci/run`` started, or our own.

``TRITONX_TEST_REDIS`` (``host:port``, set by ``.ci/run``) names a running server; otherwise a private
``redis-server`` is started on a free loopback port for the test session. Tests skip, saying why, when
neither works (no server binary, or no ``redis`` Python package, which Triton's backend imports).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class RedisServer:
    host: str
    port: int

    def environment(self, namespace: str | None = None) -> dict[str, str]:
        """What points Triton's caches at this server, with keys under a namespace of their own."""
        from tritonx.compat import remote_cache_environment

        ns = namespace or uuid.uuid4().hex[:12]
        return remote_cache_environment(self.host, self.port, key_format=f"tritonx-test-{ns}:{{key}}:{{filename}}")


def _ping(host: str, port: int) -> bool:
    try:
        import redis
    except ImportError:
        return False
    try:
        return bool(redis.Redis(host=host, port=port, socket_connect_timeout=1).ping())
    except Exception:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_server() -> Iterator[RedisServer]:
    """Generator for a session fixture: yields a reachable server or skips with the reason."""
    try:
        import redis  # noqa: F401  (Triton's RedisRemoteCacheBackend imports it)
    except ImportError:
        pytest.skip("the 'redis' Python package is not installed (pip install redis): Triton's Redis backend needs it")
    given = os.environ.get("TRITONX_TEST_REDIS")
    if given:
        host, _, port = given.rpartition(":")
        if _ping(host or "127.0.0.1", int(port)):
            yield RedisServer(host or "127.0.0.1", int(port))
            return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no Redis server: TRITONX_TEST_REDIS is unset or unreachable and redis-server is not installed "
                    "(apt-get install redis-server; .ci/run does it)")
    port = _free_port()
    proc = subprocess.Popen([binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not _ping("127.0.0.1", port):
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode(errors="replace")[-300:] if proc.poll() is not None else ""
                pytest.skip(f"redis-server could not start on 127.0.0.1:{port}: {err or 'no answer in 10 s'}")
            time.sleep(0.05)
        yield RedisServer("127.0.0.1", port)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
