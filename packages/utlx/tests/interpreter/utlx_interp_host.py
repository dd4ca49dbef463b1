"""Host-side helpers of the interpreter tests: inputs, the float32 reference check, kernel launchers."""

from __future__ import annotations

import torch
import triton
import utlx_interp_kernels as K
from triton.tools.tensor_descriptor import TensorDescriptor

# (M, N, K): square; ragged in every dimension; and fewer K tiles than the prologue fills.
SHAPES = [(64, 64, 128), (70, 40, 100), (33, 17, 20)]
TMA_SHAPES = [(64, 64, 128), (70, 40, 104)]  # TMA needs 16-byte aligned row strides (N, K multiples of 8)


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
