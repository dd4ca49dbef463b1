"""Choosing the fastest correct candidate: the selection every utlx host API tunes with.

Why a module of its own: ``utlx.matmul`` (GEMM kernels and their configurations) and ``utlx.attention`` (flash
attention schedules) tune the same way, and neither API should stand on the other. A candidate is anything with a
string ``id`` (:class:`Tunable`: ``utlx.matmul.Candidate``, the attention schedules); the checks and timers are
callables, so the selection is tested on the CPU with mock timings. The winners are kept on disk by
:mod:`utlx.tuning_cache`.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class Tunable(Protocol):
    """What the selection needs of a candidate: a stable id (the disk cache stores it)."""

    @property
    def id(self) -> str: ...


# --------------------------------------------------------------------------------------------------
# Selection (pure logic: the checks and timers are callables)


@dataclass
class CandidateResult:
    """What tuning learnt about one candidate."""

    id: str
    status: str = "pending"  # ok | compile-error | wrong-result | timing-error | skipped
    detail: str = ""
    screen_ms: float | None = None
    final_ms: list[float] = field(default_factory=list)

    @property
    def ms(self) -> float | None:
        """Best estimate: the median of the final rounds, else the screening time."""
        if self.final_ms:
            return statistics.median(self.final_ms)
        return self.screen_ms

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "detail": self.detail, "screen_ms": self.screen_ms,
                "final_ms": self.final_ms, "ms": self.ms}


@dataclass
class TuneReport:
    """The outcome of choosing a kernel for one problem."""

    winner: Tunable | None
    results: list[CandidateResult]
    source: str  # "tuned" | "disk-cache"
    elapsed_s: float = 0.0
    #: the budget ran out before every step ran (candidates skipped, finals cut): the disk cache marks the
    #: winner partial, and a later process tunes again
    partial: bool = False

    @property
    def winner_ms(self) -> float | None:
        if self.winner is None:
            return None
        return next((r.ms for r in self.results if r.id == self.winner.id), None)

    def to_dict(self) -> dict[str, Any]:
        return {"winner": self.winner.id if self.winner else None, "winner_ms": self.winner_ms,
                "source": self.source, "elapsed_s": round(self.elapsed_s, 3), "partial": self.partial,
                "candidates": [r.to_dict() for r in self.results]}


def select_best(cands: Sequence[Tunable], check: Callable[[Tunable], str | None],
                timer: Callable[[Tunable, float], float], *, screen_rep_ms: float = 25.0,
                final_rep_ms: float = 60.0, top_k: int = 4, within: float = 0.03, rounds: int = 3,
                warmup_ms: float = 100.0, budget_s: float | None = None,
                clock: Callable[[], float] = time.monotonic) -> TuneReport:
    """Choose the fastest correct candidate.

    1. ``check(cand)`` for every candidate first (compiles it; returns an error text for a wrong result,
       raises for a compile/launch failure): nothing is timed while compiles are still happening.
    2. ``timer(cand, rep_ms)`` once per survivor (screening), after one discarded ``timer(first, warmup_ms)``
       (0: none). Why the warm-up: a power-capped GPU (the H200 runs these GEMMs at its 700 W cap) is fast
       for a while after the idle time of the checks, and the first candidate screened read up to 15% faster
       than in its final rounds, which took a finalist's place from a candidate that was really faster.
    3. The ``top_k`` fastest, plus any within ``within`` of the best, are timed ``rounds`` more times in
       rotating order; the winner has the lowest median of those.
    Past ``budget_s`` the remaining steps are skipped (at least one candidate is always checked and,
    when several pass, the winner is the best measured so far).
    """
    check_budget(budget_s)
    start = clock()
    cut: list[bool] = []  # set once a step was skipped because the budget ran out

    def over() -> bool:
        if budget_s is not None and clock() - start > budget_s:
            cut.append(True)
            return True
        return False

    results = {c.id: CandidateResult(c.id) for c in cands}
    ok: list[Tunable] = []
    for cand in cands:
        res = results[cand.id]
        if ok and over():
            res.status, res.detail = "skipped", "tuning budget spent"
            continue
        try:
            err = check(cand)
        except Exception as exc:  # compile error, launch error, resource limits
            res.status, res.detail = "compile-error", f"{type(exc).__name__}: {exc}"[:500]
            continue
        if err:
            res.status, res.detail = "wrong-result", err[:500]
            continue
        res.status = "ok"
        ok.append(cand)

    timed: list[Tunable] = []
    if len(ok) > 1:
        if warmup_ms > 0:
            with contextlib.suppress(Exception):  # a failing candidate is reported by its screening below
                timer(ok[0], warmup_ms)
        for cand in ok:
            if timed and over():
                break
            try:
                results[cand.id].screen_ms = float(timer(cand, screen_rep_ms))
            except Exception as exc:
                results[cand.id].status, results[cand.id].detail = "timing-error", f"{type(exc).__name__}: {exc}"[:500]
                continue
            timed.append(cand)
        timed.sort(key=lambda c: results[c.id].screen_ms)
        if timed:
            best = results[timed[0].id].screen_ms
            finalists = [c for i, c in enumerate(timed) if i < top_k or results[c.id].screen_ms <= best * (1 + within)]
            if len(finalists) > 1:
                for r in range(rounds):
                    if over():
                        break
                    order = finalists[r % len(finalists):] + finalists[:r % len(finalists)]
                    for cand in order:
                        try:
                            results[cand.id].final_ms.append(float(timer(cand, final_rep_ms)))
                        except Exception as exc:  # keep its earlier numbers; it simply gets fewer samples
                            results[cand.id].detail = f"final round: {type(exc).__name__}: {exc}"[:500]
    elif ok:
        timed = ok

    def score(c: Tunable) -> float:
        ms = results[c.id].ms
        return ms if ms is not None and math.isfinite(ms) else math.inf

    # Once finals ran, only finalists compete: a non-finalist has one short screening sample, which must not
    # beat the finalists' medians of longer runs (on the H200 a 5th-best screen once won that way).
    pool = [c for c in timed if results[c.id].final_ms] or timed
    winner = min(pool, key=score) if pool else (ok[0] if ok else None)
    return TuneReport(winner, [results[c.id] for c in cands], "tuned", clock() - start, partial=bool(cut))


def check_budget(budget_s: float | None, name: str = "budget_s") -> None:
    """A tuning budget is None (no limit) or a number of seconds >= 0; anything else is refused by name
    (a negative or NaN budget used to be accepted: NaN never ran out, a negative one cut every tuning)."""
    if budget_s is None:
        return
    if isinstance(budget_s, bool) or not isinstance(budget_s, int | float) or math.isnan(budget_s) or budget_s < 0:
        raise ValueError(f"utlx tuning: {name} must be a number of seconds >= 0 (or None: no limit), got {budget_s!r}")
