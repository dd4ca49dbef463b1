"""mbarriers under the interpreter: the phase/arrival/transaction-byte state machine of the hardware.

A phase completes when its pending arrivals reach zero AND its transaction count (bytes announced by
``barrier_expect_bytes`` minus bytes delivered by async copies) is zero; then the parity flips and the
arrivals reset. ``barrier_wait(bar, p)`` passes once the phase of parity ``p`` has completed, i.e. when the
current parity differs from ``p``: a fresh barrier passes ``wait(bar, 1)`` at once and blocks ``wait(bar, 0)``.
"""

from __future__ import annotations

from utlx.interpreter.errors import SourceLocation, UtlxHazardError, where


class Barrier:
    """One mbarrier."""

    def __init__(self, name: str, arrive_count: int) -> None:
        if arrive_count < 1:
            raise UtlxHazardError(f"alloc_barriers: arrive_count must be >= 1, got {arrive_count} for {name}")
        self.name = name
        self.arrive_count = arrive_count
        self.pending = arrive_count
        self.tx = 0
        self.completions = 0
        self.array: BarrierArray | None = None
        self.index = 0

    @property
    def parity(self) -> int:
        return self.completions & 1

    def phase_done(self, phase: int) -> bool:
        """Would ``barrier_wait(self, phase)`` return now?"""
        return self.parity != (phase & 1)

    def _maybe_complete(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.completions += 1
            self.pending = self.arrive_count

    def arrive(self, count: int, op: str, loc: SourceLocation | None) -> None:
        for _ in range(count):
            if self.pending == 0:
                raise UtlxHazardError(
                    f"{op}: barrier {self.name} gets more arrivals than its arrive_count ({self.arrive_count}) in "
                    f"phase {self.completions} while {self.tx} transaction bytes are outstanding{where(loc)}"
                )
            self.pending -= 1
            self._maybe_complete()

    def expect(self, nbytes: int, op: str, loc: SourceLocation | None) -> None:
        self.tx += nbytes
        self.arrive(1, op, loc)

    def deliver(self, nbytes: int) -> None:
        self.tx -= nbytes
        self._maybe_complete()

    def describe(self) -> str:
        state = f"{self.completions} phase(s) completed, {self.pending} of {self.arrive_count} arrivals pending"
        if self.tx > 0:
            state += f", {self.tx} announced bytes not delivered"
        elif self.tx < 0:
            state += f", {-self.tx} bytes delivered that no barrier_expect_bytes announced"
        return state

    def __repr__(self) -> str:
        return f"<utlx mbarrier {self.name}: {self.describe()}>"


class NamedBarrier:
    """A hardware named barrier (``bar.sync``/``bar.arrive``): completes when ``count`` threads arrived,
    then resets; waiters wait for the generation they arrived in to complete."""

    def __init__(self, bar_id: int) -> None:
        self.bar_id = bar_id
        self.arrived = 0
        self.expected: int | None = None
        self.generation = 0

    def arrive(self, threads: int, count: int, op: str, loc: SourceLocation | None) -> None:
        if self.expected is not None and self.arrived and count != self.expected:
            raise UtlxHazardError(f"{op}: named barrier {self.bar_id} used with {count} threads while {self.expected} "
                                  f"are expected in this generation{where(loc)}")
        self.expected = count
        self.arrived += threads
        if self.arrived > count:
            raise UtlxHazardError(f"{op}: named barrier {self.bar_id} got {self.arrived} thread arrivals but expects "
                                  f"{count}{where(loc)}")
        if self.arrived == count:
            self.arrived = 0
            self.expected = None
            self.generation += 1

    def describe(self) -> str:
        return f"{self.arrived} of {self.expected} threads arrived in generation {self.generation}"


class BarrierArray:
    """What ``alloc_barriers`` returns: index it with ``local_view``."""

    def __init__(self, name: str, num: int, arrive_count: int) -> None:
        self.name = name
        self.barriers = [Barrier(f"{name}[{i}]", arrive_count) for i in range(num)]
        for i, bar in enumerate(self.barriers):  # how a cluster peer finds its copy (``ops_mem.peer_barrier``)
            bar.array, bar.index = self, i

    def __len__(self) -> int:
        return len(self.barriers)

    def view(self, idx: object, op: str) -> Barrier:
        """Barrier ``idx`` (``local_view(bars, idx)`` or ``bars[idx]``); out of range is an error naming ``op``."""
        from utlx.compat import to_int
        from utlx.interpreter.errors import kernel_location

        i = to_int(idx, f"{op} barrier index")
        if not 0 <= i < len(self.barriers):
            raise UtlxHazardError(f"{op}: index {i} out of range for {self.name} ({len(self.barriers)} "
                                  f"barriers){where(kernel_location())}")
        return self.barriers[i]

    def __getitem__(self, idx: object) -> Barrier:
        return self.view(idx, "local_view (bars[i])")

    def __repr__(self) -> str:
        return f"<utlx mbarriers {self.name} x{len(self.barriers)}>"
