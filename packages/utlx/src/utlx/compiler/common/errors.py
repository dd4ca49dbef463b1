"""Errors of the utlx compile path.

Why a dedicated class: tests and users must tell a TLX misuse (wrong target, shape, dtype, wait count,
shared-memory budget) from a Triton bug. Raised while tracing, Triton's code generator wraps it in a
``CompilationError`` that shows the kernel's source line; raised while lowering, the message carries the
op's MLIR location (file:line) instead.
"""

from __future__ import annotations


class UtlxCompileError(ValueError):
    """A TLX op cannot be compiled as written; the message names the op (``utlx.<op>``) and why."""

    def __init__(self, op: str, message: str, *, target: str | None = None, hint: str | None = None) -> None:
        self.op = op
        self.target = target
        self.hint = hint
        text = f"utlx.{op}: {message}"
        if target:
            text += f" [target {target}]"
        if hint:
            text += f". {hint}"
        super().__init__(text)


def shared_memory_error(required: int, limit: int, target: str, where: str) -> Exception:
    """Too much shared memory, as Triton's own ``OutOfResources`` (what ``triton.autotune`` skips a config on).

    Why not a :class:`UtlxCompileError`: raised while tracing, any error becomes a ``CompilationError``, which
    stops autotuning; raised from the lowering as ``OutOfResources`` it behaves like the error Triton raises
    when such a kernel is loaded, only earlier (also when compiling on a CPU for a GPU target) and naming
    the allocation.
    """
    from triton.runtime.errors import OutOfResources

    class UtlxSharedMemoryError(OutOfResources):
        def __str__(self) -> str:
            return (f"utlx.local_alloc: the buffers need {required} bytes of shared memory, more than the {limit} "
                    f"bytes a CTA can use [target {target}]; the largest is {where}. Use fewer buffers (num) or "
                    "smaller tiles")

    return UtlxSharedMemoryError(required, limit, "shared memory")


class UtlxPerformanceWarning(UserWarning):
    """A TLX op compiled, but to slower code than written (e.g. a cp.async staged through registers)."""
