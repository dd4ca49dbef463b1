"""Hand-written TLX kernels for the sweep, written the way a kernel author writes them (not utlx's own).

``textbook_ring_gemm`` is the seed article's Hopper GEMM in its plainest form: a ``STAGES``-deep cp.async
ring per operand, ``async_load_wait_group(STAGES - 2)``, one wgmma kept in flight with
``async_dot_wait(1)``, refill of the slot the retired wgmma read, and nothing after the loop but
``async_dot_wait(0)``: the tail prefetches are left in flight, exactly the pattern of issue 15.
"""

from __future__ import annotations

import triton
import triton.language as tl
import utlx as tlx


@triton.jit
def textbook_ring_gemm(a_ptr, b_ptr, c_ptr, M, N, K, lda, ldb, ldc, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr, STAGES: tl.constexpr):
    tiles_n = tl.cdiv(N, BN)
    pid_m = tl.program_id(0) // tiles_n
    pid_n = tl.program_id(0) % tiles_n
    rows = (pid_m * BM + tl.arange(0, BM)) % M
    cols = (pid_n * BN + tl.arange(0, BN)) % N
    ks = tl.arange(0, BK)
    a_tile = a_ptr + rows[:, None] * lda + ks[None, :]
    b_tile = b_ptr + ks[:, None] * ldb + cols[None, :]
    ring_a = tlx.local_alloc((BM, BK), tlx.dtype_of(a_ptr), STAGES)
    ring_b = tlx.local_alloc((BK, BN), tlx.dtype_of(b_ptr), STAGES)
    for s in tl.range(0, STAGES - 1, loop_unroll_factor=STAGES - 1):
        ta = tlx.async_load(a_tile + s * BK, tlx.local_view(ring_a, s), mask=ks[None, :] < K - s * BK)
        tb = tlx.async_load(b_tile + s * BK * ldb, tlx.local_view(ring_b, s), mask=ks[:, None] < K - s * BK)
        tlx.async_load_commit_group([ta, tb])
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=0):
        tlx.async_load_wait_group(STAGES - 2)
        acc = tlx.async_dot(tlx.local_view(ring_a, k % STAGES), tlx.local_view(ring_b, k % STAGES), acc)
        acc = tlx.async_dot_wait(1, acc)
        nxt = k + STAGES - 1
        ta = tlx.async_load(a_tile + nxt * BK, tlx.local_view(ring_a, nxt % STAGES), mask=ks[None, :] < K - nxt * BK)
        tb = tlx.async_load(b_tile + nxt * BK * ldb, tlx.local_view(ring_b, nxt % STAGES),
                            mask=ks[:, None] < K - nxt * BK)
        tlx.async_load_commit_group([ta, tb])
    acc = tlx.async_dot_wait(0, acc)
    out_rows = pid_m * BM + tl.arange(0, BM)
    out_cols = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + out_rows[:, None] * ldc + out_cols[None, :], acc.to(tlx.dtype_of(c_ptr)),
             mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))


@triton.jit
def producer_consumer_gemm(a_desc, b_desc, c_ptr, M, N, K, ldc, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr, STAGES: tl.constexpr):
    """One output tile per program, warp-specialized: a 1-warp TMA producer fills a ``STAGES``-slot ring
    guarded by ``ready``/``free`` mbarriers; the default task (one warpgroup) runs the wgmmas, hands each
    slot back once the wgmma that read it has retired, and stores the tile with plain ``tl.store``."""
    tiles_n = tl.cdiv(N, BN)
    off_m = (tl.program_id(0) // tiles_n) * BM
    off_n = (tl.program_id(0) % tiles_n) * BN
    ring_a = tlx.local_alloc((BM, BK), tlx.dtype_of(a_desc), STAGES)
    ring_b = tlx.local_alloc((BK, BN), tlx.dtype_of(b_desc), STAGES)
    ready = tlx.alloc_barriers(STAGES)
    free = tlx.alloc_barriers(STAGES)
    SLOT_BYTES: tl.constexpr = (BM * BK + BK * BN) * tlx.size_of(tlx.dtype_of(a_desc))
    n_k = tl.cdiv(K, BK)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            acc = tl.zeros((BM, BN), tl.float32)
            for k in tl.range(0, n_k, num_stages=0):
                slot = k % STAGES
                tlx.barrier_wait(tlx.local_view(ready, slot), (k // STAGES) & 1)
                acc = tlx.async_dot(tlx.local_view(ring_a, slot), tlx.local_view(ring_b, slot), acc)
                acc = tlx.async_dot_wait(1, acc)
                if k > 0:  # wgmma k-1 has retired: its slot may be refilled
                    tlx.barrier_arrive(tlx.local_view(free, (k - 1) % STAGES))
            acc = tlx.async_dot_wait(0, acc)
            rows = off_m + tl.arange(0, BM)
            cols = off_n + tl.arange(0, BN)
            tl.store(c_ptr + rows[:, None] * ldc + cols[None, :], acc.to(tlx.dtype_of(c_ptr)),
                     mask=(rows[:, None] < M) & (cols[None, :] < N))
        with tlx.async_task(num_warps=1, registers=40):
            for k in tl.range(0, n_k, num_stages=0):
                slot = k % STAGES
                tlx.barrier_wait(tlx.local_view(free, slot), ((k // STAGES) & 1) ^ 1)
                bar = tlx.local_view(ready, slot)
                tlx.barrier_expect_bytes(bar, SLOT_BYTES)
                tlx.async_descriptor_load(a_desc, tlx.local_view(ring_a, slot), [off_m, k * BK], bar)
                tlx.async_descriptor_load(b_desc, tlx.local_view(ring_b, slot), [k * BK, off_n], bar)
