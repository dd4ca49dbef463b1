"""Pipelined GEMM for Hopper in the classic TLX form: a cp.async ring plus asynchronous wgmma.

``C = A @ B`` with A ``[M, K]`` and B ``[K, N]`` row-major. Each program computes one
``BLOCK_M x BLOCK_N`` tile. ``NUM_STAGES`` shared-memory buffers per operand form a ring:

* prologue: issue ``NUM_STAGES - 1`` tile loads with ``tlx.async_load`` (one commit group per stage);
* main loop: wait until the oldest group has landed (``async_load_wait_group(NUM_STAGES - 2)``), start
  ``tlx.async_dot`` on it, retire the previous dot (``async_dot_wait(1)``) so its buffers can be
  refilled, and prefetch the tile ``NUM_STAGES - 1`` iterations ahead into the buffer it freed.

Out-of-range rows/columns of A/B are clamped with ``% M`` / ``% N`` (their results are masked off at the
store), and the K tail is masked to zero so any K works.
"""

from __future__ import annotations

import triton
import triton.language as tl

import utlx.language as tlx
from utlx.kernels.tiles import POINTER_GEMM_SIGNATURE, grouped_tile, store_tile


@triton.jit
def matmul_kernel_pipelined_hopper(
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

    # One ring of NUM_STAGES buffers per operand.
    buffers_A = tlx.local_alloc((BLOCK_SIZE_M, BLOCK_SIZE_K), tlx.dtype_of(a_ptr), NUM_STAGES)
    buffers_B = tlx.local_alloc((BLOCK_SIZE_K, BLOCK_SIZE_N), tlx.dtype_of(b_ptr), NUM_STAGES)

    # Prologue: NUM_STAGES - 1 tiles in flight.
    for i in tl.range(0, NUM_STAGES - 1, loop_unroll_factor=NUM_STAGES - 1):
        a = tlx.local_view(buffers_A, i)
        b = tlx.local_view(buffers_B, i)
        token_a = tlx.async_load(a_ptrs, a, mask=offs_k[None, :] < K - i * BLOCK_SIZE_K)
        token_b = tlx.async_load(b_ptrs, b, mask=offs_k[:, None] < K - i * BLOCK_SIZE_K)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
        tlx.async_load_commit_group([token_a, token_b])

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    # num_stages=0: the ring above is the pipeline; keep Triton's own software pipeliner out.
    for k in tl.range(0, tl.cdiv(K, BLOCK_SIZE_K), num_stages=0):
        buf = k % NUM_STAGES
        a_k = tlx.local_view(buffers_A, buf)
        b_k = tlx.local_view(buffers_B, buf)
        # The oldest group (tile k) has landed once at most NUM_STAGES - 2 groups are still in flight.
        tlx.async_load_wait_group(NUM_STAGES - 2)
        acc = tlx.async_dot(a_k, b_k, acc)
        # Retire dot k-1: the buffer it read is the one the prefetch below overwrites.
        acc = tlx.async_dot_wait(1, acc)
        i = k + NUM_STAGES - 1
        a_next = tlx.local_view(buffers_A, i % NUM_STAGES)
        b_next = tlx.local_view(buffers_B, i % NUM_STAGES)
        token_a = tlx.async_load(a_ptrs, a_next, mask=offs_k[None, :] < K - i * BLOCK_SIZE_K)
        token_b = tlx.async_load(b_ptrs, b_next, mask=offs_k[:, None] < K - i * BLOCK_SIZE_K)
        tlx.async_load_commit_group([token_a, token_b])
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    acc = tlx.async_dot_wait(0, acc)
    store_tile(c_ptr, acc, pid_m, pid_n, M, N, stride_cm, stride_cn, BLOCK_SIZE_M, BLOCK_SIZE_N)


#: Signature for compiling without a GPU (fp16 in, fp16 out).
SIGNATURE = dict(POINTER_GEMM_SIGNATURE)

#: Configurations (constexprs, num_warps) known to compile and run well on H100/H200.
CONFIGS = [
    ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 3}, 8),
    ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 4}, 4),
    ({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 4}, 4),
]

#: The 64-row tile (CONFIGS[2]) once gave wrong values on the H200: the ring's tail prefetches were still
#: landing when the epilogue reused their shared memory. utlx's lowering now drains pending cp.async copies
#: where the ring dies (utlx.compiler.common.drain), and tests/gpu/test_gemm_sweep.py checks every configuration.
