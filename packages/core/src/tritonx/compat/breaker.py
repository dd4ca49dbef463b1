"""A circuit breaker: after ``failures`` failed calls in a row, stop calling for ``cooldown`` seconds.

Why: a remote cache that is down or frozen must cost each compile at most a few timeouts, not one per
call forever. While open, :meth:`CircuitBreaker.allow` answers False at once; when the cool-down has
passed one caller (never several at once) is let through as a trial: its success closes the breaker,
its failure opens it for another cool-down. Thread-safe; one breaker is shared by every thread of a
process that talks to the same server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class CircuitBreaker:
    def __init__(self, failures: int, cooldown: float, clock: Callable[[], float] = time.monotonic) -> None:
        if failures < 1:
            raise ValueError(f"a circuit breaker needs failures >= 1, got {failures}")
        self.failures = failures
        self.cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._in_a_row = 0
        self._open_until: float | None = None
        self._trial = False
        #: how many times the breaker opened (a closed -> open or trial -> open transition)
        self.opened = 0

    @property
    def is_open(self) -> bool:
        with self._lock:
            return self._open_until is not None

    def allow(self) -> bool:
        """May the caller call the server now? (Each True must be followed by success() or failure().)"""
        with self._lock:
            if self._open_until is None:
                return True
            if self._trial or self._clock() < self._open_until:
                return False
            self._trial = True
            return True

    def success(self) -> None:
        with self._lock:
            self._in_a_row = 0
            self._open_until = None
            self._trial = False

    def failure(self) -> bool:
        """Record a failed call; True when this failure opened the breaker."""
        with self._lock:
            self._in_a_row += 1
            reopen = self._trial or (self._open_until is None and self._in_a_row >= self.failures)
            self._trial = False
            if reopen:
                self._open_until = self._clock() + self.cooldown
                self.opened += 1
            return reopen
