"""The stream-K hybrid GEMMs on the CPU interpreter: whole tiles, then the last partial round's tiles cut along K
into pieces reduced through the self-cleaning workspace. ``hopper_tma_streamk``, and ``hopper_ws_streamk`` (the
cooperative warp-specialized one: the producer and both consumer warpgroups walk whole tiles, then the last
partial round's pieces; each consumer reduces its half of a piece with a counter of its own)."""

from __future__ import annotations

import importlib

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

sk = importlib.import_module("utlx.kernels.nvidia.hopper_tma_streamk")
wsk = importlib.import_module("utlx.kernels.nvidia.hopper_ws_streamk")


def _schedule(shape, programs, subtile):
    m, n, k = shape
    return sk.schedule(m, n, k, streamk_const(subtile), programs)


def test_cases_have_pieces_spanning_tiles():
    """Every case has a partial round, and together they cover a program whose range spans two tiles."""
    spans = 0
    for shape, programs, _, _, _, subtile in STREAMK_CASES:
        sched = _schedule(shape, programs, subtile)
        assert sched.full >= 1 and sched.rem > 0, (shape, programs, sched)
        spans += sum(len(sched.segments(p)) > 1 for p in range(programs))
    assert spans > 0


@pytest.mark.parametrize(("shape", "programs", "dtype", "a_col", "b_col", "subtile"), STREAMK_CASES, ids=STREAMK_IDS)
def test_streamk_gemm_and_workspace_left_zero(shape, programs, dtype, a_col, b_col, subtile):
    """Two launches on fresh data through one (larger than needed) workspace: both correct against a
    float32 reference, and the workspace all-zero after each (self-cleaning)."""
    check_streamk_twice(sk, shape, programs, dtype, a_col, b_col, subtile)


def test_streamk_workspace_must_start_zeroed():
    """Partial sums left in the workspace change the result (so the zero check above can fail)."""
    import torch

    const = dict(STREAMK_CONSTS)
    a, b, c = make_inputs(96, 80, 160, seed=5)
    ws = torch.ones(sk.workspace_numel(96, 80, const, 4), dtype=torch.float32)
    ws[-1] = 0.0  # the counter: arrivals still complete the tile
    sk.launch(a, b, c, config=(const, 4), num_sms=4, workspace=ws)
    with pytest.raises(AssertionError):
        check_against_fp32(c, a, b)
    with pytest.raises(ValueError, match="workspace must be fp32 with at least"):
        sk.launch(a, b, c, config=(const, 4), num_sms=4, workspace=torch.zeros(10, dtype=torch.float32))


def test_streamk_through_the_matmul_candidate():
    """``Candidate.bind`` makes a ``SplitKLaunch`` of the stream-K kernel on ``num_sms`` programs (under the
    interpreter every call takes Triton's own path with a fresh zeroed workspace): two calls on new data."""
    import torch
    from utlx.gemm_launch import Problem, SplitKLaunch
    from utlx.matmul import Candidate

    cand = Candidate("tma_streamk", tuple(sorted(STREAMK_CONSTS.items())), 4, "persistent")
    assert cand.id == "tma_streamk/persistent/32x32x32/s3/g2/w4/m1"
    a, b, c = make_inputs(100, 72, 200, dtype=torch.float16, seed=3)
    launch = cand.bind(Problem.of(a, b, 5))
    assert isinstance(launch, SplitKLaunch) and launch.grid == (5,)
    assert launch.workspace_numel == 2 * (32 * 32 + 1)  # 12 tiles on 5 programs: 2 in the last round
    for seed in (3, 4):
        a, b, c = make_inputs(100, 72, 200, dtype=torch.float16, seed=seed)
        launch(a, b, c)
        check_against_fp32(c, a, b)


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
