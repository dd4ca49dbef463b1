"""The stream-K hybrid of the cooperative warp-specialized GEMM (``hopper_ws_streamk``) on the CPU interpreter:
the producer and both consumer warpgroups walk whole tiles, then the last partial round's pieces; each consumer
reduces its half of a piece through the self-cleaning workspace with a counter of its own."""

from __future__ import annotations

import pytest
from utlx_interp_host import (
    STREAMK_CASES,
    STREAMK_CONSTS,
    STREAMK_IDS,
    check_against_fp32,
    check_streamk_twice,
    make_inputs,
    streamk_const,
)

wsk = pytest.importorskip("utlx.kernels.hopper_ws_streamk")

@pytest.mark.parametrize(("shape", "programs", "dtype", "a_col", "b_col", "subtile"), STREAMK_CASES, ids=STREAMK_IDS)
def test_ws_streamk_gemm_and_workspace_left_zero(shape, programs, dtype, a_col, b_col, subtile):
    """The stream-K kernel's interpreter cases (every one with whole rounds and a partial one): two launches
    on fresh data through one workspace, both correct against float32, the workspace (both halves' regions
    and counters) all-zero after each."""
    m, n, k = shape
    sched = wsk.schedule(m, n, k, streamk_const(subtile), programs)
    assert sched.full >= 1 and sched.rem > 0
    check_streamk_twice(wsk, shape, programs, dtype, a_col, b_col, subtile)


def test_ws_streamk_halves_count_their_own_arrivals():
    """A counter per (tile, half): with the second half's counters preset to "all but one arrival came", that
    half is stored by its first piece (a partial sum) and comes out wrong, while the first half of the same
    tiles stays right (so the halves do not share a counter, and the check above can fail)."""
    import torch

    const = dict(STREAMK_CONSTS)
    m, n, k, programs = 96, 80, 160, 4
    sched = wsk.schedule(m, n, k, const, programs)
    assert all(sched.pieces(j) >= 2 for j in range(sched.rem))
    a, b, c = make_inputs(m, n, k, seed=3)
    ws = torch.zeros(wsk.workspace_numel(m, n, const, programs), dtype=torch.float32)
    counters = ws[sched.rem * 32 * 32:].view(torch.int32)
    for j in range(sched.rem):
        counters[2 * j + 1] = sched.pieces(j) - 1
    c.zero_()
    wsk.launch(a, b, c, config=(const, 4), num_sms=programs, workspace=ws)
    ref = a.float() @ b.float()
    wrong = ((c.float() - ref).abs() > 1e-2 * ref.abs().max()).nonzero()[:, 0].tolist()
    assert wrong and {r % 32 for r in wrong} <= set(range(16, 32))  # rows of second halves only


def test_ws_streamk_make_launcher_reuses_its_workspace():
    """The bound launcher (what the A/B tool and a future ``utlx.matmul`` candidate call): two calls, fresh
    data, one workspace, both correct and the workspace left zero."""
    import torch

    m, n, k, programs = 100, 72, 200, 5
    const = dict(STREAMK_CONSTS)
    ws = torch.zeros(wsk.workspace_numel(m, n, const, programs), dtype=torch.float32)
    run = wsk.make_launcher(m, n, (const, 4), programs, ws)
    for seed in (4, 5):
        a, b, c = make_inputs(m, n, k, seed=seed)
        c.zero_()
        run(a, b, c)
        check_against_fp32(c, a, b)
        assert ws.count_nonzero().item() == 0
