"""Pipelines bound to one kernel (``@tritonx.pipeline(p)``): stored on the JIT function itself.

A binding is one immutable :class:`~.snapshot.Binding` replaced whole, so a compile reads either the
old or the new one, never a mix. The compile-time key provider reads it once per compile and the
stages of that compile use what it read.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from .. import compat
from ..engine.keys import combined_key, pipeline_key
from ..errors import PipelineError
from ..model.pipeline import Pipeline
from .activation import check_pipeline
from .snapshot import Binding
from .unkeyed import UnkeyedWarnings

ATTR = "__tritonx_binding__"


def jit_function(obj: Any) -> Any:
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


class KernelBindings:
    """Binds pipelines to kernels; counts how many kernels this runtime bound."""

    def __init__(self, warnings: UnkeyedWarnings | None = None) -> None:
        self._lock = threading.Lock()
        self._warnings = warnings or UnkeyedWarnings()
        self.count = 0

    def bind(self, kernel: Any, pipelines: Iterable[Pipeline]) -> Any:
        """Attach pipelines to one kernel (after those it has); nothing changes if one cannot be keyed."""
        ps = [check_pipeline(p) for p in pipelines]
        fn = jit_function(kernel)
        with self._lock:
            old = getattr(fn, ATTR, None)
            bound = (old.pipelines if old is not None else ()) + tuple(ps)
            digest = combined_key(pipeline_key(p) for p in bound)
            for p in ps:
                p.freeze(f"bound to kernel {getattr(fn, '__name__', fn)!r}")
                self._warnings.check(p)
            setattr(fn, ATTR, Binding(bound, digest))
            compat.rekey_kernel(fn, digest)
            self.count += 1
        return kernel

    @staticmethod
    def of(fn: Any) -> Binding | None:
        return getattr(fn, ATTR, None) if fn is not None else None

    @staticmethod
    def pipelines_of(kernel: Any) -> tuple[Pipeline, ...]:
        binding = getattr(jit_function(kernel), ATTR, None)
        return binding.pipelines if binding is not None else ()
