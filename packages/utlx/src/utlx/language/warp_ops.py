"""Warp-level primitives (TLX's ``warp_ops``)."""

from __future__ import annotations

from utlx.language._op import op


@op
def vote_ballot_sync(mask, pred, _semantic=None):
    """Warp vote (``vote.sync.ballot.b32``): a 32-bit word whose bit ``n`` is set when lane ``n`` is in
    ``mask`` and its ``pred`` is true. A tensor ``pred`` gives a tensor of int32, each element the ballot
    of the warp that holds it."""


__all__ = ["vote_ballot_sync"]
