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
