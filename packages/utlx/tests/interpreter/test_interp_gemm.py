"""TLX-style GEMMs under Triton's CPU interpreter match a float32 reference on random, ragged shapes."""

from __future__ import annotations

import pytest
import torch
import utlx_interp_kernels as K
from triton.tools.tensor_descriptor import TensorDescriptor
from utlx_interp_host import (
    SHAPES,
    TMA_SHAPES,
    check_against_fp32,
    grid_for,
    make_inputs,
    run_hopper_pipelined,
    run_ws_persistent,
)


@pytest.mark.parametrize("shape", SHAPES)
def test_hopper_pipelined_gemm_matches_reference(shape):
    a, b, c = make_inputs(*shape)
    check_against_fp32(run_hopper_pipelined(a, b, c), a, b)


def test_hopper_pipelined_gemm_bf16_deeper_ring():
    a, b, c = make_inputs(48, 40, 200, dtype=torch.bfloat16, seed=3)
    check_against_fp32(run_hopper_pipelined(a, b, c, bm=16, bn=16, bk=16, stages=4), a, b)


@pytest.mark.parametrize("shape", SHAPES)
def test_amd_register_staged_gemm_matches_reference(shape):
    """The packaged register-staged AMD kernel (global -> registers -> shared, ``tl.dot``) on ragged shapes."""
    from utlx.kernels.amd.amd_pipelined import matmul_kernel_pipelined_amd

    a, b, c = make_inputs(*shape, seed=1)
    m, k = a.shape
    n = b.shape[1]
    matmul_kernel_pipelined_amd[grid_for(m, n, 32, 32)](
        a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(),
        BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=2, NUM_STAGES=3,
    )
    check_against_fp32(c, a, b)


@pytest.mark.parametrize("shape", TMA_SHAPES)
@pytest.mark.parametrize("device_desc", [False, True], ids=["host_desc", "device_desc"])
def test_tma_pipelined_gemm_matches_reference(shape, device_desc):
    a, b, c = make_inputs(*shape, seed=2)
    m, k = a.shape
    n = b.shape[1]
    bm = bn = bk = 32
    descs = (None, None, None) if device_desc else (
        TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
        TensorDescriptor.from_tensor(c, [bm, bn]))
    K.tma_pipelined_gemm[grid_for(m, n, bm, bn)](
        *descs, a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, STAGES=3, DEVICE_DESC=device_desc
    )
    check_against_fp32(c, a, b)


@pytest.mark.parametrize("shape", TMA_SHAPES)
def test_warp_specialized_persistent_gemm_matches_reference(shape):
    a, b, c = make_inputs(*shape, seed=4)
    check_against_fp32(run_ws_persistent(a, b, c), a, b)
