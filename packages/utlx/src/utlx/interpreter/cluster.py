"""Thread-block clusters under the interpreter: the CTAs of one cluster run together, as cooperative threads.

Why: Triton's interpreter runs one program after another, but the CTAs of a cluster talk to each other (an
arrive on a peer's mbarrier, a store into a peer's shared memory, a cluster barrier, a 2-CTA tcgen05 MMA that
reads both CTAs' operands): running them one after another deadlocks on correct kernels.

How: a launch with ``ctas_per_cga=(cx, cy, cz)`` of more than one CTA (the keyword the autotuner's configs or the
caller pass; :func:`take_launch_kwargs` takes it out before the interpreter's grid loop drops it) records the shape.
The kernel entry starts with a check (``utlx.interpreter.entry.skip_program``, inserted by the interpreter's AST
rewrite with CLC's): when the grid loop reaches the first CTA of a cluster, that call runs every CTA of the cluster,
each in its own thread under a :class:`ClusterScheduler` (one thread runs at a time, switching when a CTA blocks, as
:mod:`utlx.interpreter.tasks` does for warp-specialized tasks), and skips its own body; the grid loop then skips the
cluster's other CTAs. A CTA whose warp-specialized tasks are all blocked blocks at the cluster level; every CTA
blocked is a deadlock naming each CTA's wait and line.

CTAs are ranked as on the GPU (``%cluster_ctarank``): x fastest, then y, then z. Shared memory is per CTA
(each CTA's ``local_alloc`` makes its own buffers); a remote op names the peer's copy of a local buffer or
barrier by its creation order (:func:`peer_of`): every CTA runs the same code, so the n-th allocation of one CTA
is the n-th of the other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from utlx import compat as _compat
from utlx.interpreter import state as _state
from utlx.interpreter.coop import CoopScheduler, Fiber
from utlx.interpreter.errors import UtlxDeadlockError, UtlxHazardError, UtlxInterpreterError, kernel_location, where

_KWARG = "ctas_per_cga"
_shape: dict[str, tuple[int, int, int]] = {}  # "pending": set by the launch, taken by the grid loop
_thread = threading.local()


def take_launch_kwargs(kwargs: dict[str, Any]) -> None:
    """Record (and drop) the launch's ``ctas_per_cga`` before the interpreter runs its grid."""
    from utlx.language.clusters import cluster_shape

    value = kwargs.pop(_KWARG, None)
    dims = (1, 1, 1) if value is None else cluster_shape(value, "launching under TRITON_INTERPRET=1")
    _shape["pending"] = dims


def launch_shape() -> tuple[int, int, int]:
    """The cluster shape of the running launch ((1, 1, 1): no clusters)."""
    return _shape.get("pending", (1, 1, 1))


def end_launch() -> None:
    _shape.pop("pending", None)


_state.on_end_launch(end_launch)


# ---------------------------------------------------------------------------------- ranks


def rank_of(idx: tuple[int, int, int]) -> int:
    cx, cy, cz = launch_shape()
    return idx[0] % cx + cx * (idx[1] % cy + cy * (idx[2] % cz))


def size() -> int:
    cx, cy, cz = launch_shape()
    return cx * cy * cz


def cta_rank() -> int:
    """``cluster_cta_rank()`` of the running CTA."""
    return rank_of(tuple(_compat.grid_idx()))


def program_of_rank(rank: int, op: str) -> tuple[int, int, int]:
    """Program id of cluster CTA ``rank`` in the running CTA's cluster (out of range: an error naming ``op``)."""
    n = size()
    if not 0 <= rank < n:
        raise UtlxInterpreterError(f"{op}: cluster CTA rank {rank} is out of range for a cluster of {n} CTA(s) "
                                   f"(ctas_per_cga={launch_shape()}){where(kernel_location(2))}")
    cx, cy, _ = launch_shape()
    x, y, z = _compat.grid_idx()
    base = (x - x % cx, y - y % cy, z - z % launch_shape()[2])
    return (base[0] + rank % cx, base[1] + (rank // cx) % cy, base[2] + rank // (cx * cy))


def peer_state(rank: int, op: str) -> _state.ProgramState:
    """State of cluster CTA ``rank`` (it must have started: CTAs of a cluster run together)."""
    return _state.state_of(program_of_rank(rank, op))


def peer_of(obj: Any, rank: int, op: str) -> Any:
    """The copy of ``obj`` (an allocation or barrier array this CTA made) in cluster CTA ``rank``."""
    me = _state.current()
    target = peer_state(rank, op)
    if target is me:
        return obj
    ordinal = me.ordinal(obj)
    if ordinal is None:
        raise UtlxInterpreterError(f"{op}: {getattr(obj, 'name', obj)!r} was not allocated by this CTA, so it has "
                                   f"no copy in CTA {rank}{where(kernel_location(2))}")
    while len(target.shared) <= ordinal:  # the peer's code has not reached it yet: its memory exists already
        target.place_peer_copy(_copy_for(me.shared[len(target.shared)], me, target))
    peer = target.shared[ordinal]
    if type(peer) is not type(obj) or _layout(peer) != _layout(obj):
        raise UtlxHazardError(f"{op}: {getattr(obj, 'name', obj)} has no matching copy in cluster CTA {rank} (its "
                              f"allocation number {ordinal} is {getattr(peer, 'name', peer)!r}): every CTA of a "
                              f"cluster must allocate the same buffers in the same order{where(kernel_location(2))}")
    return peer


def _layout(obj: Any) -> tuple[Any, ...]:
    from utlx.interpreter.barriers import BarrierArray

    if isinstance(obj, BarrierArray):
        return (len(obj), obj.barriers[0].arrive_count if len(obj) else 0)
    return (tuple(obj.shape), str(obj.dtype), obj.num, obj.storage)


def _copy_for(obj: Any, me: _state.ProgramState, target: _state.ProgramState) -> Any:
    """A fresh copy of ``obj`` (this CTA's) for a peer that has not made its own yet."""
    from utlx.interpreter.barriers import BarrierArray
    from utlx.interpreter.memory import Allocation

    if isinstance(obj, BarrierArray):
        return BarrierArray(obj.name, len(obj), obj.barriers[0].arrive_count if len(obj) else 1)
    reuse = None
    if obj.reuse is not None:
        ordinal = me.ordinal(obj.reuse)
        reuse = target.shared[ordinal] if ordinal is not None and ordinal < len(target.shared) else None
    return Allocation(obj.shape, obj.dtype, obj.num, obj.storage, obj.name, obj.location, reuse=reuse)


# ---------------------------------------------------------------------------------- kernel entry


def _kernel_function(code: Any) -> Callable[..., Any] | None:
    for fn in _compat.interpreted_function_class().rewritten_fn.values():
        if getattr(fn, "__code__", None) is code:
            return fn
    return None


def in_cluster() -> bool:
    """Is a cluster's CTA (or one of its tasks) running, rather than the interpreter's grid loop?"""
    return _state.in_cluster()


def run_cluster(args: dict[str, Any], kernel_code: Any) -> None:
    """Run every CTA of the cluster whose rank-0 CTA the grid loop reached (``kernel_code``: the kernel entry's
    code object, to find its interpreted function), together, then put the grid loop's program id back."""
    idx = tuple(_compat.grid_idx())
    fn = _kernel_function(kernel_code)
    if fn is None:
        raise UtlxInterpreterError("cluster launch under TRITON_INTERPRET=1: the kernel's interpreted function was "
                                   "not found")
    grid = tuple(_compat.interpreter_builder().grid_dim)
    shape = launch_shape()
    if any(g % c for g, c in zip(grid, shape, strict=True)):
        raise UtlxInterpreterError(f"cluster launch: the grid {grid} is not a multiple of ctas_per_cga={shape} in "
                                   f"every dimension")
    ctas = [(idx[0] + x, idx[1] + y, idx[2] + z)
            for z in range(shape[2]) for y in range(shape[1]) for x in range(shape[0])]
    sched = ClusterScheduler(fn, dict(args), ctas)
    _state.cluster_running.append(sched)
    try:
        sched.run()
    finally:
        _state.cluster_running.remove(sched)
        _compat.interpreter_builder().set_grid_idx(*idx)
        _state.end_cluster()


# ---------------------------------------------------------------------------------- scheduler


class CtaThread(Fiber):
    """One CTA of the running cluster, in its own cooperatively scheduled thread."""

    def __init__(self, sched: ClusterScheduler, idx: tuple[int, int, int]) -> None:
        self.idx = idx
        self.rank = rank_of(idx)
        super().__init__(sched, f"CTA {idx} (cluster rank {self.rank})")

    def main(self) -> None:
        sched = self.sched
        assert isinstance(sched, ClusterScheduler)
        _thread.cta = self
        sched.fn(**sched.args)


class ClusterScheduler(CoopScheduler):
    """Runs the CTAs of one cluster, one thread at a time, switching when a CTA blocks."""

    def __init__(self, fn: Callable[..., Any], args: dict[str, Any], ctas: list[tuple[int, int, int]]) -> None:
        super().__init__()
        self.fn = fn
        self.args = args
        self.threads = [CtaThread(self, idx) for idx in ctas]

    def before_switch(self, fiber: Fiber) -> None:
        assert isinstance(fiber, CtaThread)
        _compat.interpreter_builder().set_grid_idx(*fiber.idx)  # the program id the CTA's ops see

    def stuck(self, alive: list[Fiber]) -> bool:
        lines = "\n".join(f"  {t.name}: {t.blocked[1]()}" for t in alive if t.blocked)
        raise UtlxDeadlockError(f"deadlock in a cluster of {len(self.threads)} CTAs: every unfinished CTA waits for "
                                f"something no CTA can still do:\n{lines}")


def block_cta(ready: Callable[[], bool], describe: Callable[[], str]) -> bool:
    """Park the running CTA (not a task of it) until ``ready()``; False when no cluster runs (nothing to wait
    for)."""
    cta = getattr(_thread, "cta", None)
    if cta is None or threading.current_thread() is not cta.thread:
        return False
    cta.sched.block(cta, ready, describe)
    return True


# ---------------------------------------------------------------------------------- cluster barrier


class ClusterBarrier:
    """``cluster_barrier()``: completes when every CTA of the cluster arrived, then resets."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.arrived: set[int] = set()
        self.generation = 0

    def arrive(self, rank: int) -> int:
        generation = self.generation
        self.arrived.add(rank)
        if len(self.arrived) == self.n:
            self.arrived.clear()
            self.generation += 1
        return generation

    def describe(self) -> str:
        return f"{len(self.arrived)} of {self.n} CTAs arrived (ranks {sorted(self.arrived)})"


def cluster_barrier() -> ClusterBarrier:
    """The running cluster's barrier (one per cluster, made by the first CTA that uses it)."""
    key = ("cluster_barrier", *program_of_rank(0, "cluster_barrier"))
    return _state.shared_cluster_object(key, lambda: ClusterBarrier(size()))
