"""One async-proxy fence after a run of ``tlx.alloc_barriers``, not one after each.

Why: ``alloc_barriers`` initialises its mbarriers with ordinary (generic-proxy) shared-memory writes, and
TMA later completes transactions on them through the async proxy. So the lowering follows the inits with
``fence.proxy.async.shared::cta``, as CUDA's own TMA example does. Kernels allocate their barriers back
to back: Meta's FA tutorials make six calls in a row. A fence orders *every* earlier generic-proxy access
of the thread, so the fence after the last call of such a run already covers the inits of the others.
ptxas keeps every fence (a ``MEMBAR.ALL.CTA`` + ``FENCE.VIEW.ASYNC.S`` pair in SASS), and they all sit on
every CTA's start-up path. ``tools/bench/tutorial_sass.py`` found them to be the only difference between
the SASS of those tutorials on utlx and on Meta's build. Meta's build emits no fence at all here (it
relies on the CTA barrier after the inits, like stock Triton's pipeliner); utlx keeps one.

How: before lowering, each ``alloc_barriers`` placeholder checks the ops after it in its own block. If
only constants and other allocations (``local_alloc`` placeholders: no memory access) come before the
next ``alloc_barriers`` placeholder, that call's fence will cover this one, and this one gets none. The
fences of the run's last call, and of any call followed by anything else, stay.
"""

from __future__ import annotations

from typing import Any

from utlx.compiler.common.drain import walk
from utlx.compiler.common.placeholders import Placeholder

#: Ops that may come between two ``alloc_barriers`` without splitting the run: they touch no memory.
_NEUTRAL_OPS = frozenset({"arith.constant"})
_NEUTRAL_PLACEHOLDERS = frozenset({"local_alloc", "alloc_clc_responses"})


def _result_id(op: Any) -> int | None:
    return op.get_result(0).id() if op.get_num_results() else None


def covered_fences(module: Any, found: list[Placeholder]) -> set[int]:
    """``id(ph)`` of the ``alloc_barriers`` placeholders whose fence the next one's fence makes redundant."""
    barriers = {ph.result.id(): ph for ph in found if ph.name == "alloc_barriers"}
    if len(barriers) < 2:
        return set()
    names = {ph.result.id(): ph.name for ph in found}
    blocks: dict[int, list[Any]] = {}
    for op in walk(module):  # children before their parent, but a block's own ops in program order
        block = op.get_block()
        if block is not None:
            blocks.setdefault(block.id(), []).append(op)
    covered: set[int] = set()
    for ops in blocks.values():
        pending: Placeholder | None = None  # the last alloc_barriers with only neutral ops after it
        for op in ops:
            key = _result_id(op)
            if key in barriers:
                if pending is not None:
                    covered.add(id(pending))
                pending = barriers[key]
            elif op.get_name() not in _NEUTRAL_OPS and names.get(key) not in _NEUTRAL_PLACEHOLDERS:
                pending = None
    return covered
