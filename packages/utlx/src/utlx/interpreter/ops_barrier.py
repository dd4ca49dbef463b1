"""CPU bodies of the mbarrier ops (state machine in ``barriers``; blocking via ``tasks.wait_until``)."""

from __future__ import annotations

from typing import Any

from triton.language import core as tl

from utlx import compat as _compat
from utlx.interpreter import cluster as _cluster
from utlx.interpreter import state as _state
from utlx.interpreter.barriers import BarrierArray, NamedBarrier
from utlx.interpreter.errors import UtlxInterpreterError, kernel_location, where
from utlx.interpreter.ops_mem import _barrier, peer_barrier
from utlx.interpreter.tasks import wait_until, yield_now
from utlx.language._dispatch import register_interpreter_impl as impl

_unwrap = tl._unwrap_if_constexpr


def _name(default: str) -> str:
    loc = kernel_location(1)
    return (loc.assigned_name() if loc else None) or default


def _allocated(bars: BarrierArray) -> BarrierArray:
    """Record ``bars`` in the CTA's allocations (cluster peers name their copy by its position)."""
    return _state.current().allocated(bars)


@impl("alloc_barriers")
def alloc_barriers(_semantic: Any, num_barriers: Any, arrive_count: Any) -> BarrierArray:
    n = _compat.to_int(num_barriers, "alloc_barriers num_barriers")
    return _allocated(BarrierArray(_name("mbarriers"), n, _compat.to_int(arrive_count, "alloc_barriers arrive_count")))


@impl("alloc_warp_barrier")
def alloc_warp_barrier(_semantic: Any, num_barriers: Any, num_warps: Any, num_arrivals: Any) -> BarrierArray:
    # Every thread arrives on a warp barrier; the interpreter runs a task's threads as one, so one arrival
    # per task stands for all of them and the count per phase is ``num_arrivals``.
    n = _compat.to_int(num_barriers, "alloc_warp_barrier num_barriers")
    return _allocated(BarrierArray(_name("warp_barriers"), n,
                                   _compat.to_int(num_arrivals, "alloc_warp_barrier num_arrivals")))


@impl("barrier_expect_bytes")
def barrier_expect_bytes(_semantic: Any, bar: Any, size: Any, pred: Any) -> None:
    loc = kernel_location()
    if not _compat.to_bool(pred, "barrier_expect_bytes pred"):
        return
    b = _barrier(bar, "barrier_expect_bytes", "bar")
    nbytes = _compat.to_int(size, "barrier_expect_bytes size")
    if nbytes < 0:
        raise UtlxInterpreterError(f"barrier_expect_bytes: size must be >= 0, got {nbytes}{where(loc)}")
    b.expect(nbytes, "barrier_expect_bytes", loc)


@impl("barrier_arrive")
def barrier_arrive(_semantic: Any, bar: Any, arrive_count: Any, remote_cta_rank: Any, pred: Any = None) -> None:
    loc = kernel_location()
    if not _compat.to_bool(pred, "barrier_arrive pred"):
        return
    b = _barrier(bar, "barrier_arrive", "bar")
    if remote_cta_rank is not None:
        b = peer_barrier(b, _compat.to_int(remote_cta_rank, "barrier_arrive remote_cta_rank"), "barrier_arrive")
    b.arrive(_compat.to_int(arrive_count, "barrier_arrive arrive_count"), "barrier_arrive", loc)
    yield_now()


@impl("barrier_wait")
def barrier_wait(_semantic: Any, bar: Any, phase: Any, pred: Any) -> None:
    loc = kernel_location()
    if not _compat.to_bool(pred, "barrier_wait pred"):
        return
    b = _barrier(bar, "barrier_wait", "bar")
    parity = _compat.to_int(phase, "barrier_wait phase") & 1
    wait_until(
        lambda: b.phase_done(parity),
        lambda: f"barrier_wait on {b.name} for phase parity {parity}{where(loc)} ({b.describe()})",
        "barrier_wait",
        loc,
    )
    _state.current().barrier_observed(b)


# Threads a task contributes to a named barrier: its warps x 32. The default task runs on the kernel's
# warps, which the interpreter does not know: TLX kernels use 4 (one warp group).
_DEFAULT_TASK_WARPS = 4


def _task_threads() -> int:
    task = _state.current_task_key()
    warps = getattr(getattr(task, "spec", None), "num_warps", None) or _DEFAULT_TASK_WARPS
    return int(warps) * 32


def _named(bar: Any, arrive_count: Any, op: str) -> tuple[NamedBarrier, int]:
    bar_id = _compat.to_int(bar, f"{op} bar")
    count = _compat.to_int(arrive_count, f"{op} arrive_count")
    if not 0 <= bar_id < 16:
        raise UtlxInterpreterError(
            f"{op}: named barrier id must be in [0, 16), got {bar_id}{where(kernel_location(1))}"
        )
    named = _state.current().named_barriers.setdefault(bar_id, NamedBarrier(bar_id))
    return named, count


@impl("named_barrier_wait")
def named_barrier_wait(_semantic: Any, bar: Any, arrive_count: Any) -> None:
    loc = kernel_location()
    named, count = _named(bar, arrive_count, "named_barrier_wait")
    generation = named.generation
    named.arrive(_task_threads(), count, "named_barrier_wait", loc)
    wait_until(
        lambda: named.generation != generation,
        lambda: f"named_barrier_wait on barrier {named.bar_id} for {count} threads{where(loc)} ({named.describe()})",
        "named_barrier_wait",
        loc,
    )


@impl("named_barrier_arrive")
def named_barrier_arrive(_semantic: Any, bar: Any, arrive_count: Any) -> None:
    loc = kernel_location()
    named, count = _named(bar, arrive_count, "named_barrier_arrive")
    named.arrive(_task_threads(), count, "named_barrier_arrive", loc)
    yield_now()


@impl("cluster_barrier")
def cluster_barrier(_semantic: Any) -> None:
    """Wait until every CTA of the cluster arrived (a cluster of one CTA passes at once)."""
    if _cluster.size() == 1:
        return
    loc = kernel_location()
    barrier = _cluster.cluster_barrier()
    generation = barrier.arrive(_cluster.cta_rank())
    wait_until(lambda: barrier.generation != generation,
               lambda: f"cluster_barrier{where(loc)} ({barrier.describe()})", "cluster_barrier", loc)
