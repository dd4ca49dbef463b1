"""mbarriers (``alloc_barriers``, ``alloc_warp_barrier``, expect/wait/arrive): trace-time bodies and lowerings.

Why a module: mbarriers order TMA copies, MMAs and warp-specialized partitions on Hopper and Blackwell alike
(``ttng.init_barrier``, ``ttng.barrier_expect``, ``ttng.wait_barrier``, ``ttng.arrive_barrier``).
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx import compat
from utlx.compiler.common import layouts, placeholders, values
from utlx.compiler.common.args import _c, _expect, _i1, _i32, _show
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.lowering import Lowering, register_lowering
from utlx.compiler.common.placeholders import Placeholder
from utlx.language._dispatch import register_compiler_impl

from .cluster_marks import cluster_mark, cluster_rank
from .targets import NVIDIA


@register_compiler_impl("alloc_barriers", *NVIDIA)
def alloc_barriers(_semantic: Any, num_barriers: Any, arrive_count: Any = 1) -> values.Barriers:
    """``num_barriers`` initialised mbarriers in shared memory, each expecting ``arrive_count`` arrivals."""
    op = "alloc_barriers"
    n = _c(num_barriers)
    count = _c(arrive_count)
    if not isinstance(n, int) or n < 1:
        raise UtlxCompileError(op, f"'num_barriers' must be a compile-time int >= 1, got {n!r}")
    if not isinstance(count, int) or count < 1:
        raise UtlxCompileError(op, f"'arrive_count' must be a compile-time int >= 1, got {count!r}")
    h = placeholders.emit(_semantic, op, {"num": n, "count": count})
    return values.make("barriers", h, shape=(1,), dtype=tl.int64, num=n)


def _barrier(op: str, bar: Any) -> values.BarrierView:
    view = _expect(op, bar, values.BarrierView, "bar")
    if op != "barrier_arrive" and getattr(view, "remote_cta_rank", None) is not None:
        raise UtlxCompileError(op, "a remote_view of a barrier can only be arrived on (tlx.barrier_arrive): a CTA "
                               "waits on and expects bytes on its own barriers")
    return view


@register_compiler_impl("barrier_expect_bytes", *NVIDIA)
def barrier_expect_bytes(_semantic: Any, bar: Any, size: Any, pred: Any = None) -> None:
    """Tell ``bar`` to expect ``size`` bytes of TMA traffic before its phase completes."""
    op = "barrier_expect_bytes"
    b = _barrier(op, bar)
    nbytes = _c(size)
    if not isinstance(nbytes, int) or nbytes <= 0:
        raise UtlxCompileError(op, f"'size' must be a positive compile-time int, got {nbytes!r}")
    placeholders.emit(_semantic, op, {"size": nbytes}, handles=[b.handle, _i1(_semantic, pred, op, "pred")])


@register_compiler_impl("barrier_wait", *NVIDIA)
def barrier_wait(_semantic: Any, bar: Any, phase: Any, pred: Any = None) -> None:
    """Wait until ``bar`` completes phase ``phase`` (0 or 1)."""
    op = "barrier_wait"
    b = _barrier(op, bar)
    ph = _c(phase)
    if isinstance(ph, int) and ph not in (0, 1):
        raise UtlxCompileError(op, f"'phase' must be 0 or 1, got {ph}")
    placeholders.emit(_semantic, op, {}, handles=[b.handle, _i32(_semantic, phase, op, "phase"),
                                                 _i1(_semantic, pred, op, "pred")])


@register_compiler_impl("barrier_arrive", *NVIDIA)
def barrier_arrive(_semantic: Any, bar: Any, arrive_count: Any = 1, remote_cta_rank: Any = None,
                   pred: Any = None) -> None:
    """Arrive ``arrive_count`` times on ``bar`` (only when ``pred`` is true, when given)."""
    op = "barrier_arrive"
    b = _barrier(op, bar)
    _check_warp_barrier_arrive(_semantic, b)
    count = _c(arrive_count)
    if not isinstance(count, int) or count < 1:
        raise UtlxCompileError(op, f"'arrive_count' must be a compile-time int >= 1, got {count!r}")
    if _c(remote_cta_rank) is None:  # a remote_view(bar, rank) names its CTA itself
        remote_cta_rank = getattr(b, "remote_cta_rank", None)
    remote = _c(remote_cta_rank) is not None
    if remote:  # the same barrier in cluster CTA `remote_cta_rank` (mapa + a shared::cluster arrive)
        uid = cluster_mark(_semantic, op, "remote_arrive", cluster_rank(_semantic, remote_cta_rank, op))
    placeholders.emit(_semantic, op, {"count": count}, handles=[b.handle, _i1(_semantic, pred, op, "pred")])
    if remote:
        cluster_mark(_semantic, op, "end", uid=uid)


def _check_warp_barrier_arrive(_semantic: Any, bar: values.BarrierView) -> None:
    """A barrier of ``alloc_warp_barrier(num_warps=n)`` counts one arrival per call of an n-warp group.

    Why: utlx initialises it with ``num_arrivals`` and each call arrives once (Triton's ``arrive_barrier``:
    one elected thread of the calling warps), which completes the phase when TLX's per-thread arrivals
    would, provided the caller runs on exactly ``num_warps`` warps.
    """
    from .tasks import current_num_warps

    want = bar.type.group_warps
    if not want:
        return
    have = current_num_warps(_semantic)
    if have != want:
        raise UtlxCompileError("barrier_arrive", f"this warp barrier was allocated for {want} arriving warps "
                               f"(alloc_warp_barrier(num_warps={want})) but the calling task runs on {have} warps",
                               hint=f"allocate it with num_warps={have}, or arrive from a task on {want} warps")


@register_compiler_impl("alloc_warp_barrier", *NVIDIA)
def alloc_warp_barrier(_semantic: Any, num_barriers: Any, num_warps: Any = 1, num_arrivals: Any = 1) -> values.Barriers:
    """mbarriers on which every thread of ``num_warps`` warps arrives, ``num_arrivals`` times per phase.

    Lowered as ordinary mbarriers expecting ``num_arrivals`` arrivals: a ``barrier_arrive`` from a
    ``num_warps``-warp task arrives once (see ``_check_warp_barrier_arrive``).
    """
    op = "alloc_warp_barrier"
    nw, arrivals = _c(num_warps), _c(num_arrivals)
    for name, v in (("num_warps", nw), ("num_arrivals", arrivals)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise UtlxCompileError(op, f"'{name}' must be a compile-time int >= 1, got {_show(v)}")
    bars = alloc_barriers(_semantic, num_barriers, arrivals)
    return values.make("barriers", bars.handle, shape=(1,), dtype=tl.int64, num=bars.type.num, group_warps=nw)


# ---------------------------------------------------------------- lowerings


def _lower_alloc_barriers(low: Lowering, ph: Placeholder) -> None:
    from triton.experimental.gluon import language as ttgl

    gb = low.builder
    n = int(ph.attrs["num"])
    layout = ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
    full = [n, 1]
    bars = compat.create_local_alloc(gb, layouts.memdesc_type(tl.int64, full, layout, full).to_ir(gb))
    one_ty = layouts.memdesc_type(tl.int64, [1], layout, [1]).to_ir(gb)
    for i in range(n):
        gb.create_mbarrier_init(gb.create_memdesc_index(one_ty, bars, gb.get_int32(i)), int(ph.attrs["count"]))
    # Make the initialised barriers visible to the async proxy (TMA completes transactions on them); one
    # fence after a run of barrier allocations covers them all (init_fence.py).
    if id(ph) not in low.unfenced:
        gb.create_fence_async_shared(False)
    low.real[ph.result.id()] = bars
    low.facts[ph.result.id()] = {"dtype": tl.int64, "shape": [1], "layout": layout, "alloc": full,
                                 "kind": "barriers"}


def _lower_expect(low: Lowering, ph: Placeholder) -> None:
    bar = low.handle(ph, 0, "barrier")
    compat.create_mbarrier_expect(low.builder, bar, int(ph.attrs["size"]), ph.handles[1])


def _lower_barrier_wait(low: Lowering, ph: Placeholder) -> None:
    bar = low.handle(ph, 0, "barrier")
    low.builder.create_mbarrier_wait(bar, ph.handles[1], ph.handles[2], [])


def _lower_barrier_arrive(low: Lowering, ph: Placeholder) -> None:
    bar = low.handle(ph, 0, "barrier")
    compat.create_mbarrier_arrive(low.builder, bar, int(ph.attrs["count"]), ph.handles[1])


register_lowering("alloc_barriers", "cuda")(_lower_alloc_barriers)
register_lowering("barrier_expect_bytes", "cuda")(_lower_expect)
register_lowering("barrier_wait", "cuda")(_lower_barrier_wait)
register_lowering("barrier_arrive", "cuda")(_lower_barrier_arrive)
