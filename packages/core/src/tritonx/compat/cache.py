"""How each supported Triton builds its cache keys, and the two places tritonx joins them.

Read from the sources of 3.6.0, 3.7.1, 3.8.0 and 3.9.0 (the same in all four unless said):

* ``triton.compiler.compiler.compile`` computes ``key = get_cache_key(src, backend, options, env_vars)``
  (``get_cache_key`` looked up as a global of that module), on 3.7+ appends the first element of the
  stages hook's no-argument call, looks the key up, and only on a miss calls ``backend.add_stages``,
  which ends with the hook's stage call. Key and stages are computed on the calling thread, in that
  order, inside that one ``compile`` frame.
* ``JITFunction.run`` (every launch) builds the in-memory key: on 3.7+ it appends
  ``'("custom_pipeline", <hash>)'`` (the hook's no-argument call) to ``specialization``; on 3.6 it calls
  ``compute_cache_key`` (a global of ``triton.runtime.jit``). On a miss it compiles synchronously, on
  the same thread, through ``_do_compile`` -> ``compile`` (or on an executor thread in
  ``AsyncCompileMode``).
* The remote cache: ``TRITON_CACHE_MANAGER=triton.runtime.cache:RemoteCacheManager`` with a
  ``TRITON_REMOTE_CACHE_BACKEND`` class stores each file under the same hash as the local cache (and
  materializes it in the local dir), so whatever keys the local cache keys the remote one too. Triton's
  own ``RedisRemoteCacheBackend`` cannot be constructed in any of 3.6.0-3.9.0: it reads
  ``knobs.cache.redis``, but the settings (``TRITON_REDIS_HOST``/``_PORT``/``_KEY_FORMAT``) live in
  ``knobs.redis``. :class:`RedisBackend` (:mod:`.redis_backend`) reads them from where they are, and
  adds what makes a remote cache safe to depend on: timeouts, a circuit breaker, local compiles on any
  error, and entries verified before use.

So tritonx wraps ``get_cache_key`` of ``triton.compiler.compiler`` on every version: the wrapper runs
once per compile, at compile time only, and decides which pipelines that compile uses (the launch hot
path never runs it). On 3.6 it also wraps ``compute_cache_key`` for the in-memory key, which 3.7+ take
from the hook's no-argument call.

A third join, for :func:`private_cache` only: ``compile`` asks ``get_cache_manager(hash)`` (a global of
``triton.compiler.compiler`` on every version) for its cache, on the calling thread. The wrapper hands
a compile on a thread inside :func:`private_cache` a scratch cache of its own, and every other compile
the stock manager: the one way to make one compile really run its stages without touching a
process-wide knob (``knobs.compilation.always_compile`` is one flag for every thread). The wrappers
are made here and installed as seams (:mod:`tritonx.seams.core`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from triton.runtime.cache import CacheManager

from .installed import HOOK_HAS_KEY_CALL
from .redis_backend import RedisBackend as RedisBackend

#: The providers the wrappers call; swapped (never re-wrapped) when another runtime takes over.
_providers: dict[str, Callable[..., str]] = {}


def set_provider(which: str, provider: Callable[..., str]) -> None:
    """Point the ``"disk"`` (compile-key) or ``"memory"`` (3.6's launch-key) wrapper at ``provider``."""
    _providers[which] = provider


def compile_key_wrapper(original: Callable[..., str]) -> Callable[..., str]:
    """``get_cache_key`` of ``triton.compiler.compiler`` with ``provider(src)`` appended (seam
    ``tritonx.compile-key``, installed by :mod:`tritonx.seams.core`)."""

    def get_cache_key(src: Any, *args: Any, **kwargs: Any) -> str:
        return original(src, *args, **kwargs) + _providers["disk"](src)

    return get_cache_key


def memory_key_wrapper(original: Callable[..., str]) -> Callable[..., str]:
    """Triton 3.6's ``compute_cache_key`` of ``triton.runtime.jit`` with ``provider()`` appended (seam
    ``tritonx.memory-key``; 3.7+ ask the stages hook instead)."""

    def compute_cache_key(*args: Any, **kwargs: Any) -> str:
        return original(*args, **kwargs) + _providers["memory"]()

    return compute_cache_key


@functools.cache
def _compile_code() -> Any:
    import triton.compiler.compiler as cc

    return cc.compile.__code__


@functools.cache
def _run_code() -> Any:
    from triton.runtime.jit import JITFunction

    return JITFunction.run.__code__


def compile_frame(max_depth: int = 12) -> FrameType | None:
    """The frame of ``triton.compile`` this call runs under (None outside a compile).

    The stages hook and ``get_cache_key`` receive no handle on the compile; every supported version
    calls both from inside ``triton.compiler.compiler.compile``. Walking a dozen frames costs
    microseconds and only ever happens at compile time.
    """
    frame = sys._getframe(1)
    code = _compile_code()
    for _ in range(max_depth):
        if frame is None:
            return None
        if frame.f_code is code:
            return frame
        frame = frame.f_back
    return None


def frame_source(frame: FrameType | None) -> Any | None:
    """The ``ASTSource``/``IRSource`` a ``compile`` frame is compiling."""
    return None if frame is None else frame.f_locals.get("src")


def launch_key(compile_frame: FrameType | None, max_depth: int = 6) -> str | None:
    """The in-memory key text of the launch this compile serves (None: not called from a launch).

    Found only for a synchronous compile under ``JITFunction.run`` on the same thread: 3.7+ keep the
    hook's hash in ``specialization`` as ``'("custom_pipeline", <hash>)'``; 3.6 in the key returned by
    the (wrapped) ``compute_cache_key``.
    """
    frame = compile_frame.f_back if compile_frame is not None else None
    code = _run_code()
    for _ in range(max_depth):
        if frame is None:
            return None
        if frame.f_code is code:
            local = frame.f_locals
            if not HOOK_HAS_KEY_CALL:
                key = local.get("key")
                return key if isinstance(key, str) else None
            for item in reversed(local.get("specialization") or ()):
                if isinstance(item, str) and item.startswith('("custom_pipeline",'):
                    return item
            return None
        frame = frame.f_back
    return None


#: This thread's scratch cache roots (innermost last), for :func:`private_cache`.
_private = threading.local()


@contextlib.contextmanager
def private_cache() -> Iterator[str]:
    """Compiles on this thread, inside the block, use a fresh scratch cache (removed on exit), once the seam
    ``tritonx.private-cache`` is in place (:func:`tritonx.seams.core.install_private_cache`).

    Such a compile never hits (its stages really run) and stores nothing in the process's caches (local
    dir or remote), while compiles on other threads keep theirs: what :func:`tritonx.capture` needs,
    without ``knobs.compilation.always_compile``, which is one flag for every thread and which
    overlapping ``scope()`` blocks on two threads restore in the wrong order (left set for good).
    """
    root = tempfile.mkdtemp(prefix="tritonx-private-cache-")
    stack = _private.__dict__.setdefault("roots", [])
    stack.append(root)
    try:
        yield root
    finally:
        stack.pop()
        shutil.rmtree(root, ignore_errors=True)


def private_manager_wrapper(original: Callable[[str], CacheManager]) -> Callable[[str], CacheManager]:
    """``get_cache_manager`` of ``triton.compiler.compiler`` that gives a compile inside :func:`private_cache`
    its scratch cache and every other compile the stock manager (seam ``tritonx.private-cache``)."""

    def get_cache_manager(key: str) -> CacheManager:
        roots = getattr(_private, "roots", None)
        return ScratchCacheManager(roots[-1], key) if roots else original(key)

    return get_cache_manager


class ScratchCacheManager(CacheManager):
    """A cache that never hits and keeps what a compile puts under ``root/key`` (the compile reads it back)."""

    def __init__(self, root: str, key: str) -> None:
        self.cache_dir = os.path.join(root, key)
        os.makedirs(self.cache_dir, exist_ok=True)

    def get_file(self, filename: str) -> str | None:
        path = os.path.join(self.cache_dir, filename)
        return path if os.path.isfile(path) else None

    def put(self, data: Any, filename: str, binary: bool = True) -> str:
        path = os.path.join(self.cache_dir, filename)
        if isinstance(data, bytes):
            with open(path, "wb") as f:
                f.write(data)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(str(data))
        return path

    def get_group(self, filename: str) -> dict[str, str] | None:
        return None

    def put_group(self, filename: str, group: dict[str, str]) -> str:
        import json

        return self.put(json.dumps({"child_paths": group}), f"__grp__{filename}", binary=False)


def remote_cache_environment(host: str, port: int, key_format: str | None = None) -> dict[str, str]:
    """Environment that points Triton's caches at a Redis server (same variables on 3.6 to 3.9)."""
    env = {
        "TRITON_CACHE_MANAGER": "triton.runtime.cache:RemoteCacheManager",
        "TRITON_REMOTE_CACHE_BACKEND": f"{__name__}:RedisBackend",
        "TRITON_REDIS_HOST": host,
        "TRITON_REDIS_PORT": str(port),
    }
    if key_format is not None:
        env["TRITON_REDIS_KEY_FORMAT"] = key_format
    return env
