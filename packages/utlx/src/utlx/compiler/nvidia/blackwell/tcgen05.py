"""Blackwell's fifth-generation tensor-core MMA (``tcgen05.mma``): ``async_dot`` accumulating in tensor memory and
``tcgen05_commit``, for sm_100; trace-time bodies and lowerings.

Why a body of its own on Blackwell: Hopper's ``async_dot`` is a warpgroup MMA accumulating in registers
(:mod:`..mma_ops`); Blackwell's is issued by one thread, reads A from shared or tensor memory and B from shared
memory, accumulates in tensor memory, and completes asynchronously: each barrier in ``mBarriers`` is arrived on
when the MMA is done, and ``tcgen05_commit(bar)`` arrives on ``bar`` when every tcgen05 op the thread issued
before it is done. Without barriers (and without ``force_async``) the MMA is synchronous, as in TLX.
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx.compiler.common import placeholders, values
from utlx.compiler.common.args import _c, _expect, _i1, _show
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.lowering import Lowering, register_lowering
from utlx.compiler.common.placeholders import Placeholder
from utlx.compiler.common.target import from_semantic
from utlx.language._dispatch import register_compiler_impl

from ..cluster_marks import cluster_mark
from ..targets import BLACKWELL
from . import gluon, two_cta
from .tmem import is_tmem

#: Accumulator element types of tcgen05.mma (kind::f16 accumulates in fp32 or fp16, kind::i8 in int32).
ACC_DTYPES = (tl.float32, tl.float16, tl.int32)


def _barrier_list(op: str, bars: Any) -> list[values.BarrierView]:
    bars = _c(bars)
    if bars is None:
        return []
    if isinstance(bars, tl.tuple):
        bars = list(bars.values)
    if not isinstance(bars, (list, tuple)):
        bars = [bars]
    return [_expect(op, _c(b), values.BarrierView, "mBarriers") for b in bars]


@register_compiler_impl("async_dot", *BLACKWELL)
def async_dot(_semantic: Any, A: Any, B: Any, acc: Any = None, use_acc: Any = None, pred: Any = None,
              mBarriers: Any = None, two_ctas: Any = False, force_async: Any = False, input_precision: Any = None,
              out_dtype: Any = tl.float32) -> None:
    """``acc (+)= A @ B`` on the tensor cores (``tcgen05.mma``), into a TMEM accumulator."""
    op = "async_dot"
    target = from_semantic(_semantic)
    gluon.require_support(op, target)
    if isinstance(A, tl.tensor):
        raise UtlxCompileError(op, "a register operand A is Hopper's form; on Blackwell A is in shared or tensor "
                               "memory", target=target.name, hint="tlx.local_store A into a buffer first")
    a = _expect(op, A, values.SharedView, "A")
    b = _expect(op, B, values.SharedView, "B")
    if is_tmem(b):
        raise UtlxCompileError(op, "B must be in shared memory (tcgen05 reads only A from tensor memory)",
                               target=target.name)
    acc = _c(acc)
    if not is_tmem(acc) or not isinstance(acc, values.SharedView):
        raise UtlxCompileError(op, f"on Blackwell the accumulator is one tensor-memory buffer (tlx.local_view of a "
                               f"local_alloc(..., tlx.storage_kind.tmem)), got {_show(acc)}", target=target.name,
                               hint="allocate it with tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)")
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise UtlxCompileError(op, f"A and B must be 2-D, got {list(a.shape)} and {list(b.shape)}")
    pair = bool(_c(two_ctas))
    M, K = a.shape
    K2, N_b = b.shape
    N = 2 * N_b if pair else N_b  # two_ctas: each CTA holds half of B's columns, the accumulator all of them
    if K != K2:
        raise UtlxCompileError(op, f"shape mismatch: A is {M}x{K} but B is {K2}x{N_b} (inner dimensions differ)")
    if list(acc.shape) != [M, N]:
        half = " (two_ctas: B holds this CTA's half of the N columns)" if pair else ""
        raise UtlxCompileError(op, f"acc must be {M}x{N} (A is {M}x{K}, B is {K2}x{N_b}{half}), got "
                               f"{list(acc.shape)}")
    if a.dtype != b.dtype:
        raise UtlxCompileError(op, f"dtype mismatch: A is {a.dtype}, B is {b.dtype}")
    if M not in (64, 128):
        raise UtlxCompileError(op, f"tcgen05.mma takes M = 64 or 128 rows per CTA, got M={M}", target=target.name)
    if not 8 <= N <= 256 or N % 8:
        raise UtlxCompileError(op, f"tcgen05.mma takes N a multiple of 8 in [8, 256], got N={N}", target=target.name)
    if K < 16:
        raise UtlxCompileError(op, f"K must be at least 16, got K={K}")
    if acc.dtype not in ACC_DTYPES:
        raise UtlxCompileError(op, f"acc dtype {acc.dtype} is not a tcgen05 accumulator type (fp32, fp16, int32)")
    bars = _barrier_list(op, mBarriers)
    if pair:
        two_cta.check_mma(op, target, M, N, bool(bars) or bool(_c(force_async)), is_tmem(a))
    handles = [a.handle, b.handle, acc.handle]
    use_acc_c = _c(use_acc)
    handles.append(_semantic.builder.get_int1(True) if use_acc_c is None else _i1(_semantic, use_acc, op, "use_acc"))
    pred_h = _i1(_semantic, pred, op, "pred")
    if pair:  # only the pair's even CTA issues the MMA
        pred_h = _semantic.and_(tl.tensor(pred_h, tl.int1), two_cta.leader(_semantic)).handle
    handles.append(pred_h)
    handles += [bar.handle for bar in bars]
    attrs = {"a_tmem": is_tmem(a), "nbars": len(bars), "sync": not bars and not bool(_c(force_async)),
             "mma_operands": 1 if is_tmem(a) else 2, "mma_operand_first": 1 if is_tmem(a) else 0}
    two_cta.record_mode(_semantic, op, pair, target)
    if pair:
        attrs["acc_cols"] = N_b  # the leader's one-CTA MMA writes N/2 columns; the rewrite widens it to N
        cluster_mark(_semantic, op, "end", uid=cluster_mark(_semantic, op, "pair_mode"))  # 2-CTA mode (two_cta)
    placeholders.emit(_semantic, "tcgen05_mma", attrs, handles=handles)
    return None


@register_compiler_impl("tcgen05_commit", *BLACKWELL)
def tcgen05_commit(_semantic: Any, mBarrier: Any, two_ctas: Any = False) -> None:
    """Arrive on ``mBarrier`` once every tcgen05 op this thread issued before is complete."""
    op = "tcgen05_commit"
    gluon.require_support(op, from_semantic(_semantic))
    bar = _expect(op, _c(mBarrier), values.BarrierView, "mBarrier")
    if _c(two_ctas):  # the pair's even CTA commits, arriving on the barrier in both CTAs of the pair
        uid = cluster_mark(_semantic, op, "commit2")
        placeholders.emit(_semantic, "tcgen05_commit", {}, handles=[bar.handle, two_cta.leader(_semantic).handle])
        cluster_mark(_semantic, op, "end", uid=uid)
        return None
    placeholders.emit(_semantic, "tcgen05_commit", {}, handles=[bar.handle])
    return None


# ---------------------------------------------------------------- lowerings


def _lower_mma(low: Lowering, ph: Placeholder) -> None:
    bw = _blackwell()
    sem = gluon.semantic(low)
    a = gluon.tmem(low, ph, 0, "A operand") if ph.attrs.get("a_tmem") else gluon.Handle(low.handle(ph, 0, "A operand"))
    b = gluon.Handle(low.handle(ph, 1, "B operand"))
    acc = gluon.tmem(low, ph, 2, "accumulator")
    if ph.attrs.get("acc_cols"):  # two_ctas: the leader's own half, widened to the pair's N in the PTX
        acc = acc.slice(0, int(ph.attrs["acc_cols"]), _semantic=sem)
    use_acc, pred = gluon.i1(ph.handles[3]), gluon.i1(ph.handles[4])
    bars = [gluon.Handle(low.handle(ph, 5 + i, "barrier")) for i in range(int(ph.attrs.get("nbars", 0)))]
    preds = None
    if not bars and not ph.attrs.get("sync", True):
        # force_async: issued asynchronously, its completion tracked by a later tcgen05_commit. Gluon's MMA is
        # asynchronous when it has barriers, so it gets one whose arrival is predicated off (never arrived on).
        bars, preds = [gluon.Handle(_null_barrier(low))], [low.builder.get_int1(False)]
    bw.tcgen05_mma(a, b, acc, use_acc=use_acc, pred=pred, mbarriers=bars or None,
                   mbarrier_preds=[gluon.i1(p) for p in preds] if preds else None, _semantic=sem)


def _null_barrier(low: Lowering) -> Any:
    """One mbarrier per kernel that is never initialised, arrived on or waited for (made at the kernel's start)."""
    bar = low.vendor.get("null_barrier")
    if bar is None:
        from triton.experimental.gluon import language as ttgl

        from utlx import compat
        from utlx.compiler.common import layouts

        gb = low.builder
        here = gb.get_insertion_point()
        gb.set_insertion_point_to_start(low.entry_block())
        layout = ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
        bar = compat.create_local_alloc(gb, layouts.memdesc_type(tl.int64, [1], layout, [1]).to_ir(gb))
        gb.restore_insertion_point(here)
        low.vendor["null_barrier"] = bar
    return bar


def _lower_commit(low: Lowering, ph: Placeholder) -> None:
    pred = gluon.i1(ph.handles[1]) if len(ph.handles) > 1 else True
    _blackwell().tcgen05_commit(gluon.Handle(low.handle(ph, 0, "barrier")), pred=pred, _semantic=gluon.semantic(low))


def _blackwell() -> Any:
    from utlx import compat

    return compat.blackwell()


register_lowering("tcgen05_mma")(_lower_mma)
register_lowering("tcgen05_commit")(_lower_commit)
