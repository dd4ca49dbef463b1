"""Host-side helpers of the interpreter tests: inputs, the float32 reference check, kernel launchers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import utlx_interp_kernels as K
from triton.tools.tensor_descriptor import TensorDescriptor
from utlx.interpreter import UtlxInterpreterError

# (M, N, K): square; ragged in every dimension; and fewer K tiles than the prologue fills.
SHAPES = [(64, 64, 128), (70, 40, 100), (33, 17, 20)]
TMA_SHAPES = [(64, 64, 128), (70, 40, 104)]  # TMA needs 16-byte aligned row strides (N, K multiples of 8)

RNG = np.random.default_rng()


def utlx_error(info: pytest.ExceptionInfo) -> BaseException:
    """The utlx error under Triton's ``InterpreterError`` wrapper."""
    err = info.value
    while err.__cause__ is not None and not isinstance(err, UtlxInterpreterError):
        err = err.__cause__
    return err


def randn(*shape: int) -> torch.Tensor:
    """Fresh float32 normal samples (a new seed every run: the references hold for any data)."""
    return torch.from_numpy(RNG.standard_normal(shape).astype(np.float32))


def make_inputs(m: int, n: int, k: int, dtype: torch.dtype = torch.float16, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=gen).to(dtype)
    b = torch.randn(k, n, generator=gen).to(dtype)
    return a, b, torch.full((m, n), float("nan"), dtype=dtype)


def check_against_fp32(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    ref = a.float() @ b.float()
    # fp32 accumulation, one rounding to the output dtype
    tol = 2e-2 if c.dtype == torch.bfloat16 else 2e-3
    torch.testing.assert_close(c.float(), ref, atol=tol * ref.abs().max().item(), rtol=tol)


def grid_for(m: int, n: int, bm: int, bn: int) -> tuple[int]:
    return (triton.cdiv(m, bm) * triton.cdiv(n, bn),)


def run_hopper_pipelined(a, b, c, *, bm=32, bn=32, bk=32, stages=3, wait_pending=None, prefetch_first=False):
    m, k = a.shape
    n = b.shape[1]
    K.hopper_pipelined_gemm[grid_for(m, n, bm, bn)](
        a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(),
        BM=bm, BN=bn, BK=bk, STAGES=stages,
        WAIT_PENDING=stages - 2 if wait_pending is None else wait_pending, PREFETCH_BEFORE_DOT_WAIT=prefetch_first,
    )
    return c


def run_ws_persistent(a, b, c, *, bm=32, bn=32, bk=32, stages=2, progs=2, arrive_early=False, arrives=True):
    m, k = a.shape
    n = b.shape[1]
    a_desc = TensorDescriptor.from_tensor(a, [bm // 2, bk])
    b_desc = TensorDescriptor.from_tensor(b, [bk, bn])
    K.ws_persistent_gemm[(progs,)](
        a_desc, b_desc, c, m, n, k, *c.stride(), BM=bm, BN=bn, BK=bk, STAGES=stages, NUM_PROGS=progs,
        ARRIVE_BEFORE_DOT_WAIT=arrive_early, CONSUMER_ARRIVES=arrives,
    )
    return c


# Stream-K cases (hopper_tma_streamk and hopper_ws_streamk): (M, N, K), programs, dtype, A column-major,
# B column-major, EPILOGUE_SUBTILE (BLOCK_SIZE_N=64 when > 1). Ragged in M, N and K, every case with a partial
# round (T % P != 0); stream-K segments per program noted as tile:k_lo-k_hi.
STREAMK_CONSTS = dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=2, NUM_STAGES=3, MIN_SHARE=1)
STREAMK_CASES = [((96, 80, 160), 4, "fp16", False, False, 1),    # 9 tiles: 2 rounds, tile 8 in 3 pieces
                 ((100, 72, 200), 5, "bf16", False, True, 1),   # 12 tiles: p2 runs 10:6-7 then 11:0-2
                 ((72, 104, 136), 5, "fp16", True, False, 1),   # 12 tiles: p2 runs 10:4-5 then 11:0-1
                 ((136, 64, 136), 4, "bf16", True, True, 1),    # 10 tiles: p1 runs 8:3-5 then 9:0-1
                 ((96, 200, 136), 5, "fp16", False, False, 4),  # 12 tiles of 32x64, C in 4 slices; pieces span
                 ((72, 136, 104), 5, "bf16", False, True, 2)]   # 9 tiles: the 4 stream-K tiles whole (direct store)
STREAMK_IDS = [f"{'x'.join(map(str, c[0]))}-p{c[1]}-{c[2]}-{'c' if c[3] else 'r'}{'c' if c[4] else 'r'}-e{c[5]}"
               for c in STREAMK_CASES]


def streamk_const(subtile: int) -> dict[str, int]:
    return dict(STREAMK_CONSTS, BLOCK_SIZE_N=64, EPILOGUE_SUBTILE=subtile) if subtile > 1 else dict(STREAMK_CONSTS)


def check_streamk_twice(mod, shape, programs, dtype, a_col, b_col, subtile) -> None:
    """Two launches of stream-K module ``mod`` on fresh data through one (larger than needed) workspace: both
    correct against a float32 reference, and the workspace all-zero after each (self-cleaning)."""
    m, n, k = shape
    const = streamk_const(subtile)
    ws = torch.zeros(mod.workspace_numel(m, n, const, programs) + 29, dtype=torch.float32)
    for seed in (1, 2):
        a, b, c = make_inputs(m, n, k, dtype={"fp16": torch.float16, "bf16": torch.bfloat16}[dtype], seed=seed + m)
        a_in = a.T.contiguous().T if a_col else a
        b_in = b.T.contiguous().T if b_col else b
        c.zero_()
        mod.launch(a_in, b_in, c, config=(const, 4), num_sms=programs, workspace=ws)
        check_against_fp32(c, a, b)
        assert ws.count_nonzero().item() == 0, f"launch {seed} left {ws.count_nonzero().item()} words set"
