"""Cooperative threads: what the warp-specialization scheduler (``tasks``) and the cluster scheduler (``cluster``)
share.

Why threads that take turns: a body that waits for another body (a barrier only the other arrives on) cannot run to
completion first, so each body runs in its own thread, but only one runs at a time: it runs until it blocks on a
condition (or finishes), then the scheduler resumes the next body whose condition now holds, round-robin. That is
deterministic and turns "everybody waits" into a report (:meth:`CoopScheduler.stuck`) instead of a hang.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

#: What a blocked body waits for, and how to describe that in a deadlock report.
Blocked = tuple[Callable[[], bool], Callable[[], str]]


class Killed(BaseException):
    """Unwinds a parked thread when its scheduler is aborted (not an Exception: nothing may catch it)."""


class Fiber:
    """One body in its own cooperatively scheduled thread; subclasses define :meth:`main`."""

    def __init__(self, sched: CoopScheduler, name: str) -> None:
        self.sched = sched
        self.name = name
        self.blocked: Blocked | None = None
        self.done = False
        self.killed = False
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"utlx {name}", daemon=True)

    def main(self) -> None:
        raise NotImplementedError

    def runnable(self) -> bool:
        return not self.done and (self.blocked is None or self.blocked[0]())

    def _run(self) -> None:
        sched = self.sched
        with sched.cv:
            sched.cv.wait_for(lambda: sched.turn is self)
        try:
            if not self.killed:
                self.main()
        except Killed:
            pass
        except BaseException as exc:  # handed to the scheduler, re-raised in its thread
            self.error = exc
        finally:
            self.done = True
            with sched.cv:
                sched.turn = sched
                sched.cv.notify_all()


class CoopScheduler:
    """Runs its fibers one at a time, switching when the running one blocks; subclasses say what to do when every
    unfinished fiber is blocked (:meth:`stuck`)."""

    def __init__(self) -> None:
        self.cv = threading.Condition()
        self.turn: object = self
        self.threads: list[Fiber] = []

    def before_switch(self, fiber: Fiber) -> None:
        """Called in the scheduler's thread before ``fiber`` gets the turn."""

    def stuck(self, alive: list[Fiber]) -> bool:
        """Every fiber of ``alive`` is blocked: raise the deadlock, or return True once one may be runnable."""
        raise NotImplementedError

    def _switch_to(self, fiber: Fiber) -> None:
        self.before_switch(fiber)
        with self.cv:
            self.turn = fiber
            self.cv.notify_all()
            self.cv.wait_for(lambda: self.turn is self)

    def run(self) -> None:
        for t in self.threads:
            t.thread.start()
        n, nxt = len(self.threads), 0
        try:
            while True:
                alive = [t for t in self.threads if not t.done]
                if not alive:
                    return
                pick = None
                for k in range(n):
                    t = self.threads[(nxt + k) % n]
                    if t.runnable():
                        pick, nxt = t, (nxt + k + 1) % n
                        break
                if pick is None:
                    self.stuck(alive)
                    continue
                self._switch_to(pick)
                if pick.error is not None:
                    raise pick.error
        finally:
            for t in self.threads:
                if not t.done:
                    t.killed = True
                    self._switch_to(t)
            for t in self.threads:
                t.thread.join(timeout=5)

    def block(self, fiber: Fiber, ready: Callable[[], bool], describe: Callable[[], str]) -> None:
        """Park ``fiber`` (called from its thread) until ``ready()``."""
        fiber.blocked = (ready, describe)
        with self.cv:
            self.turn = self
            self.cv.notify_all()
            self.cv.wait_for(lambda: self.turn is fiber)
        fiber.blocked = None
        if fiber.killed:
            raise Killed()
