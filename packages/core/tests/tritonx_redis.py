"""A real Redis server on 127.0.0.1 for the remote-cache tests: the one ``.ci/run`` started, or our own.

``TRITONX_TEST_REDIS`` (``host:port``, set by ``.ci/run``) names a running server; otherwise a private
``redis-server`` is started on a free loopback port for the test session. Tests skip, saying why, when
neither works (no server binary, or no ``redis`` Python package, which Triton's backend imports).

Tests that stop, freeze or restart the server never touch that shared one: :class:`RedisProcess` is a
``redis-server`` of their own (optionally with a password or TLS), restartable on its port.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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


def redis_binary() -> str:
    """The ``redis-server`` binary and the ``redis`` package, or skip saying which is missing."""
    try:
        import redis  # noqa: F401
    except ImportError:
        pytest.skip("the 'redis' Python package is not installed (pip install redis)")
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does it)")
    return binary


class RedisProcess:
    """A private ``redis-server`` on 127.0.0.1 that a test may kill, freeze (SIGSTOP) and restart.

    ``password`` starts it with ``--requirepass``; ``tls`` (a :func:`make_tls_files` dict) serves TLS only.
    """

    def __init__(self, port: int | None = None, *, password: str | None = None, tls: dict[str, Path] | None = None
                 ) -> None:
        self.binary = redis_binary()
        self.host = "127.0.0.1"
        self.port = port or _free_port()
        self.password = password
        self.tls = tls
        self.proc: subprocess.Popen | None = None

    def environment(self, namespace: str | None = None) -> dict[str, str]:
        return RedisServer(self.host, self.port).environment(namespace)

    def client(self):
        import redis

        options = {"password": self.password, "socket_timeout": 5}
        if self.tls:
            options.update(ssl=True, ssl_ca_certs=str(self.tls["ca"]))
        return redis.Redis(host=self.host, port=self.port, **options)

    def start(self, timeout: float = 10) -> RedisProcess:
        command = [self.binary, "--bind", self.host, "--save", "", "--appendonly", "no"]
        if self.password:
            command += ["--requirepass", self.password]
        if self.tls:
            command += ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(self.tls["cert"]),
                        "--tls-key-file", str(self.tls["key"]), "--tls-ca-cert-file", str(self.tls["ca"]),
                        "--tls-auth-clients", "no"]
        else:
            command += ["--port", str(self.port)]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.client().ping():
                    return self
            except Exception:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace")[-300:] if self.proc.poll() is not None else ""
                self.stop()
                pytest.skip(f"redis-server could not start on {self.host}:{self.port}: {err or 'no answer'}")
            time.sleep(0.05)

    def freeze(self) -> None:
        """SIGSTOP: connections are still accepted by the kernel, but nothing answers."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL (no shutdown), and wait until it is gone: its port refuses connections."""
        if self.proc is not None and self.proc.poll() is None:
            self.thaw()
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.thaw()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def __enter__(self) -> RedisProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def make_tls_files(directory: Path) -> dict[str, Path]:
    """A throw-away CA and a server certificate for 127.0.0.1/localhost signed by it (openssl), or skip."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed: no certificates for the TLS test")
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    cert, key = directory / "server.pem", directory / "server.key"
    csr, ext = directory / "server.csr", directory / "san"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    steps = [
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
         "-subj", "/CN=tritonx-test-ca"],
        [openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"],
        [openssl, "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
         "-days", "2", "-extfile", ext],
    ]
    for step in steps:
        done = subprocess.run([str(x) for x in step], capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            pytest.skip(f"openssl could not make test certificates: {done.stderr[-300:]}")
    return {"ca": ca, "cert": cert, "key": key}
