"""Hopper's asynchronous warpgroup MMA (``wgmma.mma_async``): ``async_dot`` accumulating in registers,
``async_dot_wait``, and the async-proxy fence they need; trace-time bodies and lowerings.

Why a module: wgmma is what Hopper's TLX kernels are built on and exists on no other target; Blackwell's
``async_dot`` into tensor memory is tcgen05 (:mod:`utlx.compiler.nvidia.blackwell`).
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx import compat
from utlx.compiler.common import layouts, placeholders, values
from utlx.compiler.common.args import _CONSTEXPR_HINT, _c, _expect, _i1, _shape, _show
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.lowering import Lowering, register_lowering
from utlx.compiler.common.mem_ops import _replace, _stash
from utlx.compiler.common.placeholders import Placeholder, dtype_of_name
from utlx.compiler.common.target import from_semantic
from utlx.language._dispatch import register_compiler_impl

from .targets import HOPPER, NVIDIA

_dtype = dtype_of_name


def _mma_instr_n(n: int, wpc_n: int) -> int:
    per = n // wpc_n
    for cand in range(min(256, per), 7, -8):
        if per % cand == 0:
            return cand
    return 8


@register_compiler_impl("async_dot", *HOPPER)
def async_dot(_semantic: Any, A: Any, B: Any, acc: Any = None, use_acc: Any = None, pred: Any = None,
              mBarriers: Any = None, two_ctas: Any = False, force_async: Any = False, input_precision: Any = None,
              out_dtype: Any = tl.float32) -> tl.tensor:
    """Asynchronous warpgroup MMA ``acc + A @ B`` (Hopper ``wgmma.mma_async``); A may live in registers."""
    op = "async_dot"
    target = from_semantic(_semantic)
    if _c(mBarriers) or _c(two_ctas):
        from .blackwell.refusals import blackwell_error

        feature = "tcgen05 completion barriers (mBarriers)" if _c(mBarriers) else "2-CTA MMA (two_ctas)"
        raise blackwell_error(op, feature, target)
    if _c(pred) is not None:
        raise UtlxCompileError(op, "'pred' is not supported on Hopper", target=target.name)
    b = _expect(op, B, values.SharedView, "B")
    a_reg = isinstance(A, tl.tensor)
    if not a_reg:
        _expect(op, A, values.SharedView, "A")
    a_shape, a_dtype = (_shape(A), A.dtype)
    if len(a_shape) != 2 or len(b.shape) != 2:
        raise UtlxCompileError(op, f"A and B must be 2-D, got {a_shape} and {list(b.shape)}")
    M, K = a_shape
    K2, N = b.shape
    if K != K2:
        raise UtlxCompileError(op, f"shape mismatch: A is {M}x{K} but B is {K2}x{N} (inner dimensions differ)")
    if a_dtype != b.dtype:
        raise UtlxCompileError(op, f"dtype mismatch: A is {a_dtype}, B is {b.dtype}")
    nw = target.num_warps
    if nw % 4:
        raise UtlxCompileError(op, f"wgmma needs num_warps to be a multiple of 4, got {nw}", target=target.name)
    if M % 64:
        raise UtlxCompileError(op, f"wgmma needs M to be a multiple of 64, got M={M}")
    out_dtype = _c(out_dtype) or tl.float32
    acc = _c(acc)
    no_acc = acc is None
    if no_acc:
        # TLX: without an accumulator the dot starts from zero. wgmma ignores the accumulator registers
        # when use_acc is false (scale-d = 0), so the zeros are never read.
        acc = _semantic.full([M, N], 0, out_dtype)
    if not isinstance(acc, tl.tensor) or not acc.type.is_block() or _shape(acc) != [M, N]:
        got = "x".join(map(str, _shape(acc))) if isinstance(acc, tl.tensor) and acc.type.is_block() else _show(acc)
        raise UtlxCompileError(op, f"acc must be a {M}x{N} tensor (A is {M}x{K}, B is {K2}x{N}), got {got}",
                               hint=f"start from tl.zeros(({M}, {N}), tl.float32)")
    if acc.dtype not in (tl.float32, tl.float16, tl.int32):
        raise UtlxCompileError(op, f"acc dtype {acc.dtype} is not a wgmma accumulator type (fp32, fp16, int32)")
    bits = a_dtype.primitive_bitwidth
    # Warps along M first (16 rows per warp), then N: Triton's warpsPerTileV3 rule.
    wpc = [4, 1]
    while wpc[0] * wpc[1] < nw:
        if M > 16 * wpc[0]:
            wpc[0] *= 2
        else:
            wpc[1] *= 2
    instr = [16, _mma_instr_n(N, wpc[1]), 256 // bits]
    precision = str(_c(input_precision) or getattr(_semantic.builder.options, "default_dot_input_precision", "tf32"))
    max_imprecise = 0
    if a_dtype.is_fp8():
        max_imprecise = int(getattr(_semantic.builder.options, "max_num_imprecise_acc_default", 0) or 0)
    attrs = {"a_reg": a_reg, "M": M, "N": N, "K": K, "dtype": str(a_dtype), "acc_dtype": str(acc.dtype),
             "wpc": wpc, "instr": instr, "precision": precision, "max_imprecise": max_imprecise}
    handles = [b.handle]
    if a_reg:
        attrs["a_stash"] = _stash(_semantic, A)
    else:
        handles.insert(0, A.handle)
    use_acc_c = _c(use_acc)
    if no_acc and use_acc_c is None:
        handles.append(_semantic.builder.get_int1(False))
        attrs["use_acc"] = True
    elif use_acc_c is not None:
        handles.append(_i1(_semantic, use_acc, op, "use_acc"))
        attrs["use_acc"] = True
    h = placeholders.emit(_semantic, op, attrs, handles=handles, tensors=[acc], result=acc.type)
    return tl.tensor(h, acc.type)


@register_compiler_impl("async_dot_wait", *HOPPER)
def async_dot_wait(_semantic: Any, pendings: Any, inp: Any) -> tl.tensor:
    """Wait until at most ``pendings`` wgmma groups are in flight; returns ``inp`` made safe to read."""
    op = "async_dot_wait"
    n = _c(pendings)
    if not isinstance(n, int) or n < 0:
        raise UtlxCompileError(op, f"'pendings' must be a compile-time int >= 0, got {_show(n)}",
                               hint="0 waits for every wgmma group; 1 keeps the last one in flight"
                               if isinstance(n, int) else _CONSTEXPR_HINT)
    if not isinstance(inp, tl.tensor) or not inp.type.is_block():
        raise UtlxCompileError(op, f"'inp' must be the accumulator tensor returned by tlx.async_dot, got {inp!r}")
    h = placeholders.emit(_semantic, op, {"n": n}, tensors=[inp], result=inp.type)
    return tl.tensor(h, inp.type)


@register_compiler_impl("fence_async_shared", *NVIDIA)
def fence_async_shared(_semantic: Any) -> None:
    """Order generic-proxy shared-memory writes before async-proxy reads (``fence.proxy.async``)."""
    op = "fence_async_shared"
    placeholders.emit(_semantic, op, {})


# ---------------------------------------------------------------- lowerings


def _lower_async_dot(low: Lowering, ph: Placeholder) -> None:
    from triton._C.libtriton import ir

    a = ph.attrs
    gb = low.builder
    acc = ph.tensors[0]
    acc_dtype = _dtype(a["acc_dtype"])
    mma = compat.nvmma_distributed_layout(list(a["wpc"]), list(a["instr"]))
    acc_ty = layouts.distributed_type(acc_dtype, [a["M"], a["N"]], mma).to_ir(gb)
    raw = low.mma_of.get(acc.id())
    acc_mma = raw if raw is not None else gb.create_convert_layout(acc_ty, acc)
    i = 0
    if a["a_reg"]:
        a_val = low.stash.get(a["a_stash"])
        if a_val is None:
            raise UtlxCompileError("async_dot", f"register operand A was lost before lowering ({ph.describe()})")
        dtype = _dtype(a["dtype"])
        op_layout = layouts.dot_operand_layout(0, mma, 32 // dtype.primitive_bitwidth)
        a_ty = layouts.distributed_type(dtype, [a["M"], a["K"]], op_layout).to_ir(gb)
        a_op = gb.create_convert_layout(a_ty, a_val)
    else:
        a_op = low.handle(ph, 0, "A operand")
        i = 1
    b_op = low.handle(ph, i, "B operand")
    for k in ([] if a["a_reg"] else [0]) + [i]:  # the buffers this wgmma reads (retire.py)
        root = low.fact(ph, k).get("root")
        if root is not None:
            low.mma_allocs[root.id()] = root
    use_acc = ph.handles[i + 1] if a.get("use_acc") else gb.get_int1(True)
    precision = {"tf32": ir.INPUT_PRECISION.TF32, "tf32x3": ir.INPUT_PRECISION.TF32x3,
                 "ieee": ir.INPUT_PRECISION.IEEE}.get(a.get("precision", "tf32"), ir.INPUT_PRECISION.TF32)
    if compat.NEEDS_EXPLICIT_WGMMA_FENCE:
        gb.create_fence_async_shared(False)
    out = gb.create_warpgroup_mma(a_op, b_op, acc_mma, use_acc, precision, int(a.get("max_imprecise", 0)), True)
    back = gb.create_convert_layout(ph.result.get_type(), out)
    low.mma_of[back.id()] = out
    _replace(ph, back)


def _lower_async_dot_wait(low: Lowering, ph: Placeholder) -> None:
    gb = low.builder
    inp = ph.tensors[0]
    raw = low.mma_of.get(inp.id())
    if raw is None:
        # Not produced by async_dot in this block (e.g. carried through a loop): wait on the value itself.
        (out,) = gb.create_warpgroup_mma_wait([inp], int(ph.attrs["n"]))
        if int(ph.attrs["n"]) == 0:
            low.full_mma_waits.append(out)
        _replace(ph, out)
        return
    (out,) = gb.create_warpgroup_mma_wait([raw], int(ph.attrs["n"]))
    if int(ph.attrs["n"]) == 0:
        low.full_mma_waits.append(out)
    back = gb.create_convert_layout(ph.result.get_type(), out)
    low.mma_of[back.id()] = out
    _replace(ph, back)


def _lower_fence(low: Lowering, ph: Placeholder) -> None:
    low.builder.create_fence_async_shared(False)


register_lowering("async_dot", "cuda")(_lower_async_dot)
register_lowering("async_dot_wait", "cuda")(_lower_async_dot_wait)
register_lowering("fence_async_shared", "cuda")(_lower_fence)
