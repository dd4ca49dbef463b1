"""utlx's operations as ``torch.library`` custom ops (namespace ``utlx``), so ``torch.compile`` captures them.

Why custom ops: ``utlx.matmul`` tunes, caches and launches Triton kernels from Python; Dynamo cannot
trace through that (``fullgraph=True`` fails, and without it every call is a graph break). A custom op
is opaque to the compiler: Dynamo and AOTAutograd see only its schema and its fake implementation
(output shape, dtype, device), the compiled graph calls the real implementation at run time.

* ``import utlx.torch_ops`` registers ``torch.ops.utlx.matmul(a, b)`` (with a fake implementation and
  a backward through the same op), idempotently.
* A model that calls ``utlx.matmul`` itself needs nothing more: while Dynamo traces it, ``utlx.matmul``
  imports this module and calls the op, so the graph holds ``torch.ops.utlx.matmul``; an eager call
  takes the direct path (no dispatcher overhead).
* The real implementation is ``utlx.matmul``: GPU tensors, or CPU tensors under ``TRITON_INTERPRET=1``
  (utlx's portable GEMM in Triton's interpreter; slow: for tests and debugging).

Adding an op (``utlx.attention``, when it exists) is one :class:`TorchOp` entry in :func:`op_table`:
its schema, the real and fake implementations and, if it is differentiable, its backward.

Needs torch >= 2.5 (``pip install 'utlx[torch]'``, or any torch you already have).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from utlx import eager

NAMESPACE = "utlx"
_LOCK = threading.Lock()
#: The registered ops' ``CustomOpDef`` objects, by name (kept alive with this module).
DEFS: dict[str, Any] = {}


@dataclass(frozen=True)
class TorchOp:
    """One utlx operation as a torch custom op: ``torch.ops.utlx.<name>``."""

    name: str
    #: The op's schema, e.g. ``"(Tensor a, Tensor b) -> Tensor"`` (outputs never alias inputs).
    schema: str
    #: Runs it on real tensors.
    impl: Callable[..., Any]
    #: Output metadata only (shape, dtype, device, strides), from fake or meta inputs.
    fake: Callable[..., Any]
    #: ``backward(ctx, *grads)`` and ``setup_context(ctx, inputs, output)``, when differentiable.
    backward: Callable[..., Any] | None = None
    setup_context: Callable[..., Any] | None = None

    @property
    def qualname(self) -> str:
        return f"{NAMESPACE}::{self.name}"


# ------------------------------------------------------------------------------------------ matmul


def _check_matmul_inputs(a: torch.Tensor, b: torch.Tensor) -> None:
    """The shape and dtype rules of ``utlx.matmul``, as ``torch._check`` (they hold for symbolic shapes too)."""
    torch._check(a.dim() == 2 and b.dim() == 2,
                 lambda: f"utlx.matmul: expected 2-D tensors, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    torch._check(a.shape[1] == b.shape[0],
                 lambda: f"utlx.matmul: inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    torch._check(a.dtype == b.dtype and a.dtype in (torch.float16, torch.bfloat16),
                 lambda: f"utlx.matmul: expected two fp16 or two bf16 tensors, got {a.dtype} and {b.dtype}")
    torch._check(a.device == b.device, lambda: f"utlx.matmul: tensors on {a.device} and {b.device}")


def _matmul_fake(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    _check_matmul_inputs(a, b)
    return a.new_empty((a.shape[0], b.shape[1]))


def _matmul_impl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The real implementation is ``utlx.matmul`` itself: one path for GPU tensors and interpreted CPU ones."""
    return eager.get("matmul")(a, b)


def _matmul_setup_context(ctx: Any, inputs: tuple[torch.Tensor, torch.Tensor], output: torch.Tensor) -> None:
    ctx.save_for_backward(*inputs)


def _matmul_backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """d(a @ b): grad @ b^T and a^T @ grad, through the same op (so they run utlx kernels too)."""
    a, b = ctx.saved_tensors
    grad_a = torch.ops.utlx.matmul(grad, b.t()) if ctx.needs_input_grad[0] else None
    grad_b = torch.ops.utlx.matmul(a.t(), grad) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


# ------------------------------------------------------------------------------------------ table


def op_table() -> tuple[TorchOp, ...]:
    """Every utlx custom op. One entry per op: this is the only place a new op is added."""
    return (
        TorchOp("matmul", "(Tensor a, Tensor b) -> Tensor", _matmul_impl, _matmul_fake,
                backward=_matmul_backward, setup_context=_matmul_setup_context),
    )


def _is_registered(op: TorchOp) -> bool:
    try:
        getattr(getattr(torch.ops, NAMESPACE), op.name)
    except (AttributeError, RuntimeError):
        return False
    return True


def register() -> list[str]:
    """Register every op of :func:`op_table` once (later calls, and a reloaded module, change nothing).

    Returns the qualified names of the ops this call registered.
    """
    done = []
    with _LOCK:
        for op in op_table():
            if _is_registered(op):
                continue
            custom = torch.library.custom_op(op.qualname, op.impl, mutates_args=(), schema=op.schema)
            custom.register_fake(op.fake)
            if op.backward is not None:
                custom.register_autograd(op.backward, setup_context=op.setup_context)
            DEFS[op.name] = custom
            done.append(op.qualname)
    return done


register()
