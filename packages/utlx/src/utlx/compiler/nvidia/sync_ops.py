"""Synchronisation and special-register ops that stock Triton has no op for, as inline PTX.

Why inline PTX, emitted while tracing: each of these is one PTX instruction on one scalar (a named
barrier, a memory fence, a cluster barrier, a special register read). ``tt.elementwise_inline_asm``
on scalars is ordinary TTIR, survives every pass unchanged (the side-effecting ones are emitted impure,
so nothing reorders or merges them) and reaches PTX as written, on every Triton version. No placeholder
and no lowering step are needed.

- ``named_barrier_wait(bar, n)`` / ``named_barrier_arrive(bar, n)``: ``bar.sync bar, n`` /
  ``bar.arrive bar, n`` (hardware named barriers; Triton itself uses low ids for its own partitions,
  which is why TLX kernels pick ids such as 9 and 10).
- ``fence("gpu" | "sys")``: ``fence.acq_rel.gpu`` / ``.sys``; ``fence("async_shared")`` is
  ``fence_async_shared`` (``fence.proxy.async``).
- ``cluster_barrier()``: ``barrier.cluster.arrive`` + ``wait``: every thread of every CTA of the cluster
  (``ctas_per_cga``: :mod:`.cluster_launch`); without one, the CTA's threads (all of them, across
  warp-specialized partitions).
- ``fence_mbarrier_init_cluster()``: ``fence.mbarrier_init.release.cluster`` (sm_90).
- ``cluster_cta_rank()`` / ``cluster_size_1d()``: ``%cluster_ctarank`` / ``%cluster_nctarank``
  (0 and 1 for a one-CTA cluster); ``thread_id(axis)``: ``%tid.x/y/z`` (the thread's index in the CTA,
  counted over all partitions); ``clock64()``: ``%clock64``.
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx.compiler.common.args import _c, _show
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.target import from_semantic
from utlx.language._dispatch import register_compiler_impl

from .mma_ops import fence_async_shared
from .targets import NVIDIA

#: Named barrier ids are 0..15 on NVIDIA GPUs; 0 is ``__syncthreads``.
NAMED_BARRIERS = 16


def _asm(_semantic: Any, text: str, constraints: str, args: list[Any], dtype: Any, pure: bool) -> tl.tensor:
    """One scalar ``tt.elementwise_inline_asm`` with result type ``dtype``."""
    b = _semantic.builder
    op = b.create_inline_asm(text, constraints, [a.handle for a in args], [dtype.to_ir(b)], pure, 1)
    return tl.tensor(op.get_result(0), dtype)


def _sm90(op: str, _semantic: Any) -> None:
    target = from_semantic(_semantic)
    if target.capability < 90:
        raise UtlxCompileError(op, "needs sm_90 or newer (clusters)", target=target.name)


def _scalar_i32(_semantic: Any, x: Any, op: str, name: str) -> tuple[str, list[Any]]:
    """PTX operand text for ``x``: the literal for a compile-time int, else ``$n`` of an i32 register."""
    v = _c(x)
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v), []
    if isinstance(v, tl.tensor) and not v.type.is_block() and v.dtype.is_int():
        return "", [_semantic.cast(v, tl.int32) if v.dtype != tl.int32 else v]
    raise UtlxCompileError(op, f"'{name}' must be an int or an integer scalar, got {_show(x)}")


def _named_barrier(_semantic: Any, op: str, instr: str, bar: Any, arrive_count: Any) -> None:
    ops, args = [], []
    for name, x in (("bar", bar), ("arrive_count", arrive_count)):
        text, extra = _scalar_i32(_semantic, x, op, name)
        if extra:
            text = f"${len(args) + 1}"
            args += extra
        ops.append(text)
    bar_c, count_c = _c(bar), _c(arrive_count)
    if isinstance(bar_c, int) and not 0 < bar_c < NAMED_BARRIERS:
        raise UtlxCompileError(op, f"named barrier id must be in 1..{NAMED_BARRIERS - 1} (0 is __syncthreads), "
                               f"got {bar_c}")
    if isinstance(count_c, int) and (count_c <= 0 or count_c % 32):
        raise UtlxCompileError(op, f"arrive_count counts threads and must be a positive multiple of 32, got {count_c}",
                               hint="a warp group of 4 warps is 128 threads; two of them are 256")
    # The dummy result keeps the op well-formed (inline asm has at least one result).
    _asm(_semantic, f"mov.u32 $0, 0;\n\t{instr} {ops[0]}, {ops[1]};", "=r" + ",r" * len(args), args, tl.int32,
         pure=False)


@register_compiler_impl("named_barrier_wait", *NVIDIA)
def named_barrier_wait(_semantic: Any, bar: Any, arrive_count: Any) -> None:
    """``bar.sync bar, arrive_count``: wait until ``arrive_count`` threads reached named barrier ``bar``."""
    _named_barrier(_semantic, "named_barrier_wait", "bar.sync", bar, arrive_count)


@register_compiler_impl("named_barrier_arrive", *NVIDIA)
def named_barrier_arrive(_semantic: Any, bar: Any, arrive_count: Any) -> None:
    """``bar.arrive bar, arrive_count``: count this warp's threads at named barrier ``bar`` and go on."""
    _named_barrier(_semantic, "named_barrier_arrive", "bar.arrive", bar, arrive_count)


@register_compiler_impl("fence", *NVIDIA)
def fence(_semantic: Any, scope: Any) -> None:
    """A memory fence of ``scope``: ``"gpu"``, ``"sys"`` or ``"async_shared"``."""
    op = "fence"
    s = _c(scope)
    if s == "async_shared":
        fence_async_shared(_semantic)
        return
    if s not in ("gpu", "sys"):
        raise UtlxCompileError(op, f"scope must be 'gpu', 'sys' or 'async_shared', got {_show(scope)}")
    _asm(_semantic, f"mov.u32 $0, 0;\n\tfence.acq_rel.{s};", "=r", [], tl.int32, pure=False)


@register_compiler_impl("cluster_barrier", *NVIDIA)
def cluster_barrier(_semantic: Any) -> None:
    """Synchronise every thread of every CTA of the cluster (the CTA alone without ``ctas_per_cga``)."""
    _sm90("cluster_barrier", _semantic)
    _asm(_semantic, "mov.u32 $0, 0;\n\tbarrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;", "=r", [],
         tl.int32, pure=False)


@register_compiler_impl("fence_mbarrier_init_cluster", *NVIDIA)
def fence_mbarrier_init_cluster(_semantic: Any) -> None:
    """Make mbarrier initialisations visible to the cluster (``fence.mbarrier_init.release.cluster``)."""
    _sm90("fence_mbarrier_init_cluster", _semantic)
    _asm(_semantic, "mov.u32 $0, 0;\n\tfence.mbarrier_init.release.cluster;", "=r", [], tl.int32, pure=False)


@register_compiler_impl("cluster_cta_rank", *NVIDIA)
def cluster_cta_rank(_semantic: Any) -> tl.tensor:
    """This CTA's rank in its cluster (``%cluster_ctarank``)."""
    _sm90("cluster_cta_rank", _semantic)
    return _asm(_semantic, "mov.u32 $0, %cluster_ctarank;", "=r", [], tl.int32, pure=True)


@register_compiler_impl("cluster_size_1d", *NVIDIA)
def cluster_size_1d(_semantic: Any) -> tl.tensor:
    """The number of CTAs in the cluster (``%cluster_nctarank``)."""
    _sm90("cluster_size_1d", _semantic)
    return _asm(_semantic, "mov.u32 $0, %cluster_nctarank;", "=r", [], tl.int32, pure=True)


@register_compiler_impl("thread_id", *NVIDIA)
def thread_id(_semantic: Any, axis: Any) -> tl.tensor:
    """The thread's index in the CTA along ``axis`` (``%tid``).

    Emitted impure: a pure read could be merged with one outside a task and reach the task as a captured
    value of another partition's thread.
    """
    op = "thread_id"
    a = _c(axis)
    if a not in (0, 1, 2) or isinstance(a, bool):
        raise UtlxCompileError(op, f"axis must be 0, 1 or 2, got {_show(axis)}")
    return _asm(_semantic, f"mov.u32 $0, %tid.{'xyz'[a]};", "=r", [], tl.int32, pure=False)


@register_compiler_impl("clock64", *NVIDIA)
def clock64(_semantic: Any) -> tl.tensor:
    """The SM's 64-bit cycle counter (``%clock64``)."""
    return _asm(_semantic, "mov.u64 $0, %clock64;", "=l", [], tl.int64, pure=False)


@register_compiler_impl("vote_ballot_sync", *NVIDIA)
def vote_ballot_sync(_semantic: Any, mask: Any, pred: Any) -> tl.tensor:
    """``vote.sync.ballot.b32``: bit i of the result is lane i's ``pred`` (lanes in ``mask`` take part).

    A tensor ``pred`` votes element by element: each thread's k-th element against the k-th elements of
    the other lanes of its warp.
    """
    op = "vote_ballot_sync"
    m = _c(mask)
    if not isinstance(m, int) or isinstance(m, bool) or not 0 <= m <= 0xFFFFFFFF:
        raise UtlxCompileError(op, f"'mask' must be a compile-time 32-bit lane mask, got {_show(mask)}")
    p = _c(pred)
    if isinstance(p, (bool, int)):
        p = _semantic.to_tensor(bool(p))
    if not isinstance(p, tl.tensor):
        raise UtlxCompileError(op, f"'pred' must be a boolean scalar or tensor, got {_show(pred)}")
    p32 = _semantic.cast(p, tl.int32)
    b = _semantic.builder
    text = f"{{ .reg .pred p; setp.ne.b32 p, $1, 0; vote.sync.ballot.b32 $0, p, {m:#x}; }}"
    ty = p32.type.with_element_ty(tl.int32) if p32.type.is_block() else tl.int32
    res = b.create_inline_asm(text, "=r,r", [p32.handle], [ty.to_ir(b)], False, 1)
    return tl.tensor(res.get_result(0), ty)
