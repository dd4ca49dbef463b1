"""The stream-K hybrid of the cooperative warp-specialized GEMM (``hopper_ws_streamk``) on the CPU interpreter:
the producer and both consumer warpgroups walk whole tiles, then the last partial round's pieces; each consumer
reduces its half of a piece through the self-cleaning workspace with a counter of its own."""

from __future__ import annotations

import pytest
from utlx_interp_host import check_against_fp32, make_inputs

wsk = pytest.importorskip("utlx.kernels.hopper_ws_streamk")

_CONSTS = dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=2, NUM_STAGES=3, MIN_SHARE=1)

# (M, N, K), programs, dtype, A column-major, B column-major, EPILOGUE_SUBTILE (BLOCK_SIZE_N=64 when > 1): the
# stream-K kernel's interpreter cases (ragged in M, N and K, each with a partial round; pieces that span tiles).
_CASES = [((96, 80, 160), 4, "fp16", False, False, 1),
          ((100, 72, 200), 5, "bf16", False, True, 1),
          ((72, 104, 136), 5, "fp16", True, False, 1),
          ((136, 64, 136), 4, "bf16", True, True, 1),
          ((96, 200, 136), 5, "fp16", False, False, 4),
          ((72, 136, 104), 5, "bf16", False, True, 2)]


def _const(subtile: int) -> dict[str, int]:
    return dict(_CONSTS, BLOCK_SIZE_N=64, EPILOGUE_SUBTILE=subtile) if subtile > 1 else dict(_CONSTS)


@pytest.mark.parametrize(("shape", "programs", "dtype", "a_col", "b_col", "subtile"), _CASES,
                         ids=[f"{'x'.join(map(str, c[0]))}-p{c[1]}-{c[2]}-{'c' if c[3] else 'r'}{'c' if c[4] else 'r'}"
                              f"-e{c[5]}" for c in _CASES])
def test_ws_streamk_gemm_and_workspace_left_zero(shape, programs, dtype, a_col, b_col, subtile):
    """Two launches on fresh data through one (larger than needed) workspace: both correct against a float32
    reference, and the workspace (both halves' regions and counters) all-zero after each."""
    import torch

    m, n, k = shape
    const = _const(subtile)
    sched = wsk.schedule(m, n, k, const, programs)
    assert sched.full >= 1 and sched.rem > 0  # whole rounds and a partial one
    ws = torch.zeros(wsk.workspace_numel(m, n, const, programs) + 29, dtype=torch.float32)
    for seed in (1, 2):
        a, b, c = make_inputs(m, n, k, dtype={"fp16": torch.float16, "bf16": torch.bfloat16}[dtype], seed=seed + m)
        a_in = a.T.contiguous().T if a_col else a
        b_in = b.T.contiguous().T if b_col else b
        c.zero_()
        wsk.launch(a_in, b_in, c, config=(const, 4), num_sms=programs, workspace=ws)
        check_against_fp32(c, a, b)
        assert ws.count_nonzero().item() == 0, f"launch {seed} left {ws.count_nonzero().item()} words set"


def test_ws_streamk_halves_count_their_own_arrivals():
    """A counter per (tile, half): with the second half's counters preset to "all but one arrival came", that
    half is stored by its first piece (a partial sum) and comes out wrong, while the first half of the same
    tiles stays right (so the halves do not share a counter, and the check above can fail)."""
    import torch

    const = dict(_CONSTS)
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
    const = dict(_CONSTS)
    ws = torch.zeros(wsk.workspace_numel(m, n, const, programs), dtype=torch.float32)
    run = wsk.make_launcher(m, n, (const, 4), programs, ws)
    for seed in (4, 5):
        a, b, c = make_inputs(m, n, k, seed=seed)
        c.zero_()
        run(a, b, c)
        check_against_fp32(c, a, b)
        assert ws.count_nonzero().item() == 0
