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
