"""Register-staged pipelined GEMM (the MI300/MI350 TLX kernel): global -> registers -> shared -> MFMA.

AMD has no cp.async into LDS on gfx942, so the pipeline stages data through registers: while the MFMAs
of iteration ``k`` run on tiles already in shared memory, the loads of a later tile are in flight in
registers and are stored into the buffer just consumed. ``NUM_STAGES - 1`` shared buffers per operand
form the ring (one stage lives in registers).

The same source compiles for NVIDIA too (``tl.dot`` becomes mma/wgmma there); only the shared-memory ops
``local_alloc/local_view/local_load/local_store`` and ``dtype_of`` are used.
"""

from __future__ import annotations

import triton
import triton.language as tl

import utlx.language as tlx
from utlx.kernels.tiles import POINTER_GEMM_SIGNATURE, grouped_tile, store_tile


@triton.jit
def matmul_kernel_pipelined_amd(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    pid_m, pid_n = grouped_tile(pid, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)

    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    # NUM_STAGES - 1 buffers per operand in shared memory; the remaining stage lives in registers.
    buffers_A = tlx.local_alloc((BLOCK_SIZE_M, BLOCK_SIZE_K), tlx.dtype_of(a_ptr), NUM_STAGES - 1)
    buffers_B = tlx.local_alloc((BLOCK_SIZE_K, BLOCK_SIZE_N), tlx.dtype_of(b_ptr), NUM_STAGES - 1)

    # Prologue: fill the ring through registers.
    for i in tl.range(0, NUM_STAGES - 1, loop_unroll_factor=NUM_STAGES - 1):
        a_reg = tl.load(a_ptrs, mask=offs_k[None, :] < K - i * BLOCK_SIZE_K, other=0.0)
        b_reg = tl.load(b_ptrs, mask=offs_k[:, None] < K - i * BLOCK_SIZE_K, other=0.0)
        tlx.local_store(tlx.local_view(buffers_A, i), a_reg)
        tlx.local_store(tlx.local_view(buffers_B, i), b_reg)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    K_ITERS = tl.cdiv(K, BLOCK_SIZE_K)
    # Iteration k loads tile k (masked to zero past K) and multiplies tile k - (NUM_STAGES - 1).
    for k in tl.range(NUM_STAGES - 1, K_ITERS + NUM_STAGES - 1, num_stages=0):
        a_reg = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b_reg = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)

        buf = (k - (NUM_STAGES - 1)) % (NUM_STAGES - 1)
        a_prev = tlx.local_load(tlx.local_view(buffers_A, buf))
        b_prev = tlx.local_load(tlx.local_view(buffers_B, buf))
        acc = tl.dot(a_prev, b_prev, acc)

        # Refill the buffer just consumed with the tile loaded above.
        tlx.local_store(tlx.local_view(buffers_A, buf), a_reg)
        tlx.local_store(tlx.local_view(buffers_B, buf), b_reg)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    store_tile(c_ptr, acc, pid_m, pid_n, M, N, stride_cm, stride_cn, BLOCK_SIZE_M, BLOCK_SIZE_N)


SIGNATURE = dict(POINTER_GEMM_SIGNATURE)

#: (constexprs, num_warps) for MI300/MI350 (2 stages = 1 shared buffer + 1 register stage).
CONFIGS = [
    ({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 4, "NUM_STAGES": 2}, 8),
    ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 2}, 4),
    ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "NUM_STAGES": 3}, 4),
]
