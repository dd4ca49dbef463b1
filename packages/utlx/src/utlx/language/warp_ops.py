"""Warp-level primitives (TLX's ``warp_ops``)."""

from __future__ import annotations

import triton
import triton.language as tl

from utlx.language._op import op

#: rows one warp holds in the TMEM 32x32b register layout (one row per lane)
WARP_ROWS = 32


@op
def vote_ballot_sync(mask, pred, _semantic=None):
    """Warp vote (``vote.sync.ballot.b32``): a 32-bit word whose bit ``n`` is set when lane ``n`` is in
    ``mask`` and its ``pred`` is true. A tensor ``pred`` gives a tensor of int32, each element the ballot
    of the warp that holds it."""


@triton.jit
def warp_redux(x, op: tl.constexpr):
    """Reduce ``x`` across the 32 lanes of a warp and give every lane the result (``redux.sync`` on sm_100).

    In the layout TMEM loads use (32x32b: lane ``l`` of warp ``w`` holds row ``32 w + l``) that is a
    reduction over each group of 32 consecutive rows, per column, broadcast back to the group: written here with
    plain Triton ops on that meaning, so it is the same on every target and under the interpreter.
    ``op``: ``"max"``, ``"min"``, ``"abs_max"`` (max of magnitudes) or ``"abs_min"``.
    """
    ROWS: tl.constexpr = x.shape[0]
    COLS: tl.constexpr = x.shape[1]
    tl.static_assert(ROWS % 32 == 0, "warp_redux: the row count must be a multiple of the warp's 32 lanes")
    groups = tl.reshape(x, [ROWS // 32, 32, COLS])
    if op == "max":
        red = tl.max(groups, axis=1)
    elif op == "min":
        red = tl.min(groups, axis=1)
    elif op == "abs_max":
        red = tl.max(tl.abs(groups), axis=1)
    else:
        tl.static_assert(op == "abs_min", "warp_redux: op must be 'max', 'min', 'abs_max' or 'abs_min'")
        red = tl.min(tl.abs(groups), axis=1)
    return tl.reshape(tl.broadcast_to(tl.reshape(red, [ROWS // 32, 1, COLS]), [ROWS // 32, 32, COLS]), [ROWS, COLS])


__all__ = ["vote_ballot_sync", "warp_redux"]
