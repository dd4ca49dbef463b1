"""TMA copies between global and shared memory (``async_descriptor_load``/``_store``/``_store_wait``):
trace-time bodies and lowerings (``ttng.async_tma_copy_global_to_local`` and its store forms).

Why a module: TMA is the bulk-copy engine of Hopper and Blackwell; on both it completes on an mbarrier.
"""

from __future__ import annotations

from typing import Any

import triton.language as tl
from triton.language import core as tlc

from utlx import compat
from utlx.compiler.common import placeholders, values
from utlx.compiler.common.args import _c, _expect, _i1
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.lowering import Lowering, register_lowering
from utlx.compiler.common.placeholders import Placeholder
from utlx.compiler.common.target import from_semantic
from utlx.language._dispatch import register_compiler_impl

from .barrier_ops import _barrier
from .cluster_marks import cluster_mark, multicast_mask
from .targets import SM90_PLUS


def _desc_anchor(_semantic: Any, op: str, desc: Any, offsets: Any, shape: tuple[int, ...]) -> tl.tensor:
    """A ``tt.descriptor_load`` of ``desc`` at ``offsets``: carries descriptor and coordinates to the lowering.

    Why: a tensor descriptor cannot be an operand of the placeholder op; the lowering reads descriptor and
    coordinates back from this load, and the load dies with the placeholder (it is never executed).
    """
    if not isinstance(desc, tlc.tensor_descriptor_base):
        raise UtlxCompileError(op, f"'desc' must be a tensor descriptor, got {type(desc).__name__}")
    block = list(desc.block_shape)
    if [int(_c(x)) for x in block] != list(shape):
        raise UtlxCompileError(op, f"shape mismatch: descriptor block {block} vs buffer {list(shape)}")
    offs = _c(offsets)
    offs = list(offs) if isinstance(offs, (list, tuple)) else [offs]
    if len(offs) != len(block):
        raise UtlxCompileError(op, f"'offsets' needs {len(block)} coordinates, got {len(offs)}")
    return compat.descriptor_load(_semantic, desc, offs)


@register_compiler_impl("async_descriptor_load", *SM90_PLUS)
def async_descriptor_load(_semantic: Any, desc: Any, result: Any, offsets: Any, barrier: Any, pred: Any = None,
                          cache_modifier: Any = "", eviction_policy: Any = "", multicast_targets: Any = None,
                          two_ctas: Any = False) -> None:
    """TMA copy of the block at ``offsets`` into buffer ``result``; completion is counted on ``barrier``."""
    op = "async_descriptor_load"
    target = from_semantic(_semantic)
    view = _expect(op, result, values.SharedView, "result")
    bar = _barrier(op, barrier)
    pair = bool(_c(two_ctas))
    if pair and target.capability < 100:
        raise UtlxCompileError(op, "two_ctas (cta_group::2) TMA needs sm_100", target=target.name,
                               hint="on Hopper, share a box between the CTAs of a cluster with multicast_targets")
    if pair and _c(multicast_targets):
        raise UtlxCompileError(op, "two_ctas together with multicast_targets is not compiled by utlx",
                               target=target.name)
    if desc.dtype != view.dtype:
        raise UtlxCompileError(op, f"dtype mismatch: descriptor {desc.dtype} vs buffer {view.dtype}")
    targets = _c(multicast_targets)
    mask = multicast_mask(_semantic, targets, op) if targets else None
    anchor = _desc_anchor(_semantic, op, desc, offsets, view.shape)
    if mask is not None:  # the box lands at the same offset in every target CTA (cluster_ptx)
        uid = cluster_mark(_semantic, op, "multicast", mask)
    elif pair:  # completes on the pair leader's barrier (blackwell/two_cta.py)
        from .blackwell import two_cta

        mask = two_cta.leader_rank(_semantic).handle
        uid = cluster_mark(_semantic, op, "tma2", mask)
    placeholders.emit(_semantic, op, {}, handles=[view.handle, bar.handle, _i1(_semantic, pred, op, "pred")],
                     tensors=[anchor])
    if mask is not None:
        cluster_mark(_semantic, op, "end", uid=uid)


@register_compiler_impl("async_descriptor_store", *SM90_PLUS)
def async_descriptor_store(_semantic: Any, desc: Any, source: Any, offsets: Any, eviction_policy: Any = "",
                           store_reduce: Any = "") -> None:
    """TMA copy of buffer ``source`` to the block at ``offsets`` (wait with async_descriptor_store_wait)."""
    op = "async_descriptor_store"
    target = from_semantic(_semantic)
    view = _expect(op, source, values.SharedView, "source")
    if _c(store_reduce):
        raise UtlxCompileError(op, "store_reduce is not supported by utlx", target=target.name)
    anchor = _desc_anchor(_semantic, op, desc, offsets, view.shape)
    placeholders.emit(_semantic, op, {}, handles=[view.handle], tensors=[anchor])


@register_compiler_impl("async_descriptor_store_wait", *SM90_PLUS)
def async_descriptor_store_wait(_semantic: Any, pendings: Any) -> None:
    """Wait until at most ``pendings`` TMA stores still read shared memory."""
    op = "async_descriptor_store_wait"
    n = _c(pendings)
    if not isinstance(n, int) or n < 0:
        raise UtlxCompileError(op, f"'pendings' must be a compile-time int >= 0, got {n!r}")
    placeholders.emit(_semantic, op, {"n": n})


# ---------------------------------------------------------------- lowerings


def _anchor(low: Lowering, ph: Placeholder) -> tuple[Any, list[Any]]:
    """Descriptor and coordinates of the ``tt.descriptor_load`` the frontend made for this op."""
    if low.desc_loads is None:
        low.desc_loads = {}

        def visit(op: Any) -> None:
            if op.get_name() == "tt.descriptor_load":
                low.desc_loads[op.get_result(0).id()] = op

        low.module.walk(visit)
    op = low.desc_loads.get(ph.tensors[0].id())
    if op is None:
        raise UtlxCompileError(ph.name, f"lost track of its tensor descriptor ({ph.describe()})")
    return op.get_operand(0), [op.get_operand(i) for i in range(1, op.get_num_operands())]


def _lower_tma_load(low: Lowering, ph: Placeholder) -> None:
    dst = low.handle(ph, 0, "destination buffer")
    bar = low.handle(ph, 1, "barrier")
    desc, coords = _anchor(low, ph)
    compat.create_tma_load(low.builder, desc, coords, bar, dst, ph.handles[2])


def _lower_tma_store(low: Lowering, ph: Placeholder) -> None:
    src = low.handle(ph, 0, "source buffer")
    desc, coords = _anchor(low, ph)
    compat.create_tma_store(low.builder, desc, coords, src)


def _lower_tma_store_wait(low: Lowering, ph: Placeholder) -> None:
    compat.create_tma_store_wait(low.builder, int(ph.attrs["n"]))


register_lowering("async_descriptor_load", "cuda")(_lower_tma_load)
register_lowering("async_descriptor_store", "cuda")(_lower_tma_store)
register_lowering("async_descriptor_store_wait", "cuda")(_lower_tma_store_wait)
