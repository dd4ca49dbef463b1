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
from dataclasses import dataclass, field

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

    # -- checks --------------------------------------------------------------------------------------
    def check_read(self, view: BufferView, op: str, loc: SourceLocation | None) -> None:
        """``op`` reads ``view``: no copy into it may still be in flight."""
        if not self.checks:
            return
        region = view.region
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

    def check_write(self, view: BufferView, op: str, loc: SourceLocation | None) -> None:
        """``op`` writes ``view``: no async op may still read it, and no copy may still be writing it."""
        if not self.checks:
            return
        region = view.region
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

    # -- completions -------------------------------------------------------------------------------
    def barrier_observed(self, barrier: Barrier) -> None:
        """A wait on ``barrier`` passed: copies tracked by every completed phase are now visible."""
        done = barrier.completions
        self.tma_loads = [f for f in self.tma_loads if not (f.barrier is barrier and f.completion <= done)]


_states: dict[tuple[object, ...], ProgramState] = {}
_launch = {"id": 0, "active": 0}


def begin_launch() -> None:
    _launch["id"] += 1
    _launch["active"] += 1
    _states.clear()


def end_launch() -> None:
    _launch["active"] = max(0, _launch["active"] - 1)
    _states.clear()


def launch_active() -> bool:
    return _launch["active"] > 0


def launch_id() -> int:
    """Which launch is running (a new number per kernel launch): state kept across its programs is keyed by it."""
    return _launch["id"]


def current() -> ProgramState:
    """State of the program id now being interpreted (a new one for each program of each launch)."""
    key = (_launch["id"], _compat.grid_idx())
    state = _states.get(key)
    if state is None:
        _states.clear()  # programs run one after another: the previous one is finished
        state = _states[key] = ProgramState(key)
    return state
