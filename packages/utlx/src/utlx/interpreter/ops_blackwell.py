"""Ops that only Blackwell (sm_100) has, under the interpreter: a clear error naming the op.

Why errors and not CPU bodies: the interpreter models a Hopper CTA (wgmma, TMA, mbarriers, clusters of one
CTA). These ops drive hardware Hopper lacks (tensor-memory copies, block-scaled tcgen05 MMAs), so a CPU result
would describe no GPU the kernel could run on. Blackwell ops that do have a plain meaning on the CPU keep one:
``local_alloc(storage=tmem)``, ``async_dot`` with ``mBarriers`` and ``tcgen05_commit`` (completion modelled as
immediate), and cluster launch control (a queue of the programs not yet run: ``ops_clc``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from utlx.interpreter.errors import UtlxInterpreterError, kernel_location, where
from utlx.language._dispatch import register_interpreter_impl

#: op -> what it drives on Blackwell (for the message).
SM100_ONLY: dict[str, str] = {
    "tmem_copy": "the tcgen05.cp shared-to-tensor-memory copy",
    "async_dot_scaled": "block-scaled tcgen05 MMA",
}


class UtlxNeedsBlackwellError(UtlxInterpreterError):
    """A Blackwell-only op was run by the CPU interpreter (which models Hopper)."""


def _raiser(op: str, what: str) -> Callable[..., Any]:
    def body(_semantic: Any, *args: Any, **kwargs: Any) -> Any:
        raise UtlxNeedsBlackwellError(
            f"{op}: needs sm_100 (Blackwell): it drives {what}, which utlx's CPU interpreter (modelling an "
            f"sm_90 CTA) has no meaning for{where(kernel_location())}"
        )

    body.__name__ = f"{op}_needs_sm100"
    return body


for _op, _what in SM100_ONLY.items():
    register_interpreter_impl(_op)(_raiser(_op, _what))
del _op, _what
