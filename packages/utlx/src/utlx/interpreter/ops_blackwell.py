"""Blackwell (sm_100) semantics under the interpreter: tcgen05 MMA completion, and clear errors for the rest.

TMEM is storage like shared memory (``local_alloc(storage=tmem)`` in ``ops_mem``). An ``async_dot`` into a TMEM
accumulator is a tcgen05 MMA: without ``mBarriers`` (and not ``force_async``) the compiled code waits for it at
once; otherwise it stays in flight, reading A/B and writing the accumulator, until a barrier it (or a later
``tcgen05_commit`` of the same task) arrives on is observed by a ``barrier_wait``. PTX orders the tcgen05 ops of
one thread: they execute in issue order and a commit tracks all earlier ones, so a later MMA of the same task
touching the same TMEM is no hazard, while a ``local_load`` of the accumulator before the wait is.

The data moves eagerly (results are right whenever the kernel is); the checker keeps what is in flight.

Not modelled yet, and refused with an error naming the op (``SM100_ONLY``): ``tmem_copy`` (``tcgen05.cp``) and
``async_dot_scaled``, whose scale factors sit in TMEM in the tcgen05 scale-factor layout the model does not lay
out yet (a CPU result would be a guess).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from utlx.interpreter import state as _state
from utlx.interpreter.barriers import Barrier
from utlx.interpreter.errors import SourceLocation, UtlxInterpreterError, kernel_location, where
from utlx.interpreter.memory import BufferView
from utlx.interpreter.ops_mem import _barrier
from utlx.interpreter.state import InFlight
from utlx.language._dispatch import register_interpreter_impl

#: op -> what it drives on Blackwell (for the message).
SM100_ONLY: dict[str, str] = {
    "tmem_copy": "the tcgen05.cp shared-to-tensor-memory copy",
    "async_dot_scaled": "block-scaled tcgen05 MMA",
}


class UtlxNeedsBlackwellError(UtlxInterpreterError):
    """A Blackwell op the CPU interpreter does not model was run."""


def _raiser(op: str, what: str) -> Callable[..., Any]:
    def body(_semantic: Any, *args: Any, **kwargs: Any) -> Any:
        raise UtlxNeedsBlackwellError(
            f"{op}: needs sm_100 (Blackwell): it drives {what}, whose tensor-memory scale-factor layout utlx's CPU "
            f"interpreter does not model yet{where(kernel_location())}"
        )

    body.__name__ = f"{op}_needs_sm100"
    return body


for _op, _what in SM100_ONLY.items():
    register_interpreter_impl(_op)(_raiser(_op, _what))
del _op, _what


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
