"""Blackwell ops are built through Gluon's own builtins (``triton.experimental.gluon.language.nvidia.blackwell``).

Why Gluon and not the builder: Gluon's Python layer already knows how each supported Triton spells the tensor-
memory and tcgen05 ops (argument lists changed between 3.6 and 3.9); utlx only wraps the values its lowering has
(raw ``ir.value``s plus the facts it kept about them) as the Gluon values those builtins take.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from utlx import compat
from utlx.compiler.common.lowering import Lowering
from utlx.compiler.common.placeholders import Placeholder


@dataclass(frozen=True)
class Handle:
    """A value Gluon's builtins read only the ``handle`` of (MMA operands in shared memory, barriers)."""

    handle: Any


def semantic(low: Lowering) -> Any:
    """One ``GluonSemantic`` per lowering run (over the lowering's builder, so insertion points are shared)."""
    sem = low.vendor.get("gluon_semantic")
    if sem is None:
        sem = low.vendor["gluon_semantic"] = compat.gluon_semantic(low.builder)
    return sem


def i1(value: Any) -> Any:
    """A Gluon ``int1`` scalar over an ``ir.value`` (predicates, ``use_acc``)."""
    from triton.experimental.gluon import language as ttgl

    return ttgl.tensor(value, ttgl.int1)


def i32(value: Any) -> Any:
    from triton.experimental.gluon import language as ttgl

    return ttgl.tensor(value, ttgl.int32)


def tmem(low: Lowering, ph: Placeholder, i: int, what: str) -> Any:
    """Handle ``i`` of ``ph`` as a Gluon ``tensor_memory_descriptor`` (an error naming the op if it is not TMEM)."""
    from utlx.compiler.common.errors import UtlxCompileError

    value = low.handle(ph, i, what)
    fact = low.fact(ph, i)
    if fact.get("storage") != "tmem":
        raise UtlxCompileError(ph.name, f"its {what} is not in tensor memory ({ph.describe()})")
    return tmem_value(value, fact)


def tmem_value(value: Any, fact: dict) -> Any:
    """``value`` (a TMEM ``ir.value``) with the facts the lowering kept about it, as a Gluon descriptor."""
    # a local_alloc's value is all its buffers ([num, *shape]); a view is one of them
    shape = fact["alloc"] if fact.get("kind") == "buffers" else fact["shape"]
    return compat.blackwell().tensor_memory_descriptor(value, fact["dtype"], list(shape), fact["layout"],
                                                       list(fact["alloc"]))


def require_support(op: str, target: Any) -> None:
    """A compile error naming ``op`` when this Triton cannot compile TLX's Blackwell ops (3.6: see compat)."""
    from utlx.compiler.common.errors import UtlxCompileError

    if not compat.BLACKWELL_TLX:
        raise UtlxCompileError(op, f"utlx compiles TLX's tensor memory and tcgen05 ops with Triton 3.7 or newer "
                               f"(installed: {compat.TRITON_VERSION_STR}; 3.6's automatic warp specialization "
                               f"rejects them)", target=target.name, hint="install triton>=3.7 for Blackwell kernels")
