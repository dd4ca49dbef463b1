"""The stream-K hybrid GEMM (``hopper_tma_streamk``) on the CPU interpreter: whole tiles, then the last
partial round's tiles cut along K into pieces reduced through the self-cleaning workspace."""

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

sk = pytest.importorskip("utlx.kernels.hopper_tma_streamk")


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
