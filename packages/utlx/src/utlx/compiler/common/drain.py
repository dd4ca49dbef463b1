"""Drain pending cp.async copies before the shared memory they write is handed to anything else.

Why: a TLX ring prefetches ``NUM_STAGES - 1`` tiles ahead, so when its K loop ends, up to
``NUM_STAGES - 1`` commit groups are still in flight (the tail prefetches past K are masked, i.e.
zero-fills, but they still write their buffer). Nothing in the kernel waits for them. Triton's shared
memory allocator only sees SSA liveness: once the last op that names a ring buffer is done, that memory
is free, and the epilogue's layout conversion (or any later ``local_alloc``) gets the same bytes. The
late zero-fills then land in the middle of the epilogue and overwrite part of the output tile. That is
the "64-row tile gives wrong values" bug (issue 15): with a 64-row tile the final wgmma is short, so the
epilogue reaches its scratch buffer before the last zero-fills complete; larger tiles hide the race only
by being slower.

Triton's own software pipeliner ends every pipelined loop with ``ttg.async_wait {num = 0}`` for the same
reason. utlx does the same, at the place where it is needed and no earlier: right after the op (in the
allocation's own block) that holds the last use of any view of a buffer written by ``cp.async``. For a
plain GEMM that is just after the K loop; for a persistent kernel it is after the outer tile loop, so the
ring keeps prefetching across tiles at full speed. The membar pass then puts a CTA barrier after the wait,
so no other thread touches the reused bytes before every thread's copies have landed.
"""

from __future__ import annotations

from typing import Any

#: Ops that make a new view of a shared-memory descriptor (their result aliases their first operand).
_VIEW_OPS = frozenset({
    "ttg.memdesc_index", "ttg.memdesc_subview", "ttg.memdesc_subslice", "ttg.memdesc_trans",
    "ttg.memdesc_reinterpret", "ttg.memdesc_reshape",
})


def walk(module: Any) -> list[Any]:
    """Every op of ``module`` in walk order: an op after its children, siblings in program order."""
    ops: list[Any] = []
    module.walk(ops.append)
    return ops


def parent_map(ops: list[Any]) -> dict[int, Any]:
    """``{region id: op owning that region}`` for every op with regions."""
    owner: dict[int, Any] = {}
    for op in ops:
        for i in range(op.get_num_regions()):
            owner[op.get_region(i).id()] = op
    return owner


def _block_id(op: Any) -> int | None:
    block = op.get_block()
    return None if block is None else block.id()


def ancestor_in_block(op: Any, block_id: int, owner: dict[int, Any]) -> Any | None:
    """The ancestor of ``op`` (``op`` itself included) that sits directly in block ``block_id``."""
    cur = op
    while cur is not None:
        if _block_id(cur) == block_id:
            return cur
        block = cur.get_block()
        if block is None:
            return None
        region = block.get_parent()
        cur = owner.get(region.id()) if region is not None else None
    return None


def op_key(op: Any) -> int:
    """A stable identity for an op: the id of its first result, else of its first region, else ``id``."""
    if op.get_num_results():
        return op.get_result(0).id()
    if op.get_num_regions():
        return op.get_region(0).id()
    return id(op)


def last_use_anchors(module: Any, allocs: list[Any]) -> dict[int, Any]:
    """``{alloc value id: anchor op}``: for each ``ttg.local_alloc`` value of ``allocs``, the op of the
    allocation's own block that contains the last use of the buffer or of any view made from it (after
    that op the allocator may give the bytes to something else)."""
    ops = walk(module)
    owner = parent_map(ops)
    want = {v.id() for v in allocs}
    alloc_ops: dict[int, Any] = {}
    aliases: dict[int, int] = {}  # value id -> alloc value id
    last_use: dict[int, Any] = {}  # alloc value id -> op using it last (walk order)
    for op in ops:
        if op.get_name() == "ttg.local_alloc" and op.get_num_results():
            rid = op.get_result(0).id()
            if rid in want:
                alloc_ops[rid] = op
                aliases[rid] = rid
            continue
        for i in range(op.get_num_operands()):
            root = aliases.get(op.get_operand(i).id())
            if root is None:
                continue
            last_use[root] = op
            if op.get_name() in _VIEW_OPS and op.get_num_results():
                aliases[op.get_result(0).id()] = root
    anchors: dict[int, Any] = {}
    for rid, alloc_op in alloc_ops.items():
        use = last_use.get(rid)
        block_id = _block_id(alloc_op)
        if use is None or block_id is None:
            continue
        anchor = ancestor_in_block(use, block_id, owner)
        if anchor is not None:
            anchors[rid] = anchor
    return anchors


def drain_points(module: Any, allocs: list[Any]) -> list[Any]:
    """The ops after which pending cp.async copies into ``allocs`` must be waited for, in program order.

    ``allocs`` are ``ttg.local_alloc`` result values written (through views) by ``cp.async``; the anchor of
    each is its :func:`last_use_anchors` op; anchors shared by several buffers are returned once.
    """
    position = {op_key(op): i for i, op in enumerate(walk(module))}
    anchors: dict[int, Any] = {}
    for anchor in last_use_anchors(module, allocs).values():
        anchors.setdefault(op_key(anchor), anchor)
    return sorted(anchors.values(), key=lambda op: position.get(op_key(op), 0))


def _async_waits(module: Any) -> list[Any]:
    return [op for op in walk(module) if op.get_name() == "ttg.async_wait"]


def insert_drains(module: Any, builder: Any, allocs: list[Any]) -> list[Any]:
    """Insert ``ttg.async_wait {num = 0}`` after each drain point; returns the new wait ops.

    (The builder returns nothing for the wait it creates, so the new ops are found by difference.)
    """
    if not allocs:
        return []
    before = {op.get_result(0).id() for op in _async_waits(module)}
    for anchor in drain_points(module, allocs):
        builder.set_insertion_point_after(anchor)
        builder.create_async_wait_group(0)
    return [op for op in _async_waits(module) if op.get_result(0).id() not in before]
