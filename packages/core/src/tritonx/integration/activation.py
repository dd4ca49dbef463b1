"""Which pipelines are active: globally (activate/deactivate) and per kernel (the decorator).

Global state is one immutable :class:`Snapshot` swapped under a lock, so the no-argument hook call
that Triton makes on every launch is a single attribute read. Per-kernel pipelines live on the JIT
function itself and enter its own cache key (see :func:`tritonx.compat.rekey_kernel`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .. import compat
from ..engine.keys import combined_key, pipeline_key
from ..errors import PipelineError
from ..model.pipeline import Pipeline


@dataclass(frozen=True)
class Snapshot:
    """The globally active pipelines and the key pair the hook hands to Triton."""

    pipelines: tuple[Pipeline, ...]
    key: str
    #: what the no-argument hook call returns: (suffix for the on-disk key, hash for the in-memory key)
    pair: tuple[str, str]


EMPTY = Snapshot((), "", ("", ""))
_lock = threading.RLock()
_counts: dict[int, int] = {}
_order: list[Pipeline] = []
_extra_keys: dict[str, Callable[[], str]] = {}
state: Snapshot = EMPTY
#: how many kernels ever had pipelines bound (0: the hook needs no stack walk to find the kernel)
bound_kernels = 0


def _check(p: Any) -> Pipeline:
    if not isinstance(p, Pipeline):
        raise PipelineError(f"activate() takes tritonx.Pipeline objects, got {type(p).__name__}: {p!r}")
    return p


def _rebuild() -> None:
    global state
    if not _order and not _extra_keys:
        state = EMPTY
        return
    parts = [pipeline_key(p) for p in _order] + [f"{n}={fn()}" for n, fn in sorted(_extra_keys.items())]
    key = combined_key(parts)
    state = Snapshot(tuple(_order), key, (f"-tritonx-{key}", key))


def refresh() -> None:
    """Recompute the global key (call after a plugin's own ``cache_key()`` changed)."""
    with _lock:
        _rebuild()


def set_extra_key(name: str, fn: Callable[[], str] | None) -> None:
    """Register (or drop, with None) a plugin-supplied key function that joins the global key."""
    with _lock:
        if fn is None:
            _extra_keys.pop(name, None)
        else:
            _extra_keys[name] = fn
        _rebuild()


def push(pipelines: Iterable[Pipeline]) -> list[Pipeline]:
    from .hook import ensure_installed

    ps = [_check(p) for p in pipelines]
    ensure_installed()
    with _lock:
        for p in ps:
            p.freeze("active")
            n = _counts.get(id(p), 0)
            if n == 0:
                _order.append(p)
            _counts[id(p)] = n + 1
        _rebuild()
    return ps


def pop(pipelines: Iterable[Pipeline]) -> None:
    with _lock:
        for p in pipelines:
            _check(p)
            n = _counts.get(id(p), 0)
            if n == 0:
                raise PipelineError(f"pipeline {p.name!r} is not active")
            if n == 1:
                del _counts[id(p)]
                _order.remove(p)
            else:
                _counts[id(p)] = n - 1
        _rebuild()


def clear() -> None:
    """Deactivate every global pipeline (tests and the CLI use it)."""
    with _lock:
        _counts.clear()
        _order.clear()
        _rebuild()


class Activation:
    """Returned by :func:`activate`: already active; as a context manager it deactivates on exit."""

    def __init__(self, pipelines: list[Pipeline]) -> None:
        self.pipelines = pipelines
        self._done = False

    def deactivate(self) -> None:
        if not self._done:
            self._done = True
            pop(self.pipelines)

    def __enter__(self) -> Activation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.deactivate()


def activate(*pipelines: Pipeline) -> Activation:
    """Switch pipelines on for every kernel compiled from now on (until deactivated).

    Usable as ``with tritonx.activate(p): ...``. Pipelines apply in activation order.
    """
    if not pipelines:
        raise PipelineError("activate() needs at least one Pipeline")
    return Activation(push(pipelines))


def deactivate(*pipelines: Pipeline) -> None:
    """Switch pipelines off (each call undoes one :func:`activate`)."""
    pop(pipelines)


def active() -> tuple[Pipeline, ...]:
    return state.pipelines


def active_key() -> str:
    """Digest of the globally active pipelines ('' when none): O(1), for callers that cache launches."""
    return state.key


# --------------------------------------------------------------------------------------------------
# Per-kernel pipelines
# --------------------------------------------------------------------------------------------------

KERNEL_ATTR = "__tritonx_pipelines__"


def _jit_function(obj: Any) -> Any:
    """Unwrap autotuners/heuristics (``.fn``) down to the JIT function."""
    seen = 0
    while not hasattr(obj, "cache_key") or not hasattr(obj, "device_caches"):
        inner = getattr(obj, "fn", None)
        if inner is None or seen > 8:
            raise PipelineError(
                f"tritonx.pipeline(...) decorates @triton.jit kernels; got {type(obj).__name__}. "
                f"Put it above @triton.jit (or above @triton.autotune)"
            )
        obj, seen = inner, seen + 1
    return obj


def bind(kernel: Any, pipelines: Iterable[Pipeline]) -> Any:
    """Attach pipelines to one kernel: only that kernel compiles with them."""
    from .hook import ensure_installed

    global bound_kernels
    ps = [_check(p) for p in pipelines]
    fn = _jit_function(kernel)
    ensure_installed()
    bound_kernels += 1
    for p in ps:
        p.freeze(f"bound to kernel {getattr(fn, '__name__', fn)!r}")
    bound = tuple(getattr(fn, KERNEL_ATTR, ())) + tuple(ps)
    setattr(fn, KERNEL_ATTR, bound)
    compat.rekey_kernel(fn, combined_key(pipeline_key(p) for p in bound))
    return kernel


def pipeline(*pipelines: Pipeline) -> Callable[[Any], Any]:
    """Decorator: ``@tritonx.pipeline(p)`` above ``@triton.jit`` compiles that kernel with ``p``."""
    if not pipelines:
        raise PipelineError("tritonx.pipeline() needs at least one Pipeline")
    for p in pipelines:
        _check(p)

    def decorate(kernel: Any) -> Any:
        return bind(kernel, pipelines)

    return decorate


def kernel_pipelines(fn: Any) -> tuple[Pipeline, ...]:
    return getattr(fn, KERNEL_ATTR, ()) if fn is not None else ()
