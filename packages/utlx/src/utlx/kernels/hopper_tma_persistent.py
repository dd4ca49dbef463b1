"""Persistent GEMM for Hopper: TMA loads into an mbarrier-tracked ring, asynchronous wgmma, TMA store.

One program per SM walks the output tiles ``pid, pid + NUM_SMS, ...``. For each tile:

* prologue: ``NUM_STAGES - 1`` k-steps are requested by TMA; each stage's mbarrier is told how many
  bytes to expect (``barrier_expect_bytes``) and completes when both tiles have landed;
* main loop: wait for the stage's barrier (phase = how many times this barrier was used, mod 2), start
  ``async_dot``, retire the previous dot (``async_dot_wait(1)``) and refill the buffer it read;
* epilogue: accumulator -> shared memory -> ``async_descriptor_store`` (TMA); the store of tile ``t``
  overlaps the main loop of tile ``t+1`` and is waited for only before the staging buffer is reused.

A counter carried across tiles (``it``) gives every k-step a global index, from which the ring slot and
the barrier phase follow. Descriptors are host-side ``triton.tools.tensor_descriptor.TensorDescriptor``s
(block shapes ``[BM, BK]``, ``[BK, BN]``, ``[BM, BN]``); TMA zero-fills out-of-range boxes and clips the
store, so any M, N, K work.
"""

from __future__ import annotations

import triton
import triton.language as tl

import utlx as tlx
from utlx.kernels.hopper_pipelined import _grouped_tile


@triton.jit
def matmul_kernel_tma_persistent(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
):
    dtype = tlx.dtype_of(a_desc)
    buffers_A = tlx.local_alloc((BLOCK_SIZE_M, BLOCK_SIZE_K), dtype, NUM_STAGES)
    buffers_B = tlx.local_alloc((BLOCK_SIZE_K, BLOCK_SIZE_N), dtype, NUM_STAGES)
    buffer_C = tlx.local_alloc((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype, 1)
    ready = tlx.alloc_barriers(NUM_STAGES)
    STAGE_BYTES: tl.constexpr = (BLOCK_SIZE_M * BLOCK_SIZE_K + BLOCK_SIZE_K * BLOCK_SIZE_N) * tlx.size_of(dtype)

    num_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    it = 0  # k-steps issued so far by this program, over all its tiles
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, num_stages=0):
        pid_m, pid_n = _grouped_tile(tile, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        off_m = pid_m * BLOCK_SIZE_M
        off_n = pid_n * BLOCK_SIZE_N

        for i in tl.range(0, NUM_STAGES - 1, num_stages=0):
            s = (it + i) % NUM_STAGES
            bar = tlx.local_view(ready, s)
            valid = i < k_tiles
            tlx.barrier_expect_bytes(bar, STAGE_BYTES, pred=valid)
            tlx.async_descriptor_load(a_desc, tlx.local_view(buffers_A, s), [off_m, i * BLOCK_SIZE_K], bar, pred=valid)
            tlx.async_descriptor_load(b_desc, tlx.local_view(buffers_B, s), [i * BLOCK_SIZE_K, off_n], bar, pred=valid)

        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for kk in tl.range(0, k_tiles, num_stages=0):
            s = (it + kk) % NUM_STAGES
            tlx.barrier_wait(tlx.local_view(ready, s), ((it + kk) // NUM_STAGES) & 1)
            acc = tlx.async_dot(tlx.local_view(buffers_A, s), tlx.local_view(buffers_B, s), acc)
            # Retire the previous dot; its stage is the one refilled below.
            acc = tlx.async_dot_wait(1, acc)
            nk = kk + NUM_STAGES - 1
            s2 = (it + nk) % NUM_STAGES
            bar2 = tlx.local_view(ready, s2)
            valid = nk < k_tiles
            tlx.barrier_expect_bytes(bar2, STAGE_BYTES, pred=valid)
            tlx.async_descriptor_load(a_desc, tlx.local_view(buffers_A, s2), [off_m, nk * BLOCK_SIZE_K], bar2,
                                      pred=valid)
            tlx.async_descriptor_load(b_desc, tlx.local_view(buffers_B, s2), [nk * BLOCK_SIZE_K, off_n], bar2,
                                      pred=valid)
        acc = tlx.async_dot_wait(0, acc)
        it += k_tiles

        c_smem = tlx.local_view(buffer_C, 0)
        tlx.async_descriptor_store_wait(0)  # the previous tile's store has finished reading c_smem
        tlx.local_store(c_smem, acc.to(dtype))
        tlx.fence_async_shared()
        tlx.async_descriptor_store(c_desc, c_smem, [off_m, off_n])
    tlx.async_descriptor_store_wait(0)


def signature(bm: int, bn: int, bk: int, dtype: str = "fp16") -> dict[str, str]:
    """Signature for compiling without a GPU (host-side descriptors)."""
    return {"a_desc": f"tensordesc<{dtype}[{bm}, {bk}]>", "b_desc": f"tensordesc<{dtype}[{bk}, {bn}]>",
            "c_desc": f"tensordesc<{dtype}[{bm}, {bn}]>", "M": "i32", "N": "i32", "K": "i32"}


#: (constexprs without NUM_SMS, num_warps) for H100/H200.
CONFIGS = [
    ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 3}, 8),
    ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 4}, 4),
]


def launch(a, b, c, config=0, num_sms=None):
    """Run the kernel on torch tensors ``c = a @ b`` (host-side TMA descriptors)."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    const, nw = CONFIGS[config] if isinstance(config, int) else config
    bm, bn, bk = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"]
    M, K = a.shape
    N = b.shape[1]
    num_sms = num_sms or torch.cuda.get_device_properties(a.device).multi_processor_count
    a_d = TensorDescriptor.from_tensor(a, [bm, bk])
    b_d = TensorDescriptor.from_tensor(b, [bk, bn])
    c_d = TensorDescriptor.from_tensor(c, [bm, bn])
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    grid = (min(num_sms, tiles),)
    matmul_kernel_tma_persistent[grid](a_d, b_d, c_d, M, N, K, NUM_SMS=grid[0], num_warps=nw, **const)
