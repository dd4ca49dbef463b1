"""TLX-style kernels for the interpreter tests (imported only in a process with ``TRITON_INTERPRET=1``).

Kernels with a bug flag are hazard twins: the flag toggles exactly the line the hazard is about.
"""

from __future__ import annotations

import os

import triton
import triton.language as tl
import utlx as tlx
from utlx.kernels.tiles import store_tile

if os.environ.get("TRITON_INTERPRET") != "1":
    raise RuntimeError("utlx_interp_kernels must be imported with TRITON_INTERPRET=1 set before triton is imported")

interpreter_jit = triton.jit


# ------------------------------------------------------------------------------------ helpers


@interpreter_jit
def stage_and_phase(count, STAGES: tl.constexpr):
    """Ring-buffer slot and mbarrier phase parity of the ``count``-th use of a ``STAGES``-deep ring."""
    return count % STAGES, (count // STAGES) & 1


# ------------------------------------------------------- Hopper: cp.async ring + async wgmma (seed article)


@interpreter_jit
def hopper_pipelined_gemm(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr,
    WAIT_PENDING: tl.constexpr, PREFETCH_BEFORE_DOT_WAIT: tl.constexpr,
):
    """C = A @ B with a STAGES-deep cp.async ring feeding async_dot.

    Correct: ``WAIT_PENDING = STAGES - 2`` and ``PREFETCH_BEFORE_DOT_WAIT = False``. Raising the wait count
    reads a stage still in flight; prefetching before ``async_dot_wait(1)`` overwrites the stage the previous
    dot still reads.
    """
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    rows = (pid_m * BM + tl.arange(0, BM)) % M
    cols = (pid_n * BN + tl.arange(0, BN)) % N
    ks = tl.arange(0, BK)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    a_ring = tlx.local_alloc((BM, BK), tlx.dtype_of(a_ptr), STAGES)
    b_ring = tlx.local_alloc((BK, BN), tlx.dtype_of(b_ptr), STAGES)

    # prologue: fill STAGES - 1 stages, one commit group each
    for s in tl.range(0, STAGES - 1):
        tok_a = tlx.async_load(a_ptrs, tlx.local_view(a_ring, s), mask=ks[None, :] < K - s * BK)
        tok_b = tlx.async_load(b_ptrs, tlx.local_view(b_ring, s), mask=ks[:, None] < K - s * BK)
        tlx.async_load_commit_group([tok_a, tok_b])
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk

    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=0):
        slot = k % STAGES
        tlx.async_load_wait_group(WAIT_PENDING)
        acc = tlx.async_dot(tlx.local_view(a_ring, slot), tlx.local_view(b_ring, slot), acc)
        ahead = k + STAGES - 1
        if not PREFETCH_BEFORE_DOT_WAIT:
            acc = tlx.async_dot_wait(1, acc)  # the dot of iteration k - 1 no longer reads its stage
        tok_a = tlx.async_load(a_ptrs, tlx.local_view(a_ring, ahead % STAGES), mask=ks[None, :] < K - ahead * BK)
        tok_b = tlx.async_load(b_ptrs, tlx.local_view(b_ring, ahead % STAGES), mask=ks[:, None] < K - ahead * BK)
        tlx.async_load_commit_group([tok_a, tok_b])
        if PREFETCH_BEFORE_DOT_WAIT:
            acc = tlx.async_dot_wait(1, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    acc = tlx.async_dot_wait(0, acc)

    store_tile(c_ptr, acc, pid_m, pid_n, M, N, stride_cm, stride_cn, BM, BN)


# --------------------------------------------------- TMA ring + mbarriers + TMA store epilogue (no WS)


@interpreter_jit
def tma_pipelined_gemm(
    a_desc, b_desc, c_desc, a_ptr, b_ptr, c_ptr, M, N, K,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr, DEVICE_DESC: tl.constexpr,
):
    """C = A @ B with TMA loads completing on one mbarrier per stage, and a fenced TMA store of C.

    ``DEVICE_DESC`` builds the descriptors in the kernel from ``a_ptr``/``b_ptr``/``c_ptr`` instead of
    using the host-side ones.
    """
    if DEVICE_DESC:
        a_desc = tlx.make_tensor_descriptor(None, a_ptr, [M, K], [K, 1], [BM, BK])
        b_desc = tlx.make_tensor_descriptor(None, b_ptr, [K, N], [N, 1], [BK, BN])
        c_desc = tlx.make_tensor_descriptor(None, c_ptr, [M, N], [N, 1], [BM, BN])
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    off_m = (pid // tiles_n) * BM
    off_n = (pid % tiles_n) * BN
    a_ring = tlx.local_alloc((BM, BK), tlx.dtype_of(a_desc), STAGES)
    b_ring = tlx.local_alloc((BK, BN), tlx.dtype_of(b_desc), STAGES)
    ready = tlx.alloc_barriers(num_barriers=STAGES, arrive_count=1)
    STAGE_BYTES: tl.constexpr = (BM * BK + BK * BN) * tlx.size_of(tlx.dtype_of(a_desc))
    k_tiles = tl.cdiv(K, BK)

    for s in tl.range(0, STAGES - 1):
        if s < k_tiles:
            bar = tlx.local_view(ready, s)
            tlx.barrier_expect_bytes(bar, STAGE_BYTES)
            tlx.async_descriptor_load(a_desc, tlx.local_view(a_ring, s), [off_m, s * BK], bar)
            tlx.async_descriptor_load(b_desc, tlx.local_view(b_ring, s), [s * BK, off_n], bar)

    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, k_tiles, num_stages=0):
        slot, phase = stage_and_phase(k, STAGES)
        tlx.barrier_wait(tlx.local_view(ready, slot), phase)
        acc = tlx.async_dot(tlx.local_view(a_ring, slot), tlx.local_view(b_ring, slot), acc)
        acc = tlx.async_dot_wait(1, acc)
        ahead = k + STAGES - 1
        if ahead < k_tiles:
            nslot = ahead % STAGES
            bar = tlx.local_view(ready, nslot)
            tlx.barrier_expect_bytes(bar, STAGE_BYTES)
            tlx.async_descriptor_load(a_desc, tlx.local_view(a_ring, nslot), [off_m, ahead * BK], bar)
            tlx.async_descriptor_load(b_desc, tlx.local_view(b_ring, nslot), [ahead * BK, off_n], bar)
    acc = tlx.async_dot_wait(0, acc)

    c_buf = tlx.local_view(tlx.local_alloc((BM, BN), tlx.dtype_of(c_desc), 1), 0)
    tlx.local_store(c_buf, acc.to(tlx.dtype_of(c_desc)))
    tlx.fence_async_shared()
    tlx.async_descriptor_store(c_desc, c_buf, [off_m, off_n])
    tlx.async_descriptor_store_wait(0)


# ------------------------------------- warp-specialized, persistent: TMA producer + 2 wgmma consumers


@interpreter_jit
def ws_persistent_gemm(
    a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr, NUM_PROGS: tl.constexpr,
    ARRIVE_BEFORE_DOT_WAIT: tl.constexpr, CONSUMER_ARRIVES: tl.constexpr,
):
    """Persistent C = A @ B: a TMA producer task and two consumer replicas (each owns half of the BM rows).

    Per stage: ``full`` (producer -> consumers, completed by TMA bytes) and ``empty`` (consumers -> producer;
    B's needs both replicas). Correct: ``ARRIVE_BEFORE_DOT_WAIT = False``, ``CONSUMER_ARRIVES = True``.
    """
    HALF: tl.constexpr = BM // 2
    a_ring = tlx.local_alloc((HALF, BK), tlx.dtype_of(a_desc), STAGES * 2)
    b_ring = tlx.local_alloc((BK, BN), tlx.dtype_of(b_desc), STAGES)
    full_a = tlx.alloc_barriers(num_barriers=STAGES * 2, arrive_count=1)
    empty_a = tlx.alloc_barriers(num_barriers=STAGES * 2, arrive_count=1)
    full_b = tlx.alloc_barriers(num_barriers=STAGES, arrive_count=1)
    empty_b = tlx.alloc_barriers(num_barriers=STAGES, arrive_count=2)
    tiles_n = tl.cdiv(N, BN)
    num_tiles = tl.cdiv(M, BM) * tiles_n
    k_tiles = tl.cdiv(K, BK)
    elem = tlx.size_of(tlx.dtype_of(a_desc))

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            count = 0
            for tile in range(tl.program_id(0), num_tiles, NUM_PROGS):
                off_m = (tile // tiles_n) * BM
                off_n = (tile % tiles_n) * BN
                for k in range(0, k_tiles):
                    slot, phase = stage_and_phase(count, STAGES)
                    for half in tl.static_range(2):
                        tlx.barrier_wait(tlx.local_view(empty_a, slot * 2 + half), phase ^ 1)
                        bar = tlx.local_view(full_a, slot * 2 + half)
                        tlx.barrier_expect_bytes(bar, HALF * BK * elem)
                        tlx.async_descriptor_load(a_desc, tlx.local_view(a_ring, slot * 2 + half),
                                                  [off_m + half * HALF, k * BK], bar)
                    tlx.barrier_wait(tlx.local_view(empty_b, slot), phase ^ 1)
                    bar_b = tlx.local_view(full_b, slot)
                    tlx.barrier_expect_bytes(bar_b, BK * BN * elem)
                    tlx.async_descriptor_load(b_desc, tlx.local_view(b_ring, slot), [k * BK, off_n], bar_b)
                    count += 1
        with tlx.async_task(num_warps=4, registers=232, replicate=2):  # consumers
            half = tlx.async_task_replica_id()
            count = 0
            for tile in range(tl.program_id(0), num_tiles, NUM_PROGS):
                off_m = (tile // tiles_n) * BM
                off_n = (tile % tiles_n) * BN
                acc = tl.zeros((HALF, BN), dtype=tl.float32)
                for _k in range(0, k_tiles):
                    slot, phase = stage_and_phase(count, STAGES)
                    tlx.barrier_wait(tlx.local_view(full_a, slot * 2 + half), phase)
                    tlx.barrier_wait(tlx.local_view(full_b, slot), phase)
                    acc = tlx.async_dot(tlx.local_view(a_ring, slot * 2 + half), tlx.local_view(b_ring, slot), acc)
                    if CONSUMER_ARRIVES and ARRIVE_BEFORE_DOT_WAIT:
                        tlx.barrier_arrive(tlx.local_view(empty_a, slot * 2 + half))
                        tlx.barrier_arrive(tlx.local_view(empty_b, slot))
                    acc = tlx.async_dot_wait(0, acc)
                    if CONSUMER_ARRIVES and not ARRIVE_BEFORE_DOT_WAIT:
                        tlx.barrier_arrive(tlx.local_view(empty_a, slot * 2 + half))
                        tlx.barrier_arrive(tlx.local_view(empty_b, slot))
                    count += 1
                rows = off_m + half * HALF + tl.arange(0, HALF)
                cols = off_n + tl.arange(0, BN)
                c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
                tl.store(c_ptrs, acc.to(tlx.dtype_of(c_ptr)), mask=(rows[:, None] < M) & (cols[None, :] < N))


# ------------------------------------------------------------------------- small hazard twins


@interpreter_jit
def copy_tile_cp_async(src, dst, BLOCK: tl.constexpr, COMMIT: tl.constexpr, WAIT: tl.constexpr):
    """dst = src through one cp.async copy. Correct: ``COMMIT`` and ``WAIT`` both true."""
    offs = tl.arange(0, BLOCK)
    buf = tlx.local_view(tlx.local_alloc((BLOCK,), tlx.dtype_of(src), 1), 0)
    tlx.async_load(src + offs, buf)
    if COMMIT:
        tlx.async_load_commit_group()
    if WAIT:
        tlx.async_load_wait_group(0)
    tl.store(dst + offs, tlx.local_load(buf))


@interpreter_jit
def copy_tile_tma(src_desc, dst_desc, BLOCK: tl.constexpr, EXPECT_TILES: tl.constexpr, WAIT: tl.constexpr,
                  FENCE: tl.constexpr):
    """dst = src through a TMA load into smem, a register round trip, and a TMA store.

    Correct: ``EXPECT_TILES = 1``, ``WAIT`` and ``FENCE`` true.
    """
    buf = tlx.local_view(tlx.local_alloc((BLOCK, BLOCK), tlx.dtype_of(src_desc), 1), 0)
    out = tlx.local_view(tlx.local_alloc((BLOCK, BLOCK), tlx.dtype_of(dst_desc), 1), 0)
    bar = tlx.local_view(tlx.alloc_barriers(1), 0)
    tlx.barrier_expect_bytes(bar, EXPECT_TILES * BLOCK * BLOCK * tlx.size_of(tlx.dtype_of(src_desc)))
    tlx.async_descriptor_load(src_desc, buf, [0, 0], bar)
    if WAIT:
        tlx.barrier_wait(bar, 0)
    tile = tlx.local_load(buf)
    tlx.local_store(out, tile)
    if FENCE:
        tlx.fence_async_shared()
    tlx.async_descriptor_store(dst_desc, out, [0, 0])
    tlx.async_descriptor_store_wait(0)


@interpreter_jit
def ops_probe(out_ptr, BLOCK: tl.constexpr):
    """Touches the remaining ops once: slices, transposes, reinterpret, utilities."""
    offs = tl.arange(0, BLOCK)
    bufs = tlx.local_alloc((BLOCK, BLOCK), tl.float32, 2)
    buf = tlx.local_view(bufs, 1)
    tile = (offs[:, None] * BLOCK + offs[None, :]).to(tl.float32)
    tlx.local_store(buf, tile)
    quarter = tlx.local_load(tlx.local_slice(buf, [BLOCK // 2, 0], [BLOCK // 2, BLOCK // 2]))
    trans = tlx.local_load(tlx.local_trans(buf))
    cols = tlx.local_load(tlx.subslice(buf, BLOCK // 2, BLOCK // 2))
    as_int = tlx.local_load(tlx.local_reinterpret(buf, tl.int32))
    base = out_ptr + offs[:, None] * BLOCK + offs[None, :]
    tl.store(base, trans)
    half = tl.arange(0, BLOCK // 2)
    tl.store(out_ptr + BLOCK * BLOCK + half[:, None] * BLOCK + half[None, :], quarter)
    tl.store(out_ptr + 2 * BLOCK * BLOCK + offs[:, None] * (BLOCK // 2) + half[None, :], cols)
    tl.store(out_ptr + 3 * BLOCK * BLOCK + offs[:, None] * BLOCK + offs[None, :], (as_int == tile.to(tl.int32,
             bitcast=True)).to(tl.float32))
    ids = tlx.thread_id(0) + tlx.cluster_cta_rank() + tlx.cluster_size_1d()
    tl.store(out_ptr + 4 * BLOCK * BLOCK, ids.to(tl.float32))
    tl.store(out_ptr + 4 * BLOCK * BLOCK + 1, (tlx.clock64() > 0).to(tl.float32))
