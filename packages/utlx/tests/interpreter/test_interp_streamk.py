"""The stream-K hybrid GEMM (``hopper_tma_streamk``) on the CPU interpreter: whole tiles, then the last
partial round's tiles cut along K into pieces reduced through the self-cleaning workspace."""

from __future__ import annotations

import pytest
from utlx_interp_host import check_against_fp32, make_inputs

sk = pytest.importorskip("utlx.kernels.hopper_tma_streamk")

_CONSTS = dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=2, NUM_STAGES=3, MIN_SHARE=1)

# (M, N, K), programs, dtype, A column-major, B column-major, EPILOGUE_SUBTILE (BLOCK_SIZE_N=64 when > 1).
# Ragged in M, N and K, every case with a partial round (T % P != 0); stream-K segments per program noted as
# tile:k_lo-k_hi.
_CASES = [((96, 80, 160), 4, "fp16", False, False, 1),    # 9 tiles: 2 rounds, tile 8 in 3 pieces
          ((100, 72, 200), 5, "bf16", False, True, 1),   # 12 tiles: p2 runs 10:6-7 then 11:0-2
          ((72, 104, 136), 5, "fp16", True, False, 1),   # 12 tiles: p2 runs 10:4-5 then 11:0-1
          ((136, 64, 136), 4, "bf16", True, True, 1),    # 10 tiles: p1 runs 8:3-5 then 9:0-1
          ((96, 200, 136), 5, "fp16", False, False, 4),  # 12 tiles of 32x64, C in 4 slices; pieces span
          ((72, 136, 104), 5, "bf16", False, True, 2)]   # 9 tiles: the 4 stream-K tiles whole (direct store)


def _const(subtile: int) -> dict[str, int]:
    return dict(_CONSTS, BLOCK_SIZE_N=64, EPILOGUE_SUBTILE=subtile) if subtile > 1 else dict(_CONSTS)


def _schedule(shape, programs, subtile):
    m, n, k = shape
    return sk.schedule(m, n, k, _const(subtile), programs)


def test_cases_have_pieces_spanning_tiles():
    """Every case has a partial round, and together they cover a program whose range spans two tiles."""
    spans = 0
    for shape, programs, _, _, _, subtile in _CASES:
        sched = _schedule(shape, programs, subtile)
        assert sched.full >= 1 and sched.rem > 0, (shape, programs, sched)
        spans += sum(len(sched.segments(p)) > 1 for p in range(programs))
    assert spans > 0


@pytest.mark.parametrize(("shape", "programs", "dtype", "a_col", "b_col", "subtile"), _CASES,
                         ids=[f"{'x'.join(map(str, c[0]))}-p{c[1]}-{c[2]}-{'c' if c[3] else 'r'}{'c' if c[4] else 'r'}"
                              f"-e{c[5]}" for c in _CASES])
def test_streamk_gemm_and_workspace_left_zero(shape, programs, dtype, a_col, b_col, subtile):
    """Two launches on fresh data through one (larger than needed) workspace: both correct against a
    float32 reference, and the workspace all-zero after each (self-cleaning)."""
    import torch

    m, n, k = shape
    const = _const(subtile)
    ws = torch.zeros(sk.workspace_numel(m, n, const, programs) + 29, dtype=torch.float32)
    for seed in (1, 2):
        a, b, c = make_inputs(m, n, k, dtype={"fp16": torch.float16, "bf16": torch.bfloat16}[dtype], seed=seed + m)
        a_in = a.T.contiguous().T if a_col else a
        b_in = b.T.contiguous().T if b_col else b
        c.zero_()
        sk.launch(a_in, b_in, c, config=(const, 4), num_sms=programs, workspace=ws)
        check_against_fp32(c, a, b)
        assert ws.count_nonzero().item() == 0, f"launch {seed} left {ws.count_nonzero().item()} words set"


def test_streamk_workspace_must_start_zeroed():
    """Partial sums left in the workspace change the result (so the zero check above can fail)."""
    import torch

    const = dict(_CONSTS)
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

    cand = Candidate("tma_streamk", tuple(sorted(_CONSTS.items())), 4, "persistent")
    assert cand.id == "tma_streamk/persistent/32x32x32/s3/g2/w4/m1"
    a, b, c = make_inputs(100, 72, 200, dtype=torch.float16, seed=3)
    launch = cand.bind(Problem.of(a, b, 5))
    assert isinstance(launch, SplitKLaunch) and launch.grid == (5,)
    assert launch.workspace_numel == 2 * (32 * 32 + 1)  # 12 tiles on 5 programs: 2 in the last round
    for seed in (3, 4):
        a, b, c = make_inputs(100, 72, 200, dtype=torch.float16, seed=seed)
        launch(a, b, c)
        check_against_fp32(c, a, b)
