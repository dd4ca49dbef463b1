"""Make every warpgroup retire its wgmma reads of a ring before that ring's shared memory is reused.

Why: ``tlx.async_dot`` is an asynchronous wgmma that keeps reading its shared-memory operands until a
``tlx.async_dot_wait`` retires it, and that wait only speaks for the warpgroup that runs it. With more
than one warpgroup (``num_warps=8``: two consumer warpgroups splitting the tile's rows), one warpgroup can
leave its final ``async_dot_wait(0)`` while the other's last wgmma is still reading the ring. Triton's
shared memory allocator only sees SSA liveness, so once the ring's last op is done, the epilogue's scratch
(the accumulator's layout conversion, a reduction, a broadcast) may get the same bytes, and the faster
warpgroup overwrites operands the slower one is still multiplying. Triton's membar pass does not see the
hazard (it treats the wait as the end of the read). Measured on the H200 (2026-12-01): the split-K kernel
at 128x128x128, 3 stages, 8 warps gave garbage (inf) in a few rows of one warp, on some launches only.

The fix mirrors :mod:`.drain` (the same bug class with cp.async writes): a CTA barrier right after the
first full wgmma wait (``pendings == 0``) that follows the op holding the ring's last use, or right after
that op when no such wait follows. Every thread has then passed its own full wait, so no wgmma reads the
ring anymore. It costs one ``bar.sync`` per ring's lifetime (once per kernel for a persistent one), and
none inside warp-specialized partitions, where a CTA-wide barrier would wait for warps that never come.
"""

from __future__ import annotations

from typing import Any

from utlx.compiler.common.drain import last_use_anchors, op_key, parent_map, walk

#: Ops whose regions run on a subset of the CTA's warps: a CTA-wide barrier inside them would hang.
_PARTITIONED = frozenset({"ttg.warp_specialize", "ttg.warp_specialize.partitions"})


def _inside_partition(op: Any, owner: dict[int, Any]) -> bool:
    cur = op
    while cur is not None:
        if cur.get_name() in _PARTITIONED:
            return True
        block = cur.get_block()
        region = block.get_parent() if block is not None else None
        cur = owner.get(region.id()) if region is not None else None
    return False


def retire_points(module: Any, allocs: list[Any], full_waits: list[Any]) -> list[Any]:
    """The ops after which a CTA barrier retires every warpgroup's wgmma reads of ``allocs``, in program order.

    ``allocs``: ``ttg.local_alloc`` values read by async wgmma; ``full_waits``: result values of the
    ``ttng.warp_group_dot_wait {pendings = 0}`` ops the lowering created.
    """
    if not allocs:
        return []
    ops = walk(module)
    owner = parent_map(ops)
    position = {op_key(op): i for i, op in enumerate(ops)}
    wait_ids = {v.id() for v in full_waits}
    waits = [op for op in ops if op.get_num_results() and op.get_result(0).id() in wait_ids]
    points: dict[int, Any] = {}
    for anchor in last_use_anchors(module, allocs).values():
        after = position.get(op_key(anchor), 0)
        later = [w for w in waits if position.get(op_key(w), 0) > after]
        point = min(later, key=lambda w: position.get(op_key(w), 0)) if later else anchor
        if not _inside_partition(point, owner):
            points.setdefault(op_key(point), point)
    return sorted(points.values(), key=lambda op: position.get(op_key(op), 0))


def insert_retire_barriers(module: Any, builder: Any, allocs: list[Any], full_waits: list[Any]) -> int:
    """Insert a CTA barrier (``gpu.barrier``) after each :func:`retire_points` op; returns how many."""
    points = retire_points(module, allocs, full_waits)
    for point in points:
        builder.set_insertion_point_after(point)
        builder.create_barrier()
    return len(points)
