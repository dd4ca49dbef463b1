"""A test language declared through the public ``tritonx.dsl`` API: one op per way of implementing one.

* ``rotate_left``: emitted while tracing, a different instruction per backend (PTX ``shf.l.wrap.b32``,
  AMDGCN ``v_alignbit_b32``);
* ``via_shared``: lowered after ``convert-triton-to-tritongpu`` with Gluon's builder (a shared-memory
  round trip: ``ttg.local_alloc`` + ``ttg.local_load``);
* ``which_target``: one implementation per target pattern, to show which one wins;
* ``cuda_only``: no AMD implementation (the error names op and target);
* ``double_native``: Triton's own test plugin's custom op ``create_custom_op`` (``arith.addf %x, %x``).

Every op has an interpreter body.
"""

from __future__ import annotations

import numpy as np
import triton.language as tl
from tritonx import dsl

lang = dsl.Language("dsltest", version="1", description="ops of the tritonx.dsl tests")


@lang.op(result=dsl.like("x"))
def rotate_left(x: dsl.Tensor(dtypes=("int32", "uint32")),
                n: dsl.Constexpr(int, check=lambda n: 0 <= n < 32, expect="0 <= n < 32")):
    """Rotate every element of ``x`` left by ``n`` bits."""


@rotate_left.emit("cuda")
def _rotate_cuda(ctx, x, n):
    return ctx.inline_asm(f"shf.l.wrap.b32 $0, $1, $1, {n};", "=r,r", [x], x.dtype)


@rotate_left.emit("hip")
def _rotate_hip(ctx, x, n):
    return ctx.inline_asm(f"v_alignbit_b32 $0, $1, $1, {(32 - n) % 32}", "=v,v", [x], x.dtype)


@rotate_left.interpret
def _rotate_cpu(ctx, x, n):
    u = x.view(np.uint32)
    return ((u << np.uint32(n)) | (u >> np.uint32((32 - n) % 32))).view(x.dtype)


@lang.op(result=dsl.like("x"))
def via_shared(x: dsl.Tensor(rank=1)):
    """Return ``x`` after a round trip through shared memory."""


#: (LowerContext.target, the pass context's target) of each lowering of ``via_shared``, for the tests
LOWERED_FOR: list = []


@via_shared.lower("*")
def _via_shared_ttgir(ctx, x):
    from triton.experimental.gluon import language as ttgl

    LOWERED_FOR.append((ctx.target, ctx.pass_context.target))

    layout = ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
    shape = ctx.shape("x")
    ty = ttgl.shared_memory_descriptor_type(ctx.dtype("x"), shape, layout, shape).to_ir(ctx.builder)
    return ctx.builder.create_local_load(ctx.result_type, ctx.builder.create_local_alloc(ty, x))


@via_shared.interpret
def _via_shared_cpu(ctx, x):
    return x.copy()


@lang.op
def which_target():
    """Which implementation served the compile: 2 for cuda:90, 1 for another cuda, 0 for anything else."""


@which_target.emit("*")
def _any(ctx):
    return ctx.semantic.to_tensor(0)


@which_target.emit("cuda")
def _cuda(ctx):
    return ctx.semantic.to_tensor(1)


@which_target.emit("cuda:90")
def _sm90(ctx):
    return ctx.semantic.to_tensor(2)


@which_target.interpret(raw=True)
def _cpu(ctx):
    return ctx.tensor(np.int32(-1), tl.int32)


@lang.op(result=dsl.like("x"))
def cuda_only(x: dsl.Tensor(dtypes="float")):
    """An op with an NVIDIA implementation only."""


@cuda_only.emit("cuda")
def _cuda_only(ctx, x):
    return ctx.inline_asm("mov.b32 $0, $1;", "=r,r", [x], x.dtype)


@lang.op(result=dsl.like("x"))
def double_native(x: dsl.Tensor(dtypes="float")):
    """``x + x`` built by the custom op of Triton's own dialect test plugin (``create_custom_op``)."""


double_native.native("*", "create_custom_op")


@double_native.interpret
def _double_cpu(ctx, x):
    return x + x
