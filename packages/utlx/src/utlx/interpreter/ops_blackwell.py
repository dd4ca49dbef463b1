"""Blackwell (sm_100) semantics under the interpreter: tcgen05 MMA completion and commits.

TMEM is storage like shared memory (``local_alloc(storage=tmem)`` in ``ops_mem``). An ``async_dot`` into a TMEM
accumulator is a tcgen05 MMA: without ``mBarriers`` (and not ``force_async``) the compiled code waits for it at
once; otherwise it stays in flight, reading A/B and writing the accumulator, until a barrier it (or a later
``tcgen05_commit`` of the same task) arrives on is observed by a ``barrier_wait``. PTX orders the tcgen05 ops of
one thread: they execute in issue order and a commit tracks all earlier ones, so a later MMA of the same task
touching the same TMEM is no hazard, while a ``local_load`` of the accumulator before the wait is.

The data moves eagerly (results are right whenever the kernel is); the checker keeps what is in flight.

Block-scaled MMAs and their scale copies (``async_dot_scaled``, ``tmem_copy``) are in ``ops_scaled``.
"""

from __future__ import annotations

from typing import Any

from utlx.interpreter import state as _state
from utlx.interpreter.barriers import Barrier
from utlx.interpreter.errors import SourceLocation, UtlxInterpreterError, kernel_location
from utlx.interpreter.memory import BufferView
from utlx.interpreter.ops_mem import _barrier
from utlx.interpreter.state import InFlight
from utlx.language._dispatch import register_interpreter_impl


class UtlxNeedsBlackwellError(UtlxInterpreterError):
    """A Blackwell op the CPU interpreter does not model was run (kept for callers that catch it; no op raises it
    since the block-scaled MMAs are modelled)."""


def is_tmem(view: BufferView) -> bool:
    """Does ``view`` live in tensor memory (so an MMA into it is a tcgen05 MMA)?"""
    return view.alloc.storage == "tmem"


def tcgen05_issue(st: _state.ProgramState, reads: list[InFlight], write: InFlight, barriers: list[Barrier],
                  loc: SourceLocation | None) -> None:
    """Record an asynchronous tcgen05 MMA and the arrival its ``mBarriers`` make when it completes."""
    st.tcgen05_issue(reads, [write])
    for bar in barriers:
        st.tcgen05_commit(bar, "async_dot", loc)


@register_interpreter_impl("tcgen05_commit")
def tcgen05_commit(_semantic: Any, mBarrier: Any, two_ctas: Any) -> None:
    """Arrive on ``mBarrier`` when every tcgen05 op this task issued so far completes."""
    bar = _barrier(mBarrier, "tcgen05_commit", "mBarrier")
    _state.current().tcgen05_commit(bar, "tcgen05_commit", kernel_location())
