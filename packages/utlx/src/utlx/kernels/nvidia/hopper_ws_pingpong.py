"""Warp-specialized persistent GEMM for Hopper, "pingpong": two consumer warpgroups take turns on whole tiles.

Why a second warp-specialized design: in :mod:`utlx.kernels.nvidia.hopper_ws_persistent` ("cooperative") both
consumer warpgroups work on halves of one tile, so while they write C (accumulator -> fp16 -> shared
memory -> TMA store) no wgmma is issued and the tensor cores idle. Here each consumer owns every other
tile of its program and a whole ``BLOCK_SIZE_M x BLOCK_SIZE_N`` accumulator, so one warpgroup's
epilogue runs while the other one's main loop keeps the tensor cores busy (the epilogue is ~1.5% of a
tile's time at K = 4096 and ~6% at K = 1024 on the H200).

Tasks (``with tlx.async_tasks():``):

* producer (``async_task(num_warps=1)``): for every k-step of every tile of the program, in tile order,
  waits until ring slot ``s`` is free (``empty[s]``), tells ``full[s]`` to expect the stage's bytes and
  issues the A and B TMA loads;
* consumer ``c`` (the default task, and one ``async_task(num_warps=4)``): the program's tiles ``j`` with
  ``j % 2 == c``. Tile ``j``'s k-steps have the global indices ``j * k_tiles ...``, from which ring slot and
  barrier phase follow. It keeps one wgmma in flight and releases the slot the previous one read
  (``empty`` takes one arrival per phase: only one consumer reads a given stage).

Turns: an mbarrier wait names a phase by its parity only, so it is exact only while the waiter is at most
one phase ahead of the barrier. Consumer 1's first k-step of tile 1 waits for the *second* completion of its
``full`` slot; on a barrier that has not completed its first one yet that parity reads as done, and
consumer 1 would read an empty slot (utlx's interpreter hazard checker caught exactly this). So the
consumers take turns: each waits on its ``turn`` barrier before a tile's main loop (consumer 0 not before
its first), and when its own main loop has passed its last ``full`` wait it arrives on the other's. Then
every ``full`` phase a consumer waits for is the next one of that slot. The turns cost no overlap: the
arrival comes before the last wgmmas retire and before the epilogue, so one consumer's epilogue still
runs under the other one's main loop.

Registers: each consumer holds a whole fp32 accumulator (128 per thread at 128x128 or 64x256), so the
tiles are 128x128 or 64x256 (128x256 would need 256). TMA zero-fills out-of-range boxes and clips stores,
so any M, N, K >= 1 work (row strides must be 16-byte multiples, a TMA rule).
"""

from __future__ import annotations

import triton
import triton.language as tl

import utlx.language as tlx
from utlx.kernels import grid_dependency
from utlx.kernels import ws_ring as ring
from utlx.kernels.nvidia.hopper_tma_persistent import (
    alloc_a,
    alloc_b,
    alloc_c_staging,
    c_staging_bytes,
    column_major,
    epilogue_subtile,
)
from utlx.kernels.nvidia.hopper_tma_persistent import descriptor_blocks as _tma_descriptor_blocks
from utlx.kernels.nvidia.hopper_tma_persistent import signature as _tma_signature
from utlx.kernels.nvidia.hopper_tma_persistent import store_c as _store_c
from utlx.kernels.tiles import grouped_tile, layout_kernel


@triton.jit
def _consumer(c_desc, bufs_A, bufs_B, buf_C, full, empty, my_turn, other_turn, M, N, K, TURN: tl.constexpr,
              BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
              GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
              A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr):
    """Tiles ``j = TURN, TURN + 2, ...`` of this program (tile ``pid + j * NUM_SMS``); waits on ``my_turn``
    before each main loop (consumer 0 not before its first: its n-th wait is that barrier's completion
    ``n - 1 + TURN``) and arrives on ``other_turn`` after it."""
    num_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    pid = tl.program_id(0)
    n = 0  # tiles this consumer has done; the current one is the program's tile j = TURN + 2 n
    for tile in tl.range(pid + TURN * NUM_SMS, num_tiles, 2 * NUM_SMS, num_stages=0):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        if n + TURN > 0:  # j > 0: wait until the other consumer has passed its last full wait of tile j - 1
            tlx.barrier_wait(my_turn, (n - 1 + TURN) & 1)
        it = (TURN + 2 * n) * k_tiles  # global index of this tile's first k-step (the producer's order)
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        acc, it = ring.mainloop(bufs_A, bufs_B, full, empty, acc, it, k_tiles, NUM_STAGES, A_COL, B_COL)
        tlx.barrier_arrive(other_turn)  # every full wait of this tile is behind us: the other consumer's turn
        acc = ring.retire(acc, empty, it, NUM_STAGES)
        _store_c(c_desc, buf_C, acc, pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N, BLOCK_SIZE_M, BLOCK_SIZE_N,
                 EPILOGUE_SUBTILE)
        n += 1
    tlx.async_descriptor_store_wait(0)


@triton.jit
def matmul_kernel_ws_pingpong(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr = 1, PDL: tl.constexpr = False,
):
    """Row-major A and B. ``EPILOGUE_SUBTILE``: C column slices per tile; ``PDL``: see ``grid_dependency``."""
    _pingpong_gemm(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M,
                   NUM_STAGES, NUM_SMS, False, False, EPILOGUE_SUBTILE, PDL)


@triton.jit
def matmul_kernel_ws_pingpong_colmajor(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr = 1, PDL: tl.constexpr = False,
):
    """``A_COL`` / ``B_COL``: that operand is column-major and its descriptor is over its transpose."""
    _pingpong_gemm(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M,
                   NUM_STAGES, NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE, PDL)


@triton.jit
def _pingpong_gemm(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, PDL: tl.constexpr,
):
    grid_dependency.begin(PDL)  # before the task split: every task starts after the previous grid
    dtype = tlx.dtype_of(a_desc)
    bufs_A = alloc_a(dtype, BLOCK_SIZE_M, BLOCK_SIZE_K, NUM_STAGES, A_COL)
    bufs_B = alloc_b(dtype, BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES, B_COL)
    buf_C0 = alloc_c_staging(dtype, BLOCK_SIZE_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)  # one per consumer
    buf_C1 = alloc_c_staging(dtype, BLOCK_SIZE_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
    full = tlx.alloc_barriers(NUM_STAGES)  # producer -> consumers: the stage's bytes have landed
    empty = tlx.alloc_barriers(NUM_STAGES)  # the one consumer that read the stage -> producer
    turns = tlx.alloc_barriers(2)  # turns[c]: consumer c may start its next main loop

    with tlx.async_tasks():
        with tlx.async_task("default"):
            _consumer(c_desc, bufs_A, bufs_B, buf_C0, full, empty, tlx.local_view(turns, 0), tlx.local_view(turns, 1),
                      M, N, K, 0, BLOCK_SIZE_M, BLOCK_SIZE_N,
                      BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE)
        with tlx.async_task(num_warps=4, registers=216):
            _consumer(c_desc, bufs_A, bufs_B, buf_C1, full, empty, tlx.local_view(turns, 1), tlx.local_view(turns, 0),
                      M, N, K, 1, BLOCK_SIZE_M, BLOCK_SIZE_N,
                      BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE)
        with tlx.async_task(num_warps=1, registers=40):
            ring.produce(a_desc, b_desc, bufs_A, bufs_A, bufs_B, full, empty, M, N, K, BLOCK_SIZE_M, BLOCK_SIZE_N,
                         BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, False)


def kernel_for(a_col: bool = False, b_col: bool = False) -> tuple[object, dict[str, bool]]:
    """The JIT kernel for an operand layout and the layout constexprs it takes (none for row-major A and B)."""
    return layout_kernel(matmul_kernel_ws_pingpong, matmul_kernel_ws_pingpong_colmajor, a_col, b_col)


#: TMA boxes: whole tiles of A and B, C in ``bn / EPILOGUE_SUBTILE``-column slices (the persistent kernel's).
descriptor_blocks = _tma_descriptor_blocks
signature = _tma_signature


def _cfg(bm: int, bn: int, bk: int, stages: int, group_m: int = 8, epilogue_subtile: int = 1) -> dict[str, int]:
    cfg = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group_m, "NUM_STAGES": stages}
    return cfg if epilogue_subtile == 1 else dict(cfg, EPILOGUE_SUBTILE=epilogue_subtile)


#: (constexprs without NUM_SMS, num_warps of one consumer). Shared memory: 128x128x64 stages are 32 KB and
#: 64x256x64 ones 40 KB; each consumer stages its C tile (32 KB whole, 16 KB as two subtiled slices).
CONFIGS = [
    (_cfg(128, 128, 64, 5, epilogue_subtile=4), 4),   # 160 + 32 KB
    (_cfg(128, 128, 64, 4), 4),                       # 128 + 64 KB
    (_cfg(64, 256, 64, 4, epilogue_subtile=4), 4),    # 160 + 32 KB
    (_cfg(128, 128, 64, 6, epilogue_subtile=4), 4),   # 192 + 32 KB
]

#: Barriers and alignment on top of the rings and the epilogue tiles.
SMEM_SLACK = 1024


def smem_bytes(const: dict[str, int], elem_bytes: int = 2) -> int:
    """Upper bound of one block's shared memory: the A/B ring, the two consumers' C staging, barriers, slack."""
    bm, bn, bk = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"]
    staging = 2 * c_staging_bytes(bm, bn, epilogue_subtile(const), elem_bytes)
    return const["NUM_STAGES"] * (bm + bn) * bk * elem_bytes + staging + SMEM_SLACK


def programs(M: int, N: int, const: dict[str, int], num_sms: int) -> int:
    """Grid size: one program per SM at most (each program alternates its tiles between the consumers)."""
    return max(1, min(num_sms, triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"])))


def launch(a, b, c, config=0, num_sms=None):
    """Run the kernel on torch tensors ``c = a @ b`` (host-side TMA descriptors; A and B row- or column-major)."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    const, nw = CONFIGS[config] if isinstance(config, int) else config
    num_sms = num_sms or torch.cuda.get_device_properties(a.device).multi_processor_count
    M, N = a.shape[0], b.shape[1]
    a_col, b_col = column_major(a), column_major(b)
    grid = (programs(M, N, const, num_sms),)
    fn, layout = kernel_for(a_col, b_col)
    blk_a, blk_b, blk_c = descriptor_blocks(const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"],
                                            a_col, b_col, epilogue_subtile(const))
    fn[grid](TensorDescriptor.from_tensor(a.T if a_col else a, blk_a),
             TensorDescriptor.from_tensor(b.T if b_col else b, blk_b), TensorDescriptor.from_tensor(c, blk_c),
             M, N, a.shape[1], **const, NUM_SMS=grid[0], **layout, num_warps=nw)
