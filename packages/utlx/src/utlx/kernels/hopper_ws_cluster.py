"""Warp-specialized persistent GEMM in clusters of two CTAs that share A through multicast TMA loads.

The cooperative kernel (:mod:`utlx.kernels.hopper_ws_persistent`) with one change of data flow: the two CTAs
of a cluster compute horizontally adjacent tiles (same rows of A, columns ``2 p`` and ``2 p + 1`` of B). Each
CTA loads one ``BLOCK_SIZE_M / 2``-row half of the A tile and multicasts it into both CTAs' ring slot, so
every A byte leaves L2 once per cluster instead of once per CTA: a 128x256x64 stage pulls 40 KB per CTA
instead of 48 KB, a 128x128x64 one 24 KB instead of 32 KB. Each CTA still loads its own B tile.

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
of column tiles is odd, the last pair's second tile lies past N: TMA zero-fills its B and clips its store.
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
from utlx.kernels import hopper_ws_persistent as ws
from utlx.kernels import ws_ring as ring
from utlx.kernels.hopper_pipelined import _grouped_tile
from utlx.kernels.hopper_tma_persistent import alloc_a, alloc_b, alloc_c_staging
from utlx.kernels.hopper_tma_persistent import store_c as _store_c

#: CTAs per cluster (the pair that shares A).
CLUSTER = tl.constexpr(2)


@triton.jit
def _pair_tile(pair, rank, M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    """(pid_m, pid_n) of CTA ``rank``'s tile in tile pair ``pair`` (pairs ordered like tiles of twice the width)."""
    pid_m, pid_pair = _grouped_tile(pair, M, N, BLOCK_SIZE_M, 2 * BLOCK_SIZE_N, GROUP_SIZE_M)
    return pid_m, 2 * pid_pair + rank


@triton.jit
def _produce(a_desc, b_desc, bufs_A, bufs_B, full, empty, M, N, K, BLOCK_SIZE_M: tl.constexpr,
             BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
             NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr):
    """The producer of CTA ``rank``: A half ``rank`` of every stage to both CTAs, its own B tile, then the tail."""
    STAGE_BYTES: tl.constexpr = (BLOCK_SIZE_M * BLOCK_SIZE_K + BLOCK_SIZE_K * BLOCK_SIZE_N) * tlx.size_of(
        tlx.dtype_of(a_desc))
    HALF_M: tl.constexpr = BLOCK_SIZE_M // 2
    rank = tl.program_id(0) % 2
    num_pairs = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(tl.cdiv(N, BLOCK_SIZE_N), 2)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    it = 0
    for pair in tl.range(tl.program_id(0) // 2, num_pairs, NUM_SMS // 2, num_stages=0):
        pid_m, pid_n = _pair_tile(pair, rank, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        off_m = pid_m * BLOCK_SIZE_M + rank * HALF_M
        off_n = pid_n * BLOCK_SIZE_N
        for kk in tl.range(0, k_tiles, num_stages=0):
            s = it % NUM_STAGES
            tlx.barrier_wait(tlx.local_view(empty, s), ((it // NUM_STAGES) & 1) ^ 1)
            bar = tlx.local_view(full, s)
            tlx.barrier_expect_bytes(bar, STAGE_BYTES)
            off_k = kk * BLOCK_SIZE_K
            a_slot = tlx.local_view(bufs_A, 2 * s + rank)
            if A_COL:
                tlx.async_descriptor_load(a_desc, a_slot, [off_k, off_m], bar, multicast_targets=[0, 1])
            else:
                tlx.async_descriptor_load(a_desc, a_slot, [off_m, off_k], bar, multicast_targets=[0, 1])
            if B_COL:
                tlx.async_descriptor_load(b_desc, tlx.local_view(bufs_B, s), [off_n, off_k], bar)
            else:
                tlx.async_descriptor_load(b_desc, tlx.local_view(bufs_B, s), [off_k, off_n], bar)
            it += 1
    for _ in tl.static_range(NUM_STAGES):  # the tail: every slot's last use released, by both CTAs
        tlx.barrier_wait(tlx.local_view(empty, it % NUM_STAGES), ((it // NUM_STAGES) & 1) ^ 1)
        it += 1


@triton.jit
def _consumer(c_desc, bufs_A, bufs_B, buf_C, full, empty, M, N, K, ROW: tl.constexpr,
              BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
              GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
              A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr):
    """Rows ``ROW * BLOCK_SIZE_M / 2 ...`` of every tile of this CTA; slots are released to both CTAs."""
    HALF_M: tl.constexpr = BLOCK_SIZE_M // 2
    rank = tl.program_id(0) % 2
    peer = 1 - rank
    num_pairs = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(tl.cdiv(N, BLOCK_SIZE_N), 2)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    it = 0
    for pair in tl.range(tl.program_id(0) // 2, num_pairs, NUM_SMS // 2, num_stages=0):
        pid_m, pid_n = _pair_tile(pair, rank, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
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
    PDL: tl.constexpr = False,
):
    """``NUM_SMS``: the number of CTAs launched (even; clusters of two consecutive CTAs). ``A_COL`` / ``B_COL``:
    that operand is column-major and its descriptor is over its transpose."""
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
                      BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE)
        with tlx.async_task(num_warps=4, registers=216):
            tlx.cluster_barrier()
            _consumer(c_desc, bufs_A, bufs_B, buf_C1, full, empty, M, N, K, 1, BLOCK_SIZE_M, BLOCK_SIZE_N,
                      BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE)
        with tlx.async_task(num_warps=4, registers=40):
            tlx.cluster_barrier()
            _produce(a_desc, b_desc, bufs_A, bufs_B, full, empty, M, N, K, BLOCK_SIZE_M, BLOCK_SIZE_N,
                     BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL)


def kernel_for(a_col: bool = False, b_col: bool = False) -> tuple[object, dict[str, bool]]:
    """The JIT kernel and the layout constexprs it takes (one kernel: the layouts are defaulted constexprs)."""
    return matmul_kernel_ws_cluster, ({"A_COL": a_col, "B_COL": b_col} if a_col or b_col else {})


#: The cooperative kernel's host-side description serves as it is: same descriptors (A in halves), signature,
#: configurations (shared memory and registers do not change) and shared-memory bound.
descriptor_blocks = ws.descriptor_blocks
signature = ws.signature
smem_bytes = ws.smem_bytes
SMEM_SLACK = ws.SMEM_SLACK
CONFIGS = list(ws.CONFIGS)


def programs(M: int, N: int, const: dict[str, int], num_sms: int) -> int:
    """CTAs to launch: one pair per tile pair, at most the SMs rounded down to an even number."""
    pairs = triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(triton.cdiv(N, const["BLOCK_SIZE_N"]), 2)
    return 2 * max(1, min(num_sms // 2, pairs))
