"""Warp-specialized persistent GEMM for Hopper: a 1-warp TMA producer feeds two wgmma consumer warpgroups.

Tasks (``with tlx.async_tasks():``, compiled to ``ttg.warp_specialize``):

* producer (``async_task(num_warps=1)``): for every k-step of every tile it owns, waits until ring slot
  ``s`` is free (``empty[s]``), tells ``full[s]`` to expect the stage's bytes and issues three TMA loads
  (the two 64-row halves of A and the B tile) that complete on ``full[s]``;
* consumers (the default task and one ``async_task(num_warps=4)``): each owns one half of the
  ``BLOCK_SIZE_M`` rows. It waits on ``full[s]``, runs ``async_dot`` keeping one wgmma in flight, and
  releases the slot the *previous* wgmma read (``empty``, 2 arrivals per phase: one per consumer). The
  epilogue stages its half of C in shared memory and writes it with a TMA store that overlaps the next tile;
  with ``EPILOGUE_SUBTILE`` = S > 1 it does so in S column slices through two small buffers per consumer
  (:func:`utlx.kernels.nvidia.hopper_tma_persistent.store_c`), which is what lets 128x256x64 take 4 stages (two
  64x256 halves: 64 KB; two pairs of 64x64 slices: 32 KB).

Why two consumer tasks instead of one 8-warp task: an mbarrier arrive is made by one thread of its task,
and ``wgmma.wait_group`` only covers the issuing warpgroup; one arrival per warpgroup is the only way to
release a slot when both halves are really done reading it.

Phases: with a global k-step counter ``it``, slot ``s = it % NUM_STAGES`` is in round ``r = it //
NUM_STAGES``; consumers wait for ``full`` phase ``r & 1``, the producer for ``empty`` phase ``(r & 1) ^ 1``
(a fresh barrier counts its phase "1" as already complete, so the first round does not wait).
TMA zero-fills out-of-range boxes and clips stores, so any M, N, K >= 1 work (row strides must be
16-byte multiples, a TMA rule).
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
    check_epilogue_subtile,
    column_major,
    epilogue_subtile,
)
from utlx.kernels.nvidia.hopper_tma_persistent import store_c as _store_c
from utlx.kernels.tiles import grouped_tile, layout_kernel
from utlx.launch import FastLaunch


@triton.jit
def _consumer(c_desc, bufs_A, bufs_B, buf_C, full, empty, M, N, K, ROW: tl.constexpr,
              BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
              GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
              A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr):
    """Rows ``ROW * BLOCK_SIZE_M / 2 ...`` of every tile of this program."""
    num_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N, BLOCK_SIZE_N)
    consume_tiles(c_desc, bufs_A, bufs_B, buf_C, full, empty, M, N, K, num_tiles, ROW, BLOCK_SIZE_M, BLOCK_SIZE_N,
                  BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE)
    tlx.async_descriptor_store_wait(0)


@triton.jit
def consume_tiles(c_desc, bufs_A, bufs_B, buf_C, full, empty, M, N, K, end, ROW: tl.constexpr,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
                  A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr):
    """A consumer's half of whole tiles ``pid, pid + NUM_SMS, ...`` below ``end``, the program's first tiles
    (whole K, C stored; the stores stay in flight); returns how many k-steps that was."""
    HALF_M: tl.constexpr = BLOCK_SIZE_M // 2
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    it = 0
    for tile in tl.range(tl.program_id(0), end, NUM_SMS, num_stages=0):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        acc, it = ring.whole_tile(bufs_A, bufs_B, full, empty, it, k_tiles, HALF_M, BLOCK_SIZE_N, NUM_STAGES, A_COL,
                                  B_COL)
        _store_c(c_desc, buf_C, acc, pid_m * BLOCK_SIZE_M + ROW * HALF_M, pid_n * BLOCK_SIZE_N, HALF_M, BLOCK_SIZE_N,
                 EPILOGUE_SUBTILE)
    return it


@triton.jit
def matmul_kernel_ws_persistent(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr = 1, PDL: tl.constexpr = False,
):
    """Row-major A and B. ``EPILOGUE_SUBTILE``: C column slices per consumer half-tile (1: the whole half).
    ``PDL``: launched with programmatic dependent launch (:mod:`utlx.kernels.grid_dependency`)."""
    _ws_gemm(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES,
             NUM_SMS, False, False, EPILOGUE_SUBTILE, PDL)


@triton.jit
def matmul_kernel_ws_persistent_colmajor(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr = 1, PDL: tl.constexpr = False,
):
    """``A_COL`` / ``B_COL``: that operand is column-major and its descriptor is over its transpose."""
    _ws_gemm(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES,
             NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE, PDL)


@triton.jit
def _ws_gemm(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, PDL: tl.constexpr,
):
    grid_dependency.begin(PDL)  # before the task split: every task starts after the previous grid
    HALF_M: tl.constexpr = BLOCK_SIZE_M // 2
    dtype = tlx.dtype_of(a_desc)
    bufs_A0 = alloc_a(dtype, HALF_M, BLOCK_SIZE_K, NUM_STAGES, A_COL)  # one half of A per consumer
    bufs_A1 = alloc_a(dtype, HALF_M, BLOCK_SIZE_K, NUM_STAGES, A_COL)
    bufs_B = alloc_b(dtype, BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES, B_COL)
    buf_C0 = alloc_c_staging(dtype, HALF_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
    buf_C1 = alloc_c_staging(dtype, HALF_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
    full = tlx.alloc_barriers(NUM_STAGES)  # producer -> consumers: the stage's bytes have landed
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)  # consumers -> producer: both halves are done

    with tlx.async_tasks():
        with tlx.async_task("default"):
            _consumer(c_desc, bufs_A0, bufs_B, buf_C0, full, empty, M, N, K, 0, BLOCK_SIZE_M, BLOCK_SIZE_N,
                      BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE)
        with tlx.async_task(num_warps=4, registers=216):
            _consumer(c_desc, bufs_A1, bufs_B, buf_C1, full, empty, M, N, K, 1, BLOCK_SIZE_M, BLOCK_SIZE_N,
                      BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE)
        with tlx.async_task(num_warps=1, registers=40):
            ring.produce(a_desc, b_desc, bufs_A0, bufs_A1, bufs_B, full, empty, M, N, K, BLOCK_SIZE_M, BLOCK_SIZE_N,
                         BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, True)


def kernel_for(a_col: bool = False, b_col: bool = False) -> tuple[object, dict[str, bool]]:
    """The JIT kernel for an operand layout and the layout constexprs it takes (none for row-major A and B)."""
    return layout_kernel(matmul_kernel_ws_persistent, matmul_kernel_ws_persistent_colmajor, a_col, b_col)


def descriptor_blocks(bm: int, bn: int, bk: int, a_col: bool = False, b_col: bool = False,
                      epilogue_subtile: int = 1) -> tuple[list, list, list]:
    """TMA box of the A, B and C descriptors (A and C in ``bm // 2``-row halves, C in ``bn /
    epilogue_subtile``-column slices); a column-major operand's descriptor is over its transpose."""
    check_epilogue_subtile(bn, epilogue_subtile)
    h = bm // 2
    return ([bk, h] if a_col else [h, bk]), ([bn, bk] if b_col else [bk, bn]), [h, bn // epilogue_subtile]


def signature(bm: int, bn: int, bk: int, dtype: str = "fp16", a_col: bool = False,
              b_col: bool = False, epilogue_subtile: int = 1) -> dict[str, str]:
    """Signature for compiling without a GPU (host-side descriptors: A and C in 64-row halves)."""
    blk_a, blk_b, blk_c = descriptor_blocks(bm, bn, bk, a_col, b_col, epilogue_subtile)
    return {"a_desc": f"tensordesc<{dtype}{blk_a}>", "b_desc": f"tensordesc<{dtype}{blk_b}>",
            "c_desc": f"tensordesc<{dtype}{blk_c}>", "M": "i32", "N": "i32", "K": "i32"}


def _cfg(bm: int, bn: int, bk: int, stages: int, group_m: int = 8, epilogue_subtile: int = 1) -> dict[str, int]:
    """Constexprs of one configuration (``EPILOGUE_SUBTILE`` only when it is not the default 1)."""
    cfg = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group_m, "NUM_STAGES": stages}
    return cfg if epilogue_subtile == 1 else dict(cfg, EPILOGUE_SUBTILE=epilogue_subtile)


#: (constexprs without NUM_SMS, num_warps) for H100/H200. num_warps is the default task's (one consumer
#: warpgroup); the kernel runs 4 + 4 + 1 warps. Shared memory: 128x256x64 x3 stages = 208 KB; x4 stages
#: with the C halves stored in 64x64 slices (two 8 KB buffers per consumer) = 224 KB.
#: Registers: Triton raises the default task to 256 per thread (setmaxnreg); 216 for the other consumer and
#: 40 for the producer's warpgroup keep (256 + 216 + 40) x 128 threads within the SM's 64K registers.
CONFIGS = [
    (_cfg(128, 256, 64, 3), 4),
    (_cfg(128, 128, 64, 4), 4),
    (_cfg(128, 256, 64, 4, epilogue_subtile=4), 4),
    # groups of 16 row tiles: on the H200 (2026-12-01, fifth session) 0.7-3% ahead of groups of 8 at 4096^3 fp16,
    # 8192^3 bf16 and 8192x8192x16384 fp16, 6% behind at 8192x8192x1024; the tuner picks per shape
    (_cfg(128, 256, 64, 3, group_m=16), 4),
]


#: Barriers and alignment on top of the rings and the epilogue tile (measured: 224-232 bytes on 3.8).
SMEM_SLACK = 1024


def smem_bytes(const: dict[str, int], elem_bytes: int = 2) -> int:
    """Upper bound of the shared memory one block uses: the A/B rings, the two consumers' C staging,
    barriers and slack."""
    bm, bn, bk = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"]
    staging = 2 * c_staging_bytes(bm // 2, bn, epilogue_subtile(const), elem_bytes)
    return const["NUM_STAGES"] * (bm + bn) * bk * elem_bytes + staging + SMEM_SLACK


def make_launcher(M: int, N: int, config, num_sms: int, a_col: bool = False, b_col: bool = False):
    """A ``run(a, b, c)`` for one problem size and operand layout: grid computed once, descriptors per call."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    const, nw = config
    bm, bn, bk = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"]
    grid = (min(num_sms, triton.cdiv(M, bm) * triton.cdiv(N, bn)),)
    fn, layout = kernel_for(a_col, b_col)
    kernel = FastLaunch(fn, grid, dict(const, NUM_SMS=grid[0], **layout), nw)
    blk_a, blk_b, blk_c = descriptor_blocks(bm, bn, bk, a_col, b_col, epilogue_subtile(const))
    from_tensor = TensorDescriptor.from_tensor

    def run(a, b, c):
        kernel(from_tensor(a.T if a_col else a, blk_a), from_tensor(b.T if b_col else b, blk_b),
               from_tensor(c, blk_c), a.shape[0], b.shape[1], a.shape[1])

    return run


def launch(a, b, c, config=0, num_sms=None):
    """Run the kernel on torch tensors ``c = a @ b`` (host-side TMA descriptors; A and B row- or column-major)."""
    import torch

    const_nw = CONFIGS[config] if isinstance(config, int) else config
    num_sms = num_sms or torch.cuda.get_device_properties(a.device).multi_processor_count
    make_launcher(a.shape[0], b.shape[1], const_nw, num_sms, column_major(a), column_major(b))(a, b, c)


def ws_candidates() -> list[tuple[str, object, list]]:
    """Candidates for ``utlx.matmul``: ``(name, launch, configs)``; ``launch(a, b, c, config)`` computes a @ b.

    Hopper only (cuda:90, TMA + wgmma + warp specialization); A and B row- or column-major, C row-major,
    16-byte aligned base pointers and major strides.
    """
    return [("hopper_ws_persistent", launch, list(CONFIGS))]
