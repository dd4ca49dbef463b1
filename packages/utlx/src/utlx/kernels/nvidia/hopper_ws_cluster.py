"""Warp-specialized persistent GEMM in clusters of two CTAs that share A through multicast TMA loads.

The cooperative kernel (:mod:`utlx.kernels.nvidia.hopper_ws_persistent`) with one change of data flow: the two CTAs
of a cluster compute horizontally adjacent tiles (same rows of A, columns ``2 p`` and ``2 p + 1`` of B). Each
CTA loads one ``BLOCK_SIZE_M / 2``-row half of the A tile and multicasts it into both CTAs' ring slot, so
every A byte leaves L2 once per cluster instead of once per CTA: a 128x256x64 stage pulls 40 KB per CTA
instead of 48 KB, a 128x128x64 one 24 KB instead of 32 KB. Each CTA still loads its own B tile.

``SHARE_B`` turns the pair the other way (the layout cuBLAS's Hopper kernels use on large GEMMs): the two CTAs
compute vertically adjacent tiles (rows ``2 p`` and ``2 p + 1``, same columns), each loads both halves of its
own A tile and one ``BLOCK_SIZE_N / 2``-column half of the B tile, multicast into the same columns of both
CTAs' slot: 32 KB of a 128x256x64 stage per CTA instead of 48 KB. Flow control is the same.

Flow control across the pair (the scheme CUTLASS's Hopper GEMMs use):

* ``full[s]`` of each CTA expects the whole stage: its own A half and B tile plus the peer's A half. The
  peer's bytes may land before this CTA's producer has announced them (``expect``); the mbarrier's
  transaction count goes negative for a while, and the phase cannot complete before the announcing arrival.
* ``empty[s]`` counts four arrivals: both consumers of this CTA and both of the peer
  (:func:`utlx.kernels.ws_ring.release`), because this CTA's producer writes into the peer's slot too.
* Start: the barriers are initialised before the task split, made visible to the cluster
  (``fence_mbarrier_init_cluster``) and every warp of both CTAs passes a cluster barrier at the start of its
  task before anything touches the peer. The producer runs on a full warpgroup so that no padding warp is
  left outside that barrier.
* End: the producer waits until every slot's last use is released (the peer's arrivals included), so no CTA
  exits while the peer may still arrive on its barriers or multicast into its shared memory.

Both CTAs of a cluster walk the same tile pairs, so their loops have the same trip counts. When the number
of column tiles is odd, the last pair's second tile lies past N: TMA zero-fills its B and clips its store
(with ``SHARE_B``: row tiles, past M, its A; its B half is in range and still serves the peer).
Launch with clusters of two consecutive CTAs (:func:`utlx.compat.direct_launch` with ``cluster_ctas=2``) and
an even grid; launched without clusters the kernel would wait forever for a peer, so only
``utlx.gemm_launch.GemmLaunch(cluster_ctas=2)`` launches it (``Candidate("ws_cluster", ...).bind``; it is not a
``utlx.matmul`` candidate). Hopper only; not for the interpreter (one CTA at a time).
"""

from __future__ import annotations

import triton
import triton.language as tl

import utlx.language as tlx
from utlx.kernels import grid_dependency
from utlx.kernels import ws_ring as ring
from utlx.kernels.nvidia import hopper_ws_persistent as ws
from utlx.kernels.nvidia.hopper_tma_persistent import alloc_a, alloc_b, alloc_c_staging
from utlx.kernels.nvidia.hopper_tma_persistent import store_c as _store_c
from utlx.kernels.tiles import grouped_tile

#: CTAs per cluster (the pair that shares A).
CLUSTER = tl.constexpr(2)


@triton.jit
def _pair_tile(pair, rank, M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
               SHARE_B: tl.constexpr):
    """(pid_m, pid_n) of CTA ``rank``'s tile in tile pair ``pair``: pairs ordered like tiles of twice the width
    (sharing A: same rows) or, with ``SHARE_B``, of twice the height (same columns)."""
    if SHARE_B:
        pid_pair, pid_n = grouped_tile(pair, M, N, 2 * BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        return 2 * pid_pair + rank, pid_n
    else:
        pid_m, pid_pair = grouped_tile(pair, M, N, BLOCK_SIZE_M, 2 * BLOCK_SIZE_N, GROUP_SIZE_M)
        return pid_m, 2 * pid_pair + rank


@triton.jit
def _num_pairs(M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, SHARE_B: tl.constexpr):
    """Tile pairs of the problem (an odd last row or column of tiles pairs with a tile past the edge)."""
    if SHARE_B:
        return tl.cdiv(tl.cdiv(M, BLOCK_SIZE_M), 2) * tl.cdiv(N, BLOCK_SIZE_N)
    else:
        return tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(tl.cdiv(N, BLOCK_SIZE_N), 2)


@triton.jit
def _load_a(a_desc, a_slot, off_m, off_k, bar, A_COL: tl.constexpr, MULTICAST: tl.constexpr):
    """One ``BLOCK_SIZE_M / 2``-row half of the A tile into ``a_slot``, with ``MULTICAST`` into both CTAs."""
    if MULTICAST:
        if A_COL:
            tlx.async_descriptor_load(a_desc, a_slot, [off_k, off_m], bar, multicast_targets=[0, 1])
        else:
            tlx.async_descriptor_load(a_desc, a_slot, [off_m, off_k], bar, multicast_targets=[0, 1])
    else:
        if A_COL:
            tlx.async_descriptor_load(a_desc, a_slot, [off_k, off_m], bar)
        else:
            tlx.async_descriptor_load(a_desc, a_slot, [off_m, off_k], bar)


@triton.jit
def _load_b_half(b_desc, b_slot, off_n, off_k, bar, HALF: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                 BLOCK_SIZE_K: tl.constexpr, B_COL: tl.constexpr):
    """Column half ``HALF`` of the B tile at (``off_k``, ``off_n``) into the same columns of ``b_slot`` in both
    CTAs (multicast). For column-major B the slot holds B^T, so the half is a contiguous row half."""
    HALF_N: tl.constexpr = BLOCK_SIZE_N // 2
    if B_COL:
        dst = tlx.local_slice(b_slot, [HALF * HALF_N, 0], [HALF_N, BLOCK_SIZE_K])
        tlx.async_descriptor_load(b_desc, dst, [off_n + HALF * HALF_N, off_k], bar, multicast_targets=[0, 1])
    else:
        dst = tlx.local_slice(b_slot, [0, HALF * HALF_N], [BLOCK_SIZE_K, HALF_N])
        tlx.async_descriptor_load(b_desc, dst, [off_k, off_n + HALF * HALF_N], bar, multicast_targets=[0, 1])


@triton.jit
def _produce(a_desc, b_desc, bufs_A, bufs_B, full, empty, M, N, K, BLOCK_SIZE_M: tl.constexpr,
             BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
             NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr,
             SHARE_B: tl.constexpr):
    """The producer of CTA ``rank``, every stage: sharing A, its A half ``rank`` to both CTAs and its own B
    tile; with ``SHARE_B``, both halves of its own A tile and B column half ``rank`` to both CTAs. Then the
    tail."""
    STAGE_BYTES: tl.constexpr = (BLOCK_SIZE_M * BLOCK_SIZE_K + BLOCK_SIZE_K * BLOCK_SIZE_N) * tlx.size_of(
        tlx.dtype_of(a_desc))
    HALF_M: tl.constexpr = BLOCK_SIZE_M // 2
    rank = tl.program_id(0) % 2
    num_pairs = _num_pairs(M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, SHARE_B)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    it = 0
    for pair in tl.range(tl.program_id(0) // 2, num_pairs, NUM_SMS // 2, num_stages=0):
        pid_m, pid_n = _pair_tile(pair, rank, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M, SHARE_B)
        off_m = pid_m * BLOCK_SIZE_M
        off_n = pid_n * BLOCK_SIZE_N
        for kk in tl.range(0, k_tiles, num_stages=0):
            s = it % NUM_STAGES
            tlx.barrier_wait(tlx.local_view(empty, s), ((it // NUM_STAGES) & 1) ^ 1)
            bar = tlx.local_view(full, s)
            tlx.barrier_expect_bytes(bar, STAGE_BYTES)
            off_k = kk * BLOCK_SIZE_K
            b_slot = tlx.local_view(bufs_B, s)
            if SHARE_B:
                _load_a(a_desc, tlx.local_view(bufs_A, 2 * s), off_m, off_k, bar, A_COL, False)
                _load_a(a_desc, tlx.local_view(bufs_A, 2 * s + 1), off_m + HALF_M, off_k, bar, A_COL, False)
                if rank == 0:  # a slice's offset is static: one branch per rank
                    _load_b_half(b_desc, b_slot, off_n, off_k, bar, 0, BLOCK_SIZE_N, BLOCK_SIZE_K, B_COL)
                else:
                    _load_b_half(b_desc, b_slot, off_n, off_k, bar, 1, BLOCK_SIZE_N, BLOCK_SIZE_K, B_COL)
            else:
                _load_a(a_desc, tlx.local_view(bufs_A, 2 * s + rank), off_m + rank * HALF_M, off_k, bar, A_COL, True)
                if B_COL:
                    tlx.async_descriptor_load(b_desc, b_slot, [off_n, off_k], bar)
                else:
                    tlx.async_descriptor_load(b_desc, b_slot, [off_k, off_n], bar)
            it += 1
    for _ in tl.static_range(NUM_STAGES):  # the tail: every slot's last use released, by both CTAs
        tlx.barrier_wait(tlx.local_view(empty, it % NUM_STAGES), ((it // NUM_STAGES) & 1) ^ 1)
        it += 1


@triton.jit
def _consumer(c_desc, bufs_A, bufs_B, buf_C, full, empty, M, N, K, ROW: tl.constexpr,
              BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
              GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
              A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, SHARE_B: tl.constexpr):
    """Rows ``ROW * BLOCK_SIZE_M / 2 ...`` of every tile of this CTA; slots are released to both CTAs."""
    HALF_M: tl.constexpr = BLOCK_SIZE_M // 2
    rank = tl.program_id(0) % 2
    peer = 1 - rank
    num_pairs = _num_pairs(M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, SHARE_B)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    it = 0
    for pair in tl.range(tl.program_id(0) // 2, num_pairs, NUM_SMS // 2, num_stages=0):
        pid_m, pid_n = _pair_tile(pair, rank, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M, SHARE_B)
        acc = tl.zeros((HALF_M, BLOCK_SIZE_N), dtype=tl.float32)
        acc, it = ring.mainloop(bufs_A, bufs_B, full, empty, acc, it, k_tiles, NUM_STAGES, A_COL, B_COL, 2, ROW,
                                CLUSTER, peer)
        acc = ring.retire(acc, empty, it, NUM_STAGES, CLUSTER, peer)
        _store_c(c_desc, buf_C, acc, pid_m * BLOCK_SIZE_M + ROW * HALF_M, pid_n * BLOCK_SIZE_N, HALF_M, BLOCK_SIZE_N,
                 EPILOGUE_SUBTILE)
    tlx.async_descriptor_store_wait(0)


@triton.jit
def matmul_kernel_ws_cluster(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
    A_COL: tl.constexpr = False, B_COL: tl.constexpr = False, EPILOGUE_SUBTILE: tl.constexpr = 1,
    PDL: tl.constexpr = False, SHARE_B: tl.constexpr = False,
):
    """``NUM_SMS``: the number of CTAs launched (even; clusters of two consecutive CTAs). ``A_COL`` / ``B_COL``:
    that operand is column-major and its descriptor is over its transpose. ``SHARE_B``: pairs share B, not A
    (the B descriptor's box is then half the tile's width: :func:`descriptor_blocks`)."""
    grid_dependency.begin(PDL)  # before the task split: every task starts after the previous grid
    tl.static_assert(NUM_SMS % 2 == 0, "clusters of two CTAs: launch an even number of CTAs")
    HALF_M: tl.constexpr = BLOCK_SIZE_M // 2
    dtype = tlx.dtype_of(a_desc)
    bufs_A = alloc_a(dtype, HALF_M, BLOCK_SIZE_K, 2 * NUM_STAGES, A_COL)  # slot s: halves 2s (rank 0), 2s+1
    bufs_B = alloc_b(dtype, BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES, B_COL)
    buf_C0 = alloc_c_staging(dtype, HALF_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
    buf_C1 = alloc_c_staging(dtype, HALF_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
    full = tlx.alloc_barriers(NUM_STAGES)  # the stage's bytes (own loads and the peer's A half) have landed
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2 * CLUSTER)  # both consumers of both CTAs are done
    tlx.fence_mbarrier_init_cluster()

    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.cluster_barrier()
            _consumer(c_desc, bufs_A, bufs_B, buf_C0, full, empty, M, N, K, 0, BLOCK_SIZE_M, BLOCK_SIZE_N,
                      BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE, SHARE_B)
        with tlx.async_task(num_warps=4, registers=216):
            tlx.cluster_barrier()
            _consumer(c_desc, bufs_A, bufs_B, buf_C1, full, empty, M, N, K, 1, BLOCK_SIZE_M, BLOCK_SIZE_N,
                      BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE, SHARE_B)
        with tlx.async_task(num_warps=4, registers=40):
            tlx.cluster_barrier()
            _produce(a_desc, b_desc, bufs_A, bufs_B, full, empty, M, N, K, BLOCK_SIZE_M, BLOCK_SIZE_N,
                     BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, SHARE_B)


def kernel_for(a_col: bool = False, b_col: bool = False) -> tuple[object, dict[str, bool]]:
    """The JIT kernel and the layout constexprs it takes (one kernel: the layouts are defaulted constexprs)."""
    return matmul_kernel_ws_cluster, ({"A_COL": a_col, "B_COL": b_col} if a_col or b_col else {})


def descriptor_blocks(bm: int, bn: int, bk: int, a_col: bool = False, b_col: bool = False,
                      epilogue_subtile: int = 1, share_b: bool = False) -> tuple[list, list, list]:
    """TMA boxes: the cooperative kernel's (A and C in ``bm // 2``-row halves); with ``share_b`` each CTA loads
    one ``bn // 2``-column half of B, so B's box is half as wide."""
    blk_a, blk_b, blk_c = ws.descriptor_blocks(bm, bn, bk, a_col, b_col, epilogue_subtile)
    if share_b:
        blk_b = [bn // 2, bk] if b_col else [bk, bn // 2]
    return blk_a, blk_b, blk_c


def signature(bm: int, bn: int, bk: int, dtype: str = "fp16", a_col: bool = False, b_col: bool = False,
              epilogue_subtile: int = 1, share_b: bool = False) -> dict[str, str]:
    """Signature for compiling without a GPU (see :func:`descriptor_blocks`)."""
    blk_a, blk_b, blk_c = descriptor_blocks(bm, bn, bk, a_col, b_col, epilogue_subtile, share_b)
    return {"a_desc": f"tensordesc<{dtype}{blk_a}>", "b_desc": f"tensordesc<{dtype}{blk_b}>",
            "c_desc": f"tensordesc<{dtype}{blk_c}>", "M": "i32", "N": "i32", "K": "i32"}


#: The cooperative kernel's shared-memory bound and configurations serve as they are (the rings, the C
#: staging and the registers do not change). ``SHARE_B: 1`` in a configuration selects the B-sharing pairs.
smem_bytes = ws.smem_bytes
SMEM_SLACK = ws.SMEM_SLACK
CONFIGS = list(ws.CONFIGS)


def programs(M: int, N: int, const: dict[str, int], num_sms: int) -> int:
    """CTAs to launch: one pair per tile pair, at most the SMs rounded down to an even number."""
    row_tiles, col_tiles = triton.cdiv(M, const["BLOCK_SIZE_M"]), triton.cdiv(N, const["BLOCK_SIZE_N"])
    if const.get("SHARE_B"):
        pairs = triton.cdiv(row_tiles, 2) * col_tiles
    else:
        pairs = row_tiles * triton.cdiv(col_tiles, 2)
    return 2 * max(1, min(num_sms // 2, pairs))
