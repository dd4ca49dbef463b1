"""Persistent GEMM for Hopper: TMA loads into an mbarrier-tracked ring, asynchronous wgmma, TMA store.

One program per SM walks the output tiles ``pid, pid + NUM_SMS, ...``. For each tile:

* prologue: ``NUM_STAGES - 1`` k-steps are requested by TMA; each stage's mbarrier is told how many
  bytes to expect (``barrier_expect_bytes``) and completes when both tiles have landed;
* main loop: wait for the stage's barrier (phase = how many times this barrier was used, mod 2), start
  ``async_dot``, retire the previous dot (``async_dot_wait(1)``) and refill the buffer it read;
* epilogue: accumulator -> shared memory -> ``async_descriptor_store`` (TMA); the store of tile ``t``
  overlaps the main loop of tile ``t+1`` and is waited for only before the staging buffer is reused.

Epilogue subtiling (``EPILOGUE_SUBTILE`` = S > 1): C leaves in S column slices of ``BLOCK_SIZE_N / S``
through two small staging buffers used in turn, instead of one ``BLOCK_SIZE_M x BLOCK_SIZE_N`` tile. Why:
the staging tile competes with the ring for the 227 KB of shared memory; at 128x256x64 fp16 the full
tile (64 KB) leaves room for 3 stages of 48 KB, four 128x64 slices double-buffered (32 KB) for 4. The
accumulator is cut into slices in registers (``reshape`` to ``[M, 2, N/2]``, ``permute``, ``split``: each
thread already holds elements of every column slice, so no data moves between threads), and each slice
waits only for the store that used its buffer two slices earlier (``async_descriptor_store_wait(1)``).
The C descriptor's box is one slice (:func:`descriptor_blocks`).

A counter carried across tiles (``it``) gives every k-step a global index, from which the ring slot and
the barrier phase follow. Descriptors are host-side ``triton.tools.tensor_descriptor.TensorDescriptor``s
(block shapes ``[BM, BK]``, ``[BK, BN]``, ``[BM, BN]``); TMA zero-fills out-of-range boxes and clips the
store, so any M, N, K work.

Launch (:func:`launch`, :func:`make_launcher`): ``grid_mode="persistent"`` runs ``min(#SMs, tiles)``
programs; ``"tiles"`` (the split grid) runs one program per tile and lets the hardware overlap blocks.
:data:`CONFIGS` and :data:`TILE_CONFIGS` are the H100/H200 configurations ``utlx.matmul`` tries;
:func:`smem_bytes` / :func:`fits` check the 227 KB per-block limit before compiling.
"""

from __future__ import annotations

import triton
import triton.language as tl

import utlx.language as tlx
from utlx.kernels import grid_dependency
from utlx.kernels.tiles import grouped_tile, layout_kernel
from utlx.launch import FastLaunch


@triton.jit
def _load_ab(a_desc, b_desc, buffers_A, buffers_B, s, bar, off_m, off_n, off_k, pred, A_COL: tl.constexpr,
             B_COL: tl.constexpr):
    """Request ring slot ``s``'s A and B tiles (k-offset ``off_k``) by TMA, completing on ``bar``."""
    if A_COL:
        tlx.async_descriptor_load(a_desc, tlx.local_view(buffers_A, s), [off_k, off_m], bar, pred=pred)
    else:
        tlx.async_descriptor_load(a_desc, tlx.local_view(buffers_A, s), [off_m, off_k], bar, pred=pred)
    if B_COL:
        tlx.async_descriptor_load(b_desc, tlx.local_view(buffers_B, s), [off_n, off_k], bar, pred=pred)
    else:
        tlx.async_descriptor_load(b_desc, tlx.local_view(buffers_B, s), [off_k, off_n], bar, pred=pred)


@triton.jit
def _request_step(a_desc, b_desc, buffers_A, buffers_B, ready, it, kk, off_m, off_n, k_first, k_tiles,
                  BLOCK_SIZE_K: tl.constexpr, NUM_STAGES: tl.constexpr, STAGE_BYTES: tl.constexpr,
                  A_COL: tl.constexpr, B_COL: tl.constexpr):
    """Request k-step ``kk``'s tiles into its ring slot (``(it + kk) % NUM_STAGES``): the slot's barrier expects
    ``STAGE_BYTES`` and both TMA loads complete on it; predicated off (nothing issued) past ``k_tiles``."""
    s = (it + kk) % NUM_STAGES
    bar = tlx.local_view(ready, s)
    valid = kk < k_tiles
    tlx.barrier_expect_bytes(bar, STAGE_BYTES, pred=valid)
    _load_ab(a_desc, b_desc, buffers_A, buffers_B, s, bar, off_m, off_n, (k_first + kk) * BLOCK_SIZE_K, valid,
             A_COL, B_COL)


@triton.jit
def mainloop(a_desc, b_desc, buffers_A, buffers_B, ready, it, off_m, off_n, k_first, k_tiles,
             BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
             NUM_STAGES: tl.constexpr, STAGE_BYTES: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr):
    """The fp32 ``[BLOCK_SIZE_M, BLOCK_SIZE_N]`` product of k-steps ``[k_first, k_first + k_tiles)`` of the tile
    at ``(off_m, off_n)``, all dots retired.

    ``it``: how many k-steps this program already ran through the ring (over every earlier tile or K range):
    k-step ``kk`` uses ring slot ``(it + kk) % NUM_STAGES`` and waits for phase ``((it + kk) // NUM_STAGES) & 1``
    of that slot's barrier, so the caller adds ``k_tiles`` to ``it`` afterwards. ``k_tiles`` may be 0 (the
    result is then zero and no load is issued).
    """
    for i in tl.range(0, NUM_STAGES - 1, num_stages=0):
        _request_step(a_desc, b_desc, buffers_A, buffers_B, ready, it, i, off_m, off_n, k_first, k_tiles, BLOCK_SIZE_K,
                      NUM_STAGES, STAGE_BYTES, A_COL, B_COL)

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for kk in tl.range(0, k_tiles, num_stages=0):
        s = (it + kk) % NUM_STAGES
        tlx.barrier_wait(tlx.local_view(ready, s), ((it + kk) // NUM_STAGES) & 1)
        a_s = tlx.local_view(buffers_A, s)
        b_s = tlx.local_view(buffers_B, s)
        if A_COL:
            a_s = tlx.local_trans(a_s)
        if B_COL:
            b_s = tlx.local_trans(b_s)
        acc = tlx.async_dot(a_s, b_s, acc)
        # Retire the previous dot; its stage is the one refilled below.
        acc = tlx.async_dot_wait(1, acc)
        _request_step(a_desc, b_desc, buffers_A, buffers_B, ready, it, kk + NUM_STAGES - 1, off_m, off_n, k_first,
                      k_tiles, BLOCK_SIZE_K, NUM_STAGES, STAGE_BYTES, A_COL, B_COL)
    return tlx.async_dot_wait(0, acc)


#: Column slices the epilogue may store C in (``EPILOGUE_SUBTILE``); 1 is the whole tile.
EPILOGUE_SUBTILES = (1, 2, 4)


@triton.jit
def _column_halves(x, ROWS: tl.constexpr, COLS: tl.constexpr):
    """The left and right column halves of a ``[ROWS, COLS]`` register tile."""
    return tl.split(tl.permute(tl.reshape(x, (ROWS, 2, COLS // 2)), (0, 2, 1)))


@triton.jit
def _store_slice(c_desc, buffers_C, slot: tl.constexpr, value, off_m, off_n):
    """Stage one C slice in buffer ``slot`` of two and TMA-store it; the store issued two slices ago read
    this buffer, so wait until at most one store (the previous slice's) is still reading."""
    c_smem = tlx.local_view(buffers_C, slot)
    tlx.async_descriptor_store_wait(1)
    tlx.local_store(c_smem, value)
    tlx.fence_async_shared()
    tlx.async_descriptor_store(c_desc, c_smem, [off_m, off_n])


@triton.jit
def store_c(c_desc, buffers_C, acc, off_m, off_n, ROWS: tl.constexpr, COLS: tl.constexpr,
            EPILOGUE_SUBTILE: tl.constexpr):
    """Write the ``[ROWS, COLS]`` fp32 accumulator to C at ``(off_m, off_n)`` through TMA stores that stay in
    flight after return (a later call, or ``async_descriptor_store_wait(0)`` at the end, waits for them).

    ``buffers_C``: one ``[ROWS, COLS]`` buffer when ``EPILOGUE_SUBTILE`` is 1, else two of ``[ROWS, COLS /
    EPILOGUE_SUBTILE]``; ``c_desc``'s box is the same shape.
    """
    tl.static_assert(EPILOGUE_SUBTILE == 1 or EPILOGUE_SUBTILE == 2 or EPILOGUE_SUBTILE == 4,
                     "EPILOGUE_SUBTILE must be 1, 2 or 4")
    tl.static_assert(COLS % EPILOGUE_SUBTILE == 0, "BLOCK_SIZE_N must be a multiple of EPILOGUE_SUBTILE")
    c = acc.to(tlx.dtype_of(c_desc))
    if EPILOGUE_SUBTILE == 1:
        c_smem = tlx.local_view(buffers_C, 0)
        tlx.async_descriptor_store_wait(0)  # the previous tile's store has finished reading c_smem
        tlx.local_store(c_smem, c)
        tlx.fence_async_shared()
        tlx.async_descriptor_store(c_desc, c_smem, [off_m, off_n])
    elif EPILOGUE_SUBTILE == 2:
        left, right = _column_halves(c, ROWS, COLS)
        _store_slice(c_desc, buffers_C, 0, left, off_m, off_n)
        _store_slice(c_desc, buffers_C, 1, right, off_m, off_n + COLS // 2)
    else:
        left, right = _column_halves(c, ROWS, COLS)
        q0, q1 = _column_halves(left, ROWS, COLS // 2)
        q2, q3 = _column_halves(right, ROWS, COLS // 2)
        SLICE: tl.constexpr = COLS // 4
        _store_slice(c_desc, buffers_C, 0, q0, off_m, off_n)
        _store_slice(c_desc, buffers_C, 1, q1, off_m, off_n + SLICE)
        _store_slice(c_desc, buffers_C, 0, q2, off_m, off_n + 2 * SLICE)
        _store_slice(c_desc, buffers_C, 1, q3, off_m, off_n + 3 * SLICE)


@triton.jit
def matmul_kernel_tma_persistent(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr = 1, PDL: tl.constexpr = False,
):
    """Row-major A and B. ``EPILOGUE_SUBTILE``: C column slices per tile (see the module docstring). ``PDL``:
    launched with programmatic dependent launch (:mod:`utlx.kernels.grid_dependency`)."""
    _tma_gemm(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES,
              NUM_SMS, False, False, EPILOGUE_SUBTILE, PDL)


@triton.jit
def matmul_kernel_tma_persistent_colmajor(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr = 1, PDL: tl.constexpr = False,
):
    """``A_COL`` / ``B_COL``: that operand is column-major and its descriptor is over its transpose."""
    _tma_gemm(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES,
              NUM_SMS, A_COL, B_COL, EPILOGUE_SUBTILE, PDL)


@triton.jit
def alloc_a(dtype, ROWS: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, NUM_STAGES: tl.constexpr, A_COL: tl.constexpr):
    """``NUM_STAGES`` A tiles of ``ROWS`` rows. A column-major operand is loaded through a descriptor over its
    transpose (row-major, tiles ``[K, ROWS]``) and read by wgmma through a transposed view (no data movement)."""
    if A_COL:
        return tlx.local_alloc((BLOCK_SIZE_K, ROWS), dtype, NUM_STAGES)
    else:
        return tlx.local_alloc((ROWS, BLOCK_SIZE_K), dtype, NUM_STAGES)


@triton.jit
def alloc_b(dtype, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, NUM_STAGES: tl.constexpr,
            B_COL: tl.constexpr):
    """``NUM_STAGES`` B tiles (``[N, K]`` through a transposed descriptor when B is column-major)."""
    if B_COL:
        return tlx.local_alloc((BLOCK_SIZE_N, BLOCK_SIZE_K), dtype, NUM_STAGES)
    else:
        return tlx.local_alloc((BLOCK_SIZE_K, BLOCK_SIZE_N), dtype, NUM_STAGES)


@triton.jit
def alloc_c_staging(dtype, ROWS: tl.constexpr, COLS: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr):
    """C's staging for :func:`store_c`: one whole ``[ROWS, COLS]`` tile, or two column slices used in turn."""
    if EPILOGUE_SUBTILE == 1:
        return tlx.local_alloc((ROWS, COLS), dtype, 1)
    else:
        return tlx.local_alloc((ROWS, COLS // EPILOGUE_SUBTILE), dtype, 2)


@triton.jit
def alloc_ring(dtype, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
               NUM_STAGES: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr):
    """The shared memory of the TMA GEMMs (persistent, split-K, stream-K): ``NUM_STAGES`` A and B tiles, C's
    staging and one ready barrier per stage."""
    buffers_A = alloc_a(dtype, BLOCK_SIZE_M, BLOCK_SIZE_K, NUM_STAGES, A_COL)
    buffers_B = alloc_b(dtype, BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES, B_COL)
    buffers_C = alloc_c_staging(dtype, BLOCK_SIZE_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
    ready = tlx.alloc_barriers(NUM_STAGES)
    return buffers_A, buffers_B, buffers_C, ready


@triton.jit
def whole_tiles(a_desc, b_desc, c_desc, buffers_A, buffers_B, buffers_C, ready, first, stop, M, N, k_tiles,
                BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
                STAGE_BYTES: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr):
    """The persistent schedule over tiles ``first, first + NUM_SMS, ...`` below ``stop``, as this program's first
    use of the ring: each tile's whole K range, then its C stores (left in flight). Returns how many k-steps it
    issued (the stream-K kernel runs its whole rounds through this, then its pieces from there)."""
    it = 0  # k-steps issued so far by this program, over all its tiles
    for tile in tl.range(first, stop, NUM_SMS, num_stages=0):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        off_m = pid_m * BLOCK_SIZE_M
        off_n = pid_n * BLOCK_SIZE_N

        acc = mainloop(a_desc, b_desc, buffers_A, buffers_B, ready, it, off_m, off_n, 0, k_tiles, BLOCK_SIZE_M,
                       BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES, STAGE_BYTES, A_COL, B_COL)
        it += k_tiles

        store_c(c_desc, buffers_C, acc, off_m, off_n, BLOCK_SIZE_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
    return it


@triton.jit
def _tma_gemm(
    a_desc, b_desc, c_desc, M, N, K,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, PDL: tl.constexpr,
):
    grid_dependency.begin(PDL)
    dtype = tlx.dtype_of(a_desc)
    buffers_A, buffers_B, buffers_C, ready = alloc_ring(dtype, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES,
                                                        A_COL, B_COL, EPILOGUE_SUBTILE)
    STAGE_BYTES: tl.constexpr = (BLOCK_SIZE_M * BLOCK_SIZE_K + BLOCK_SIZE_K * BLOCK_SIZE_N) * tlx.size_of(dtype)

    num_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    whole_tiles(a_desc, b_desc, c_desc, buffers_A, buffers_B, buffers_C, ready, tl.program_id(0), num_tiles, M, N,
                k_tiles, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, STAGE_BYTES,
                A_COL, B_COL, EPILOGUE_SUBTILE)
    tlx.async_descriptor_store_wait(0)


def kernel_for(a_col: bool = False, b_col: bool = False) -> tuple[object, dict[str, bool]]:
    """The JIT kernel for an operand layout and the layout constexprs it takes (none for row-major A and B)."""
    return layout_kernel(matmul_kernel_tma_persistent, matmul_kernel_tma_persistent_colmajor, a_col, b_col)


def check_epilogue_subtile(bn: int, epilogue_subtile: int) -> None:
    """Raise a clear error for an ``EPILOGUE_SUBTILE`` the kernels do not take."""
    if epilogue_subtile not in EPILOGUE_SUBTILES or bn % epilogue_subtile:
        raise ValueError(f"utlx.kernels: EPILOGUE_SUBTILE must be one of {EPILOGUE_SUBTILES} and divide "
                         f"BLOCK_SIZE_N={bn}, got {epilogue_subtile}")


def descriptor_blocks(bm: int, bn: int, bk: int, a_col: bool = False, b_col: bool = False,
                      epilogue_subtile: int = 1) -> tuple[list, list, list]:
    """TMA box of the A, B and C descriptors; a column-major operand's descriptor is over its transpose,
    and C's box is one epilogue slice (``bn / epilogue_subtile`` columns)."""
    check_epilogue_subtile(bn, epilogue_subtile)
    return ([bk, bm] if a_col else [bm, bk]), ([bn, bk] if b_col else [bk, bn]), [bm, bn // epilogue_subtile]


def signature(bm: int, bn: int, bk: int, dtype: str = "fp16", a_col: bool = False,
              b_col: bool = False, epilogue_subtile: int = 1) -> dict[str, str]:
    """Signature for compiling without a GPU (host-side descriptors)."""
    blk_a, blk_b, blk_c = descriptor_blocks(bm, bn, bk, a_col, b_col, epilogue_subtile)
    return {"a_desc": f"tensordesc<{dtype}{blk_a}>", "b_desc": f"tensordesc<{dtype}{blk_b}>",
            "c_desc": f"tensordesc<{dtype}{blk_c}>", "M": "i32", "N": "i32", "K": "i32"}


def _cfg(bm: int, bn: int, bk: int, stages: int, group_m: int = 8, epilogue_subtile: int = 1) -> dict[str, int]:
    """Constexprs of one configuration (``EPILOGUE_SUBTILE`` only when it is not the default 1)."""
    cfg = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group_m, "NUM_STAGES": stages}
    return cfg if epilogue_subtile == 1 else dict(cfg, EPILOGUE_SUBTILE=epilogue_subtile)


def epilogue_subtile(const: dict[str, int]) -> int:
    """A configuration's ``EPILOGUE_SUBTILE`` (1 when absent: the kernels' default)."""
    return const.get("EPILOGUE_SUBTILE", 1)


#: (constexprs without NUM_SMS, num_warps) for H100/H200, launched persistently (one program per SM).
#: The first two are the original pair (tests index them). 128x256x64 takes 4 stages only with a subtiled
#: epilogue: with the 64 KB C staging tile that is 256 KB of shared memory, over the 227 KB a block may
#: have (see ``fits``); with four 128x64 slices in two 16 KB buffers it is 224 KB.
CONFIGS = [
    (_cfg(128, 256, 64, 3), 8),
    (_cfg(128, 128, 64, 4), 4),
    (_cfg(128, 128, 64, 4), 8),   # two consumer warpgroups of 64x128
    (_cfg(128, 256, 64, 3, group_m=4), 8),
    (_cfg(128, 256, 64, 3, group_m=16), 8),
    (_cfg(256, 128, 64, 3), 8),   # 208 KB
    (_cfg(64, 256, 64, 4), 4),    # short M: one warpgroup of 64x256
    (_cfg(128, 128, 64, 5), 8),   # deeper ring, 192 KB
    (_cfg(128, 256, 64, 4, epilogue_subtile=4), 8),  # 224 KB: 4 stages, C in 128x64 slices
]

#: Configurations for the *split* grid: one program per output tile (``grid_mode="tiles"``), so the
#: hardware scheduler places tiles and, where shared memory allows two blocks per SM (<= ~113 KB each),
#: one block's epilogue overlaps the other's main loop: what short-K shapes need.
TILE_CONFIGS = [
    (_cfg(128, 256, 64, 3), 8),
    (_cfg(128, 128, 64, 2), 4),   # 96 KB: two blocks per SM
    (_cfg(128, 128, 64, 2), 8),
    (_cfg(64, 256, 64, 2), 4),    # 112 KB: two blocks per SM
    (_cfg(128, 128, 64, 4, group_m=16), 8),
]

#: Largest dynamic shared memory one block may use on sm_90 (H100/H200): 227 KB (228 KB per SM, 1 KB
#: of which is reserved per block).
SMEM_LIMIT = 227 * 1024

#: ``NUM_SMS`` passed when every program owns at most one tile: the tile loop runs once, and all such
#: launches share one compiled kernel whatever the tile count (instead of one compile per count).
ONE_TILE_STRIDE = 1 << 24

GRID_MODES = ("persistent", "tiles")


def c_staging_bytes(rows: int, cols: int, subtile: int, elem_bytes: int = 2) -> int:
    """Shared memory of the C staging: the whole tile, or two slices of ``cols / subtile`` columns."""
    return rows * cols * elem_bytes if subtile == 1 else 2 * rows * (cols // subtile) * elem_bytes


def smem_bytes(const: dict[str, int], elem_bytes: int = 2) -> int:
    """Shared memory of one block: the A/B ring, the C staging buffer(s) and one 8-byte mbarrier per stage.

    Matches ``compiled.metadata.shared`` (a compile test checks that), so configurations can be
    filtered before anything is compiled.
    """
    bm, bn, bk, st = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"], const["NUM_STAGES"]
    return (st * (bm * bk + bk * bn) * elem_bytes + c_staging_bytes(bm, bn, epilogue_subtile(const), elem_bytes)
            + st * 8)


def fits(const: dict[str, int], elem_bytes: int = 2, limit: int = SMEM_LIMIT) -> bool:
    """True when the configuration's shared memory fits one sm_90 block."""
    return smem_bytes(const, elem_bytes) <= limit


def grid_for(M: int, N: int, const: dict[str, int], num_sms: int, grid_mode: str = "persistent") -> tuple[int, int]:
    """``(programs, NUM_SMS constexpr)`` for a launch.

    ``persistent``: ``min(num_sms, tiles)`` programs striding by the program count; ``tiles``: one
    program per tile. When programs >= tiles the stride is :data:`ONE_TILE_STRIDE` (see there).
    """
    if grid_mode not in GRID_MODES:
        raise ValueError(f"hopper_tma_persistent: unknown grid_mode {grid_mode!r} (expected one of {GRID_MODES})")
    tiles = triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"])
    programs = tiles if grid_mode == "tiles" else max(1, min(num_sms, tiles))
    return programs, (programs if programs < tiles else ONE_TILE_STRIDE)


def column_major(t) -> bool:
    """``t`` is a column-major view (unit row stride, e.g. ``x.T``): its descriptor is built over ``t.T``."""
    return t.stride(1) != 1 and t.stride(0) == 1


def make_launcher(M: int, N: int, config, num_sms: int, grid_mode: str = "persistent", a_col: bool = False,
                  b_col: bool = False):
    """A ``run(a, b, c)`` for one problem size and operand layout, shape-dependent work done once.

    ``a_col``/``b_col``: the operand is column-major (see :func:`column_major`). Descriptors are made per
    call; ``utlx.matmul`` uses ``utlx.gemm_launch`` instead, which also caches them.
    """
    from triton.tools.tensor_descriptor import TensorDescriptor

    const, nw = config
    bm, bn, bk = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"]
    programs, stride = grid_for(M, N, const, num_sms, grid_mode)
    fn, layout = kernel_for(a_col, b_col)
    kernel = FastLaunch(fn, (programs,), dict(const, NUM_SMS=stride, **layout), nw)
    blk_a, blk_b, blk_c = descriptor_blocks(bm, bn, bk, a_col, b_col, epilogue_subtile(const))
    from_tensor = TensorDescriptor.from_tensor

    def run(a, b, c):
        kernel(from_tensor(a.T if a_col else a, blk_a), from_tensor(b.T if b_col else b, blk_b),
               from_tensor(c, blk_c), a.shape[0], b.shape[1], a.shape[1])

    return run


def launch(a, b, c, config=0, num_sms=None, grid_mode="persistent"):
    """Run the kernel on torch tensors ``c = a @ b`` (host-side TMA descriptors; A and B row- or column-major).

    ``config``: an index into :data:`CONFIGS` or a ``(constexprs, num_warps)`` pair.
    """
    const_nw = CONFIGS[config] if isinstance(config, int) else config
    if num_sms is None:
        import torch

        num_sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    make_launcher(a.shape[0], b.shape[1], const_nw, num_sms, grid_mode, column_major(a), column_major(b))(a, b, c)
