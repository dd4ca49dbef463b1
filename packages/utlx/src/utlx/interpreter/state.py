"""Per-program model of what the hardware does asynchronously, and the hazard checks over it.

Data moves eagerly (a copy writes its destination when issued, a dot computes when issued) so results are
right whenever the kernel is; what the model keeps is *which operations are still in flight*: cp.async
copies per commit group, TMA copies per mbarrier phase, wgmma dots, TMA stores, and ``local_store`` writes
not yet fenced for the async proxy. Every read or write of a buffer is checked against that set, which is
how a race that the hardware would turn into wrong numbers becomes an error naming the op and line.

cp.async groups and wgmma groups belong to the issuing warps, so they are kept per task; buffers,
barriers and TMA copies belong to the CTA, so overlap checks look at every task's in-flight work.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from utlx import compat as _compat
from utlx.interpreter.barriers import Barrier
from utlx.interpreter.errors import SourceLocation, UtlxHazardError, where
from utlx.interpreter.memory import BufferView, Region
from utlx.settings import UtlxSettings, settings

#: Set to 0/false/off to turn the hazard checker off (synchronisation itself is still modelled).
CHECKS_ENV = UtlxSettings.hazard_checks.var


def checks_enabled() -> bool:
    return settings.hazard_checks


@dataclass
class InFlight:
    """One asynchronous operation touching a buffer region."""

    kind: str
    region: Region
    name: str
    loc: SourceLocation | None
    barrier: Barrier | None = None
    completion: int = 0  # barrier-tracked copies: the phase completion that makes them visible

    def describe(self) -> str:
        return f"the {self.kind} into {self.name} issued{where(self.loc)}"


@dataclass
class TaskAsync:
    """Async queues of one task (warp group): they are what its wait ops count."""

    uncommitted: list[InFlight] = field(default_factory=list)
    groups: deque[list[InFlight]] = field(default_factory=deque)
    dots: deque[list[InFlight]] = field(default_factory=deque)
    stores: deque[list[InFlight]] = field(default_factory=deque)
    tcgen05: list[Tcgen05Op] = field(default_factory=list)  # issued tcgen05 MMAs not yet known complete
    tcgen05_issued: int = 0  # sequence number of the task's last tcgen05 op


@dataclass
class Tcgen05Op:
    """One asynchronous tcgen05 MMA: what it reads (A, B) and writes (the TMEM accumulator) until it completes.

    Why a sequence number: tcgen05 ops issued by one thread execute in issue order, and a ``tcgen05.commit``
    (explicit, or the one an MMA's ``mBarriers`` imply) tracks every earlier one of that thread, so the
    completion a barrier signals retires a *prefix* of the task's ops.
    """

    seq: int
    reads: list[InFlight]
    writes: list[InFlight]


@dataclass
class Tcgen05Signal:
    """A commit of task ``task``'s tcgen05 ops up to ``seq``, arriving on ``barrier`` in phase ``completion``."""

    barrier: Barrier
    completion: int
    task: object
    seq: int


_thread = threading.local()


def current_task_key() -> object:
    """Identity of the running task (the thread's task object, or "main" outside warp specialization)."""
    return getattr(_thread, "task", None) or "main"


def set_current_task(task: object | None) -> None:
    _thread.task = task


class ProgramState:
    """Everything one program id (CTA) owns while the interpreter runs it."""

    def __init__(self, key: tuple[object, ...]) -> None:
        self.key = key
        self.checks = checks_enabled()
        self.tasks: dict[object, TaskAsync] = {}
        self.tma_loads: list[InFlight] = []
        self.unfenced: list[InFlight] = []
        self.regions: list[object] = []  # open async_tasks regions (tasks.TaskRegion)
        self.named_barriers: dict[int, object] = {}  # bar id -> barriers.NamedBarrier
        self.tcgen05_signals: list[Tcgen05Signal] = []
        self.shared: list[object] = []  # allocations and barrier arrays in creation order (peers map by position)
        self._ordinals: dict[int, int] = {}
        self._made = 0  # how many of ``shared`` this CTA's own code has reached

    # -- what the CTA allocated (a cluster peer names its copy by position) ---------------------------
    def allocated(self, obj: Any) -> Any:
        """Record ``obj`` (an allocation or barrier array the CTA just made) and return what the CTA uses: a copy a
        cluster peer already made in its place (shared memory exists from the launch on, so a peer may store into
        a buffer this CTA's code has not reached yet), else ``obj``."""
        if len(self.shared) > self._made:
            made = self.shared[self._made]
            self._made += 1
            return made
        self._ordinals[id(obj)] = len(self.shared)
        self.shared.append(obj)
        self._made += 1
        return obj

    def place_peer_copy(self, obj: object) -> None:
        """A cluster peer touched the next buffer of this CTA's creation order before this CTA made it."""
        self._ordinals[id(obj)] = len(self.shared)
        self.shared.append(obj)

    def ordinal(self, obj: object) -> int | None:
        return self._ordinals.get(id(obj))

    # -- queues ------------------------------------------------------------------------------------
    def task(self) -> TaskAsync:
        key = current_task_key()
        if key not in self.tasks:
            self.tasks[key] = TaskAsync()
        return self.tasks[key]

    def _all_copies(self) -> list[InFlight]:
        out = list(self.tma_loads)
        for t in self.tasks.values():
            out += t.uncommitted
            for g in t.groups:
                out += g
        return out

    def _all(self, attr: str) -> list[InFlight]:
        return [f for t in self.tasks.values() for group in getattr(t, attr) for f in group]

    def _tcgen05(self, same_task_ordered: bool, *attrs: str) -> list[InFlight]:
        """In-flight tcgen05 accesses; a tcgen05 op skips its own task's (they run before it, in order)."""
        me = current_task_key()
        # a 2-CTA MMA the pair's leader issues is ordered after the leader's earlier ones in this CTA too
        peer_pipe = current() is not self
        return [f for key, t in self.tasks.items()
                if not (same_task_ordered and (key == me or (peer_pipe and isinstance(key, tuple)
                                                             and key[:1] == ("peer tcgen05",))))
                for op in t.tcgen05 for attr in attrs for f in getattr(op, attr)]

    # -- checks --------------------------------------------------------------------------------------
    def check_read(self, view: BufferView, op: str, loc: SourceLocation | None, tcgen05: bool = False) -> None:
        """``op`` reads ``view``: no copy into it may still be in flight, and no tcgen05 MMA may still be writing
        it (unless ``op`` is itself a tcgen05 op of the same task: those execute in issue order)."""
        if not self.checks:
            return
        region = view.region
        for f in self._tcgen05(tcgen05, "writes"):
            if f.region.overlaps(region):
                raise UtlxHazardError(
                    f"{op} reads {view.name}{where(loc)} while {f.describe()} may still be writing it (wait on a "
                    f"barrier of that MMA's mBarriers, or of a later tcgen05_commit, first)"
                )
        for t in self.tasks.values():
            for f in t.uncommitted:
                if f.region.overlaps(region):
                    raise UtlxHazardError(
                        f"{op} reads {view.name}{where(loc)} but {f.describe()} was never committed and waited for "
                        f"(call async_load_commit_group, then async_load_wait_group, before reading)"
                    )
            for g in t.groups:
                for f in g:
                    if f.region.overlaps(region):
                        raise UtlxHazardError(
                            f"{op} reads {view.name}{where(loc)} but {f.describe()} has not been waited for "
                            f"(its commit group is still pending: {len(t.groups)} group(s) in flight; lower the "
                            f"async_load_wait_group count)"
                        )
        for f in self.tma_loads:
            if f.region.overlaps(region):
                raise UtlxHazardError(
                    f"{op} reads {view.name}{where(loc)} but {f.describe()} has not been waited for "
                    f"(barrier_wait on {f.barrier.name if f.barrier else '?'} for the phase it completes first)"
                )

    def check_write(self, view: BufferView, op: str, loc: SourceLocation | None, tcgen05: bool = False) -> None:
        """``op`` writes ``view``: no async op may still read it, and no copy may still be writing it
        (``tcgen05``: ``op`` is a tcgen05 op, ordered after the issuing task's earlier ones)."""
        if not self.checks:
            return
        region = view.region
        for f in self._tcgen05(tcgen05, "reads", "writes"):
            if f.region.overlaps(region):
                raise UtlxHazardError(
                    f"{op} overwrites {view.name}{where(loc)} while {f.describe()} may still be using it (wait on a "
                    f"barrier of that MMA's mBarriers, or of a later tcgen05_commit, first)"
                )
        for f in self._all("dots"):
            if f.region.overlaps(region):
                raise UtlxHazardError(
                    f"{op} overwrites {view.name}{where(loc)} while the async_dot issued{where(f.loc)} still reads "
                    f"it (wait for that dot with async_dot_wait first)"
                )
        for f in self._all("stores"):
            if f.region.overlaps(region):
                raise UtlxHazardError(
                    f"{op} overwrites {view.name}{where(loc)} while the {f.kind} issued{where(f.loc)} still reads "
                    f"it (call async_descriptor_store_wait first)"
                )
        for f in self._all_copies():
            if f.region.overlaps(region):
                raise UtlxHazardError(
                    f"{op} writes {view.name}{where(loc)} while {f.describe()} is still writing it "
                    f"(wait for that copy first)"
                )

    def check_fenced(self, view: BufferView, op: str, loc: SourceLocation | None) -> None:
        """An async-proxy read (TMA store) of ``view`` needs earlier ``local_store`` writes fenced."""
        if not self.checks:
            return
        for f in self.unfenced:
            if f.region.overlaps(view.region):
                raise UtlxHazardError(
                    f"{op} reads {view.name}{where(loc)} written by the local_store{where(f.loc)} with no "
                    f"fence_async_shared() in between (the TMA engine may read stale shared memory)"
                )

    def fence_for(self, view: BufferView) -> None:
        """A fence.proxy.async the compiler inserts before an async-proxy read of ``view``."""
        self.unfenced = [f for f in self.unfenced if not f.region.overlaps(view.region)]

    # -- completions -------------------------------------------------------------------------------
    def barrier_observed(self, barrier: Barrier) -> None:
        """A wait on ``barrier`` passed: copies tracked by every completed phase are now visible."""
        done = barrier.completions
        self.tma_loads = [f for f in self.tma_loads if not (f.barrier is barrier and f.completion <= done)]
        keep = []
        for sig in self.tcgen05_signals:
            if sig.barrier is barrier and sig.completion <= done:
                task = self.tasks.get(sig.task)
                if task is not None:
                    task.tcgen05 = [op for op in task.tcgen05 if op.seq > sig.seq]
            else:
                keep.append(sig)
        self.tcgen05_signals = keep

    def tcgen05_issue(self, reads: list[InFlight], writes: list[InFlight]) -> None:
        """The running task issued an asynchronous tcgen05 MMA."""
        task = self.task()
        task.tcgen05_issued += 1
        task.tcgen05.append(Tcgen05Op(task.tcgen05_issued, reads, writes))

    def remote_tcgen05(self, reads: list[InFlight], writes: InFlight, barriers: list[Barrier], op_loc: object) -> None:
        """A cluster peer's 2-CTA MMA reads and writes this CTA's buffers until it arrives on ``barriers`` (this
        CTA's copies): tracked as a task of its own (the peer's tcgen05 pipe, ordered by its issue)."""
        key = ("peer tcgen05", id(self))
        task = self.tasks.setdefault(key, TaskAsync())
        task.tcgen05_issued += 1
        task.tcgen05.append(Tcgen05Op(task.tcgen05_issued, reads, [writes]))
        for bar in barriers:
            completion = bar.completions + 1
            bar.arrive(1, "async_dot", op_loc)  # type: ignore[arg-type]
            self.tcgen05_signals.append(Tcgen05Signal(bar, completion, key, task.tcgen05_issued))

    def tcgen05_commit(self, barrier: Barrier, op: str, loc: SourceLocation | None) -> None:
        """Arrive on ``barrier`` once every tcgen05 op the running task issued so far has completed.

        The data is already there (ops run eagerly), so the arrival happens now; what is recorded is which
        ops a wait observing that phase retires."""
        task = self.task()
        completion = barrier.completions + 1
        barrier.arrive(1, op, loc)
        if task.tcgen05:
            self.tcgen05_signals.append(Tcgen05Signal(barrier, completion, current_task_key(), task.tcgen05_issued))


_states: dict[tuple[object, ...], ProgramState] = {}
_cluster_objects: dict[tuple[object, ...], object] = {}
_launch = {"id": 0, "active": 0}


def begin_launch() -> None:
    _launch["id"] += 1
    _launch["active"] += 1
    _states.clear()


#: the cluster whose CTAs run now (utlx.interpreter.cluster appends and removes its scheduler; one at a time)
cluster_running: list[Any] = []
#: called when the last active launch ends (modules above this one register here: state imports none of them)
_end_launch_hooks: list[Callable[[], None]] = []


def on_end_launch(hook: Callable[[], None]) -> None:
    if hook not in _end_launch_hooks:
        _end_launch_hooks.append(hook)


def in_cluster() -> bool:
    """Is a cluster's CTA (or one of its tasks) running, rather than the interpreter's grid loop?"""
    return bool(cluster_running)


def end_launch() -> None:
    _launch["active"] = max(0, _launch["active"] - 1)
    _states.clear()
    _cluster_objects.clear()
    if not _launch["active"]:
        for hook in _end_launch_hooks:
            hook()


def end_cluster() -> None:
    """The CTAs of a cluster finished: forget their state."""
    _states.clear()
    _cluster_objects.clear()


def launch_active() -> bool:
    return _launch["active"] > 0


def launch_id() -> int:
    """Which launch is running (a new number per kernel launch): state kept across its programs is keyed by it."""
    return _launch["id"]


def current() -> ProgramState:
    """State of the program id now being interpreted (a new one for each program of each launch)."""
    key = (_launch["id"], tuple(_compat.grid_idx()))
    state = _states.get(key)
    if state is None:
        if not in_cluster():
            _states.clear()  # programs run one after another: the previous one is finished
        state = _states[key] = ProgramState(key)
    return state


def state_of(program: tuple[int, int, int]) -> ProgramState:
    """State of another CTA of the running cluster (made when that CTA has not run an op yet)."""
    key = (_launch["id"], tuple(program))
    state = _states.get(key)
    if state is None:
        state = _states[key] = ProgramState(key)
    return state


def shared_cluster_object(key: tuple[object, ...], make: Callable[[], object]) -> Any:
    """One object per cluster (``key`` names the cluster), made on first use: e.g. its cluster barrier."""
    if key not in _cluster_objects:
        _cluster_objects[key] = make()
    return _cluster_objects[key]
