"""Markers around a stock instruction that :mod:`.cluster_ptx` turns into its cluster form (multicast TMA
loads, arrivals on a peer CTA's mbarrier), and the CTA ranks and masks they carry.
"""

from __future__ import annotations

import itertools
from typing import Any

import triton.language as tl

from utlx.compiler.common.args import _c, _i32
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.target import from_semantic

from . import cluster_ptx

#: Ids of cluster markers, unique within a process (see :func:`_cluster_mark`).
_MARKER_IDS = itertools.count()


def cluster_rank(_semantic: Any, rank: Any, op: str) -> Any:
    """An i32 CTA rank within the cluster (0..15: a 16-bit CTA mask is the widest PTX has)."""
    r = _c(rank)
    if isinstance(r, int) and not isinstance(r, bool) and not 0 <= r < 16:
        raise UtlxCompileError(op, f"a cluster CTA rank must be in 0..15, got {r}")
    return _i32(_semantic, rank, op, "remote_cta_rank")


def cluster_mark(_semantic: Any, op: str, kind: str, operand: Any = None, uid: int | None = None) -> int:
    """A :mod:`utlx.compiler.nvidia.cluster_ptx` marker: the next stock instruction becomes its cluster form.

    A begin marker takes a fresh id and returns it; its ``end`` marker carries the same ``uid``. Why ids: two
    markers with the same text on both arms of a branch (one multicast load per CTA rank, say) are identical
    side-effecting instructions, and LLVM hoists them above the branch (or sinks the ends below it), which
    leaves begin and end markers in different blocks. Distinct texts cannot be merged.
    """
    target = from_semantic(_semantic)
    if target.capability < 90:
        raise UtlxCompileError(op, "cluster forms (multicast, remote arrivals) need sm_90 or newer",
                               target=target.name)
    b = _semantic.builder
    operands, constraints = ([operand], "=r,r") if operand is not None else ([], "=r")
    uid = next(_MARKER_IDS) if uid is None else uid
    b.create_inline_asm(cluster_ptx.marker(kind, uid, operand is not None), constraints, operands,
                        [b.get_int32_ty()], False, 1)
    return uid


def cluster_end_value(_semantic: Any, uid: int, operand: Any) -> Any:
    """The ``end`` marker of ``uid`` as an i32 value, over an i32 ``operand``: kinds with an end form (an address
    probe) fill it in from what the enclosed instruction revealed."""
    b = _semantic.builder
    return b.create_inline_asm(cluster_ptx.marker("end", uid, True), "=r,r", [operand], [b.get_int32_ty()], False,
                               1).get_result(0)


def multicast_mask(_semantic: Any, targets: Any, op: str) -> Any:
    """The 16-bit CTA mask of ``multicast_targets`` (cluster ranks: ints, or int scalars known at run time)."""
    if not isinstance(targets, (list, tuple)):
        targets = [targets]
    const = [t for t in targets if isinstance(t, int)]
    if len(set(const)) != len(const):
        raise UtlxCompileError(op, f"multicast_targets names a CTA twice: {list(targets)}")
    mask = 0
    for t in const:
        cluster_rank(_semantic, t, op)
        mask |= 1 << t
    value = _semantic.to_tensor(mask)
    for t in targets:
        if not isinstance(t, int):
            r = tl.tensor(cluster_rank(_semantic, t, op), tl.int32)
            value = _semantic.or_(value, _semantic.shl(_semantic.to_tensor(1), r))
    return value.handle
