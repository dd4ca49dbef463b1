"""Property test of the stream-K GEMM schedule: every (tile, k-step) exactly once, shares bounded, and the
arrivals the kernel waits for per tile match the walk. Needs hypothesis (the default test env has it; the
compile-smoke envs of other Triton versions do not, and must still collect the other test modules)."""

from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("hypothesis", reason="property tests need hypothesis (the default test env has it)")

from hypothesis import given, settings
from hypothesis import strategies as st
from utlx.kernels.nvidia import hopper_tma_streamk as sk


@settings(max_examples=300, deadline=None)
@given(tiles=st.integers(1, 3000), programs=st.integers(1, 160), k_total=st.integers(1, 300),
       min_share=st.integers(1, 8))
def test_schedule_covers_every_tile_k_step_exactly_once(tiles, programs, k_total, min_share):
    s = sk.Schedule(tiles, programs, k_total, min_share)
    covered: Counter = Counter()
    pieces: Counter = Counter()
    for p in range(programs):
        whole = list(range(p, s.full * programs, programs))  # the persistent part
        assert len(whole) == s.full
        for tile in whole:
            covered.update((tile, k) for k in range(k_total))
        segs = s.segments(p)
        assert sum(hi - lo for _, lo, hi in segs) <= s.share
        assert s.full * k_total + sum(hi - lo for _, lo, hi in segs) <= s.full * k_total + s.share
        for tile, lo, hi in segs:
            assert s.full * programs <= tile < tiles and 0 <= lo < hi <= k_total
            covered.update((tile, k) for k in range(lo, hi))
            pieces[tile] += 1
    assert len(covered) == tiles * k_total and set(covered.values()) == {1}
    for slot in range(s.rem):
        assert s.pieces(slot) == pieces[s.full * programs + slot]  # the arrivals the kernel waits for
    assert s.share >= min(min_share, k_total)
