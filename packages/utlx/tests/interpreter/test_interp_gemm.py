"""TLX-style GEMMs under Triton's CPU interpreter match a float32 reference on random, ragged shapes."""

from __future__ import annotations

import pytest
import torch
import triton
import utlx_interp_kernels as K
from triton.tools.tensor_descriptor import TensorDescriptor

# (M, N, K): square, ragged in every dimension, and K shorter than the prologue.
SHAPES = [(64, 64, 128), (70, 40, 100), (33, 17, 40)]
TMA_SHAPES = [(64, 64, 128), (70, 40, 104)]  # TMA needs 16-byte aligned row strides (N, K multiples of 8)


def _inputs(m: int, n: int, k: int, dtype: torch.dtype = torch.float16, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=gen).to(dtype)
    b = torch.randn(k, n, generator=gen).to(dtype)
    return a, b, torch.full((m, n), float("nan"), dtype=dtype)


def _check(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    ref = a.float() @ b.float()
    # fp32 accumulation, one rounding to the output dtype
    tol = 2e-2 if c.dtype == torch.bfloat16 else 2e-3
    torch.testing.assert_close(c.float(), ref, atol=tol * ref.abs().max().item(), rtol=tol)


def _grid(m: int, n: int, bm: int, bn: int) -> tuple[int]:
    return (triton.cdiv(m, bm) * triton.cdiv(n, bn),)


def run_hopper_pipelined(a, b, c, *, bm=32, bn=32, bk=32, stages=3, wait_pending=None, prefetch_first=False):
    m, k = a.shape
    n = b.shape[1]
    K.hopper_pipelined_gemm[_grid(m, n, bm, bn)](
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


@pytest.mark.parametrize("shape", SHAPES)
def test_hopper_pipelined_gemm_matches_reference(shape):
    a, b, c = _inputs(*shape)
    _check(run_hopper_pipelined(a, b, c), a, b)


def test_hopper_pipelined_gemm_bf16_deeper_ring():
    a, b, c = _inputs(48, 40, 200, dtype=torch.bfloat16, seed=3)
    _check(run_hopper_pipelined(a, b, c, bm=16, bn=16, bk=16, stages=4), a, b)


@pytest.mark.parametrize("shape", SHAPES)
def test_amd_register_staged_gemm_matches_reference(shape):
    a, b, c = _inputs(*shape, seed=1)
    m, k = a.shape
    n = b.shape[1]
    K.amd_register_staged_gemm[_grid(m, n, 32, 32)](
        a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(), BM=32, BN=32, BK=32, STAGES=3
    )
    _check(c, a, b)


@pytest.mark.parametrize("shape", TMA_SHAPES)
@pytest.mark.parametrize("device_desc", [False, True], ids=["host_desc", "device_desc"])
def test_tma_pipelined_gemm_matches_reference(shape, device_desc):
    a, b, c = _inputs(*shape, seed=2)
    m, k = a.shape
    n = b.shape[1]
    bm = bn = bk = 32
    descs = (None, None, None) if device_desc else (
        TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
        TensorDescriptor.from_tensor(c, [bm, bn]))
    K.tma_pipelined_gemm[_grid(m, n, bm, bn)](
        *descs, a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, STAGES=3, DEVICE_DESC=device_desc
    )
    _check(c, a, b)


@pytest.mark.parametrize("shape", TMA_SHAPES)
def test_warp_specialized_persistent_gemm_matches_reference(shape):
    a, b, c = _inputs(*shape, seed=4)
    _check(run_ws_persistent(a, b, c), a, b)
