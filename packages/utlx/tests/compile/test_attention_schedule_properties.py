"""Property test of ``utlx.attention``'s stream-K schedule: every KV block of every tile exactly once, loads
bounded by round robin, pieces' slots consecutive per split tile. Needs hypothesis (the default test env has
it; the compile-smoke envs of other Triton versions do not, and must still collect the other modules)."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis", reason="property tests need hypothesis (the default test env has it)")

from hypothesis import given, settings
from hypothesis import strategies as st
from utlx.attention import MIN_PIECE_BLOCKS, stream_k_schedule


def _segments(plan, programs):
    """Decode a schedule: per program, its (tile, lo, hi, slot) segments in order."""
    offsets, flat = plan.sched[:programs + 1], plan.sched[programs + 1:]
    assert offsets[0] == 0 and offsets[-1] * 4 == len(flat)
    segs = [tuple(flat[i:i + 4]) for i in range(0, len(flat), 4)]
    return [segs[offsets[p]:offsets[p + 1]] for p in range(programs)]


@settings(max_examples=200, deadline=None)
@given(zh=st.integers(1, 40), n_m=st.integers(1, 20), n_kv=st.integers(1, 70), programs=st.integers(1, 140))
def test_stream_k_schedule_covers_every_block_once_and_balances(zh, n_m, n_kv, programs):
    plan = stream_k_schedule(zh, n_m, n_kv, programs)
    per_program = _segments(plan, programs)
    tiles = zh * n_m
    seen = sorted((t, b) for mine in per_program for t, lo, hi, _ in mine for b in range(lo, hi))
    assert seen == [(t, b) for t in range(tiles) for b in range(n_kv)]  # every KV block of every tile, once
    rounds, rem = divmod(tiles, programs)
    share = max(min(MIN_PIECE_BLOCKS, n_kv), -(-rem * n_kv // programs)) if rem else 0
    loads = [sum(hi - lo for _, lo, hi, _ in mine) for mine in per_program]
    assert max(loads) <= rounds * n_kv + share  # never worse than one share past the whole rounds
    if rem:
        assert max(loads) <= (rounds + 1) * n_kv  # ... and never worse than plain round robin
    # pieces: consecutive slots per split tile, listed in `splits`; whole tiles have no slot
    pieces = {}
    for mine in per_program:
        for t, lo, hi, slot in mine:
            assert (slot == -1) == (lo == 0 and hi == n_kv)
            if slot >= 0:
                pieces.setdefault(t, []).append(slot)
    listed = {plan.splits[i]: (plan.splits[i + 1], plan.splits[i + 2]) for i in range(0, len(plan.splits), 3)}
    assert listed == {t: (min(s), len(s)) for t, s in pieces.items()}
    assert all(sorted(s) == list(range(min(s), min(s) + len(s))) for s in pieces.values())
    assert plan.slots == sum(len(s) for s in pieces.values())
