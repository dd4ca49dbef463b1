"""tritonx owns Triton's single ``add_stages_inspection_hook`` slot and fans out from it.

Triton calls the slot two ways. With no arguments (3.7+), once per compile for the on-disk key and
once per *launch* for the in-memory key: that path returns a precomputed pair, O(1). With
``(backend, stages, options, language, capability)`` at the end of ``add_stages``: that path runs the
hook that was there before tritonx (chained, never dropped), then rewrites the stages for the active
pipelines (global, then the kernel's own).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

from .. import compat
from . import activation
from .session import CaptureSink, CompileSession

_foreign: Callable[..., Any] | None = None
_installed = False
_local = threading.local()


class HookReplacedWarning(UserWarning):
    """Someone overwrote Triton's stages hook after tritonx installed itself."""


def _key_call() -> tuple[str, str]:
    pair = activation.state.pair
    foreign = _foreign
    if foreign is None or getattr(_local, "busy", False):
        return pair
    _local.busy = True
    try:
        fkey, fhash = foreign()
    finally:
        _local.busy = False
    return (f"{fkey}{pair[0]}", f"{fhash}{pair[1]}")


def tritonx_stages_hook(*args: Any) -> Any:
    """The function tritonx puts in ``triton.knobs.runtime.add_stages_inspection_hook``."""
    if not args:
        return _key_call()
    backend, stages, options, language, capability = args
    if getattr(_local, "busy", False):  # a chained hook called us back: do nothing twice
        return None
    foreign = _foreign
    if foreign is not None:
        _local.busy = True
        try:
            foreign(backend, stages, options, language, capability)
        finally:
            _local.busy = False
    sink: CaptureSink | None = getattr(_local, "sink", None)
    pipelines = activation.state.pipelines
    src = None
    if activation.bound_kernels or pipelines or sink is not None:  # else no stack walk: stock compiles stay cheap
        src = compat.current_compile_source()
        pipelines = pipelines + activation.kernel_pipelines(compat.source_kernel(src))
    if sink is None and not any(p.edits for p in pipelines):
        return None  # nothing to change: the stages stay Triton's own objects
    session = CompileSession(backend=backend, options=options, language=language, capability=capability,
                             pipelines=pipelines, kernel=getattr(src, "name", None), sink=sink)
    session.install(stages)
    return None


tritonx_stages_hook.__tritonx__ = True  # type: ignore[attr-defined]


def ensure_installed() -> None:
    """Put tritonx in the slot, chaining whatever was there; warn if someone replaced us since."""
    global _foreign, _installed
    current = compat.get_stages_hook()
    if current is tritonx_stages_hook:
        return
    if _installed:
        warnings.warn(
            f"Triton's stages hook was replaced by {_describe(current)} after tritonx installed itself; "
            f"tritonx re-installs itself and chains it (its passes and cache key are kept)",
            HookReplacedWarning,
            stacklevel=3,
        )
    if current is not None:
        _foreign = current
    compat.set_stages_hook(tritonx_stages_hook)
    compat.install_cache_keying(lambda: activation.state.pair[0])
    _installed = True


def chained_hook() -> Callable[..., Any] | None:
    """The hook tritonx found in the slot and chains (None if there was none)."""
    return _foreign


def status() -> dict[str, Any]:
    current = compat.get_stages_hook()
    return {
        "installed": current is tritonx_stages_hook,
        "slot": _describe(current),
        "chained": _describe(_foreign) if _foreign is not None else None,
    }


def _describe(fn: Any) -> str:
    if fn is None:
        return "nothing"
    mod = getattr(fn, "__module__", "?")
    return f"{mod}.{getattr(fn, '__qualname__', repr(fn))}"


class capturing:
    """Record every stage's pass list of compiles on this thread (for :func:`tritonx.capture`)."""

    def __enter__(self) -> CaptureSink:
        ensure_installed()
        self.prev = getattr(_local, "sink", None)
        _local.sink = CaptureSink()
        return _local.sink

    def __exit__(self, *exc: object) -> None:
        _local.sink = self.prev
