"""Split-K GEMM for Hopper: the TMA + mbarrier + async wgmma ring over a slice of K, reduced in fp32.

Why: skinny LLM shapes (``M`` = 16..512, ``N = K = 8192``) have too few output tiles to fill an H200
(``N / BLOCK_N = 64`` tiles for 132 SMs), and at ``M = 16`` the GEMM only streams B from HBM, so half
the machine's bandwidth is left idle. Splitting K over ``SPLIT_K`` programs per output tile multiplies
the programs (and the bytes in flight) by ``SPLIT_K``.

One program per (tile, K slice). Program ``pid`` owns tile ``pid % tiles`` and slice ``pid // tiles``:
``cdiv(cdiv(K, BLOCK_K), SPLIT_K)`` k-steps through the same ring as :mod:`hopper_tma_persistent`
(TMA zero-fills past K, so ragged K is exact). Then, in one launch:

1. each program adds its fp32 partial tile into a zeroed fp32 workspace ``ws[M, N]`` (``red.global.add``);
2. it bumps the tile's arrival counter (int32, stored right after ``ws``) once, with release/acquire
   semantics at GPU scope, after a CTA barrier (so every thread's adds are released by the one thread that
   bumps: the pattern CUTLASS's split-K semaphores use);
3. the program that arrives last reads the finished fp32 tile (L2, ``.cg``), casts it to the output
   dtype and TMA-stores it to C;
4. that same program then writes zeros over the tile's region of ``ws`` and resets the tile's counter
   to 0: the workspace is **self-cleaning**, all-zero again when the launch ends.

Why self-cleaning: zeroing the workspace on the host per call (``torch.zeros``: an allocation plus a
memset launch) cost ~3.5 us of host time per call on the H200 (21.4 vs cuBLAS's 18.0 us/call at
16x8192x8192 bf16). A workspace that every launch leaves zeroed can be allocated and zeroed once and
reused by every later launch on the same stream (:mod:`utlx.splitk_workspace` keeps one per device and
stream).

Memory order of the clean-up: the zero stores and the counter reset come after the last program's reads
of the tile in program order, and a CTA barrier between them orders every thread's reads before any
thread's zero stores (the load and the store may be distributed over the threads differently). No other
program touches the tile's region or counter after the last arrival (every slice has arrived, and its
adds were released before its arrival). The end of the kernel orders the zeros before the next launch on
the same stream, which is all a reuse relies on; two streams must never share a workspace (their
launches could overlap). Summation order between the slices follows arrival (fp32 adds; the result
rounds once to fp16/bf16).
"""

from __future__ import annotations

import triton
import triton.language as tl

import utlx.language as tlx
from utlx.kernels import grid_dependency
from utlx.kernels.accumulator_io import add_pairs, load_pairs_cg
from utlx.kernels.nvidia import hopper_tma_persistent as tma
from utlx.kernels.tiles import grouped_tile, layout_kernel
from utlx.splitk_workspace import given_or_fresh


@triton.jit
def matmul_kernel_tma_splitk(
    a_desc, b_desc, c_desc, M, N, K, ws_ptr,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, SPLIT_K: tl.constexpr, PDL: tl.constexpr = False,
):
    """Row-major A and B. ``PDL``: launched with programmatic dependent launch (``grid_dependency``)."""
    _splitk_gemm(a_desc, b_desc, c_desc, M, N, K, ws_ptr, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M,
                 NUM_STAGES, SPLIT_K, False, False, PDL)


@triton.jit
def matmul_kernel_tma_splitk_colmajor(
    a_desc, b_desc, c_desc, M, N, K, ws_ptr,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, SPLIT_K: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, PDL: tl.constexpr = False,
):
    """``A_COL`` / ``B_COL``: that operand is column-major and its descriptor is over its transpose."""
    _splitk_gemm(a_desc, b_desc, c_desc, M, N, K, ws_ptr, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M,
                 NUM_STAGES, SPLIT_K, A_COL, B_COL, PDL)


@triton.jit
def _splitk_gemm(
    a_desc, b_desc, c_desc, M, N, K, ws_ptr,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, SPLIT_K: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, PDL: tl.constexpr,
):
    grid_dependency.begin(PDL)
    dtype = tlx.dtype_of(a_desc)
    buffers_A, buffers_B, buffer_C, ready = tma.alloc_ring(dtype, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES,
                                                           A_COL, B_COL, 1)
    STAGE_BYTES: tl.constexpr = (BLOCK_SIZE_M * BLOCK_SIZE_K + BLOCK_SIZE_K * BLOCK_SIZE_N) * tlx.size_of(dtype)

    num_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N, BLOCK_SIZE_N)
    pid = tl.program_id(0)
    tile = pid % num_tiles
    split = pid // num_tiles
    pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
    off_m = pid_m * BLOCK_SIZE_M
    off_n = pid_n * BLOCK_SIZE_N

    # This program's K slice: k-steps [k_first, k_first + k_tiles) of cdiv(K, BLOCK_SIZE_K).
    k_total = tl.cdiv(K, BLOCK_SIZE_K)
    per_split = tl.cdiv(k_total, SPLIT_K)
    k_first = split * per_split
    k_tiles = tl.maximum(tl.minimum(per_split, k_total - k_first), 0)

    acc = tma.mainloop(a_desc, b_desc, buffers_A, buffers_B, ready, 0, off_m, off_n, k_first, k_tiles, BLOCK_SIZE_M,
                       BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES, STAGE_BYTES, A_COL, B_COL)

    # Reduce: fp32 adds into the workspace, then one arrival per program on the tile's counter.
    offs_m = off_m + tl.arange(0, BLOCK_SIZE_M)
    offs_n = off_n + tl.arange(0, BLOCK_SIZE_N)
    in_c = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    ws_tile = ws_ptr + offs_m[:, None] * N + offs_n[None, :]
    counter = (ws_ptr + M * N).to(tl.pointer_type(tl.int32), bitcast=True) + tile
    if add_partial(ws_tile, in_c, counter, acc) == SPLIT_K - 1:  # the last slice: every other's adds are visible
        total = read_total(ws_tile, in_c)
        c_smem = tlx.local_view(buffer_C, 0)
        tlx.local_store(c_smem, total.to(dtype))
        tlx.fence_async_shared()
        tlx.async_descriptor_store(c_desc, c_smem, [off_m, off_n])
        clear_tile(ws_tile, in_c, counter, BLOCK_SIZE_M, BLOCK_SIZE_N)  # while the TMA store runs
        tlx.async_descriptor_store_wait(0)


@triton.jit
def add_partial(ws_tile, mask, counter, acc, REGS: tl.constexpr = False):
    """Add the fp32 partial tile ``acc`` into the workspace (``ws_tile``: its pointers, ``mask``: the words
    inside C, or None), then arrive once on the tile's int32 ``counter``; returns how many arrivals came
    before this one (so ``expected - 1`` means this program completes the tile).

    The adds are relaxed; a CTA barrier puts every thread's adds before the one acq_rel arrival, which
    releases them at GPU scope and, for the last arrival, acquires every earlier program's adds.

    ``REGS`` (``mask`` must be None): the adds leave straight from the accumulator's registers
    (:func:`utlx.kernels.accumulator_io.add_pairs`): ``tl.atomic_add`` would first convert a 128x256 fp32 tile
    through 128 KB of shared memory, which a kernel whose ring already takes ~208 KB does not have.
    """
    add_pairs(ws_tile, acc, mask, REGS)
    tl.debug_barrier()  # every thread's adds precede the one release below
    return tl.atomic_add(counter, 1, sem="acq_rel", scope="gpu")


@triton.jit
def read_total(ws_tile, mask, acc=None, REGS: tl.constexpr = False):
    """The finished fp32 tile (from L2: ``.cg``; the adds went there), read by the last arrival. Words
    outside ``mask`` are undefined: C's TMA store clips them.

    ``REGS`` (``mask`` None, ``acc`` this program's accumulator, no longer needed): inline PTX loads into
    ``acc``'s registers (tied operands), so the total has the accumulator's wgmma layout and C's epilogue
    is the persistent kernel's; a ``tl.load`` gives a coalesced layout that a subtiled epilogue would have
    to convert through shared memory scratch.
    """
    return load_pairs_cg(ws_tile, acc, mask, REGS)


@triton.jit
def clear_tile(ws_tile, mask, counter, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    """Leave the tile's workspace words and counter as the launch found them (zero), after
    :func:`read_total`: every thread's reads of the tile precede the barrier, every zero store follows it."""
    tl.debug_barrier()
    tl.store(ws_tile, tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32), mask=mask)
    tl.store(counter, 0)


def kernel_for(a_col: bool = False, b_col: bool = False) -> tuple[object, dict[str, bool]]:
    """The JIT kernel for an operand layout and the layout constexprs it takes (none for row-major A and B)."""
    return layout_kernel(matmul_kernel_tma_splitk, matmul_kernel_tma_splitk_colmajor, a_col, b_col)


#: TMA boxes: the same as the persistent kernel's (A, B, C tiles).
descriptor_blocks = tma.descriptor_blocks


def signature(bm: int, bn: int, bk: int, dtype: str = "fp16", a_col: bool = False,
              b_col: bool = False) -> dict[str, str]:
    """Signature for compiling without a GPU (host-side descriptors, an fp32 workspace pointer)."""
    return dict(tma.signature(bm, bn, bk, dtype, a_col, b_col), ws_ptr="*fp32")


def _cfg(bm: int, bn: int, bk: int, stages: int, split_k: int, group_m: int = 8) -> dict[str, int]:
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group_m,
            "NUM_STAGES": stages, "SPLIT_K": split_k}


#: (constexprs, num_warps) for H100/H200 skinny problems. At N = 8192 on 132 SMs: the 64-row tiles give
#: 64 (BN=128) or 32 (BN=256) tiles, split 2 or 4 ways into ~128 programs (M <= 64); the 128-row tiles
#: (two consumer warpgroups) split 2 ways at M = 128.
CONFIGS = [
    (_cfg(64, 128, 128, 4, 2), 4),     # 208 KB
    (_cfg(64, 256, 64, 4, 4), 4),      # 192 KB
    (_cfg(64, 128, 128, 4, 4), 4),
    (_cfg(128, 128, 64, 5, 2), 8),     # 192 KB
    (_cfg(128, 128, 128, 3, 2), 8),    # 224 KB
    (_cfg(64, 64, 128, 6, 2), 4),      # 200 KB: 128 tiles x 2 slices at N = 8192 (M <= 64)
    (_cfg(128, 64, 128, 4, 2), 4),     # 208 KB: 128 tiles x 2 slices at N = 8192 (M = 128)
    # 208 KB: 32 tiles x 4 slices at N = 8192 (M = 128): each program reads 1.5 MB of A and B from L2
    # (128x64 tiles whole: 3 MB; 128x128 x 2 slices: 2 MB), for 16 MB more fp32 partial-sum traffic. On the H200
    # (2026-12-01) it lost to the 128x64 whole-K tiles at M = 128, like every split-K tile there
    (_cfg(128, 256, 64, 3, 4), 8),
    # 112 KB: two programs per SM. At M = 16, N = K = 8192: 64 tiles x 4 slices = 256 programs, all resident at
    # once, so one program's reduction and prologue overlap the other's loads. On the H200 (2026-12-01, fifth
    # session) the fastest at M = 16: 47.0 bf16 / 46.6 fp16 TFLOPS against 45.9 / 46.2 for the best one-per-SM tile
    (_cfg(64, 128, 128, 2, 4), 4),
]

#: Shared memory of one SM on sm_90 (H100/H200), of which each resident block also takes 1 KB.
SM_SMEM = 228 * 1024
BLOCK_RESERVED_SMEM = 1024

smem_bytes = tma.smem_bytes  # same ring, C staging tile and barriers


def programs(M: int, N: int, const: dict[str, int]) -> int:
    """Grid size: one program per (output tile, K slice)."""
    return triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"]) * const["SPLIT_K"]


def workspace_numel(M: int, N: int, const: dict[str, int]) -> int:
    """fp32 words of the zeroed workspace: the ``M x N`` partial sums, then one int32 counter per tile
    (a larger all-zero workspace works too: the kernel only touches these words and leaves them zero)."""
    return M * N + triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"])


def blocks_per_sm(const: dict[str, int], elem_bytes: int = 2) -> int:
    """How many programs of this configuration one SM holds at once (shared memory is what limits them)."""
    return max(1, SM_SMEM // (smem_bytes(const, elem_bytes) + BLOCK_RESERVED_SMEM))


def useful(M: int, N: int, K: int, const: dict[str, int], num_sms: int) -> bool:
    """Whether splitting K can pay: the tiles alone leave SMs idle, the slices still fit one wave (every
    program resident at once, counting :func:`blocks_per_sm`; beyond it the machine is full anyway, and only
    the reduction traffic grows), and every slice still runs the ring at least ``NUM_STAGES`` k-steps
    (shorter slices are mostly prologue)."""
    tiles = triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"])
    per_split = triton.cdiv(triton.cdiv(K, const["BLOCK_SIZE_K"]), const["SPLIT_K"])
    wave = num_sms * blocks_per_sm(const)
    return tiles < num_sms and tiles * const["SPLIT_K"] <= wave and per_split >= const["NUM_STAGES"]


def launch(a, b, c, config=0, workspace=None):
    """Run ``c = a @ b`` once (A and B row- or column-major views; host descriptors).

    ``config``: an index into :data:`CONFIGS` or a ``(constexprs, num_warps)`` pair. ``workspace``: an
    all-zero fp32 tensor of at least :func:`workspace_numel` elements on ``a``'s device, reused across
    launches on one stream (the kernel leaves it zeroed); None: a fresh zeroed one.
    """
    from triton.tools.tensor_descriptor import TensorDescriptor

    const, nw = CONFIGS[config] if isinstance(config, int) else config
    a_col, b_col = tma.column_major(a), tma.column_major(b)
    M, K = a.shape
    N = b.shape[1]
    fn, cols = kernel_for(a_col, b_col)
    blk_a, blk_b, blk_c = descriptor_blocks(const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"],
                                            a_col, b_col)
    numel = workspace_numel(M, N, const)
    ws = given_or_fresh(workspace, numel, a.device, "hopper_tma_splitk.launch")
    a_desc = TensorDescriptor.from_tensor(a.T if a_col else a, blk_a)
    b_desc = TensorDescriptor.from_tensor(b.T if b_col else b, blk_b)
    fn[(programs(M, N, const),)](a_desc, b_desc, TensorDescriptor.from_tensor(c, blk_c), M, N, K, ws, **const, **cols,
                                 num_warps=nw)
