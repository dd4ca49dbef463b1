"""Stream-K hybrid GEMM for Hopper: whole tiles round robin, then the last partial round cut along K.

Why: ``utlx.matmul``'s big shapes all have a power-of-two tile count (128x256 tiles: 512 or 2048), and
the H200 has 132 SMs. The persistent kernel (:mod:`hopper_tma_persistent`) runs ``T`` tiles on ``P``
programs in ``ceil(T / P)`` rounds for ``T / P`` rounds of work: 2048 tiles take 16 rounds for 15.52 of
work, 512 take 4 for 3.88 (~3% of the machine idle in the last round). Here the ``full = T // P`` whole
rounds run exactly as in the persistent kernel (program ``p``: tiles ``p, p + P, ...``, whole K, C stored
directly), and the ``rem = T % P`` tiles of the last round are cut along K into equal shares for all
``P`` programs, so every program does ``full`` tiles plus ``~rem / P`` of one.

The stream-K part (:func:`schedule`, mirrored by the kernel): its ``units = rem * k_total`` k-steps
(``k_total = cdiv(K, BLOCK_K)``) in order, tile after tile; program ``p`` covers units ``[p * share,
min((p + 1) * share, units))`` with ``share = max(min(MIN_SHARE, k_total), cdiv(units, P))`` (at least
``MIN_SHARE`` k-steps: a shorter piece is mostly ring prologue and reduction traffic). The range is
walked as *segments*, one per tile it touches. A segment covering a whole tile stores C directly; a
*piece* reduces into an fp32 workspace the way the split-K kernel does (:mod:`hopper_tma_splitk`:
relaxed atomic adds, a CTA barrier, one acq_rel arrival on the tile's counter); the arrival that completes
the tile (the tile has ``(u_last // share) - (u_first // share) + 1`` pieces over its units ``u_first ..
u_last``) reads the finished tile, stores C, then zeroes its workspace region and counter: the workspace
is self-cleaning and can be kept per (device, stream) (:mod:`utlx.splitk_workspace`).

The workspace is compact: one ``BLOCK_M x BLOCK_N`` fp32 region per stream-K tile (``rem`` of them, tile
``full * P + j`` in region ``j``, unmasked: rows and columns past C only ever receive zeros, TMA zero-fills
the operands), then ``rem`` int32 counters. One global k-step counter (``it``) runs over every tile and
segment of a program, so the ring's slots and barrier phases stay continuous (as in the persistent kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

import triton
import triton.language as tl

import utlx.language as tlx
from utlx import compat
from utlx.kernels import grid_dependency
from utlx.kernels.nvidia import hopper_tma_persistent as tma
from utlx.kernels.nvidia.hopper_tma_persistent import mainloop, store_c
from utlx.kernels.nvidia.hopper_tma_splitk import add_partial, clear_tile, read_total
from utlx.kernels.tiles import grouped_tile, layout_kernel
from utlx.splitk_workspace import given_or_fresh


@triton.jit
def matmul_kernel_tma_streamk(
    a_desc, b_desc, c_desc, M, N, K, ws_ptr,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr, MIN_SHARE: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr = 1, REG_REDUCE: tl.constexpr = True, PDL: tl.constexpr = False,
):
    """Row-major A and B; launched on exactly ``NUM_SMS`` programs. ``REG_REDUCE``: the partial tiles leave
    straight from the accumulator registers (inline PTX; False for the interpreter), see ``add_partial``."""
    _streamk_gemm(a_desc, b_desc, c_desc, M, N, K, ws_ptr, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M,
                  NUM_STAGES, NUM_SMS, MIN_SHARE, False, False, EPILOGUE_SUBTILE, REG_REDUCE, PDL)


@triton.jit
def matmul_kernel_tma_streamk_colmajor(
    a_desc, b_desc, c_desc, M, N, K, ws_ptr,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr, MIN_SHARE: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr = 1, REG_REDUCE: tl.constexpr = True,
    PDL: tl.constexpr = False,
):
    """``A_COL`` / ``B_COL``: that operand is column-major and its descriptor is over its transpose."""
    _streamk_gemm(a_desc, b_desc, c_desc, M, N, K, ws_ptr, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M,
                  NUM_STAGES, NUM_SMS, MIN_SHARE, A_COL, B_COL, EPILOGUE_SUBTILE, REG_REDUCE, PDL)


@triton.jit
def _streamk_gemm(
    a_desc, b_desc, c_desc, M, N, K, ws_ptr,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr, MIN_SHARE: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, REG_REDUCE: tl.constexpr,
    PDL: tl.constexpr,
):
    grid_dependency.begin(PDL)
    dtype = tlx.dtype_of(a_desc)
    buffers_A, buffers_B, buffers_C, ready = tma.alloc_ring(dtype, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K,
                                                            NUM_STAGES, A_COL, B_COL, EPILOGUE_SUBTILE)
    STAGE_BYTES: tl.constexpr = (BLOCK_SIZE_M * BLOCK_SIZE_K + BLOCK_SIZE_K * BLOCK_SIZE_N) * tlx.size_of(dtype)
    TILE_WORDS: tl.constexpr = BLOCK_SIZE_M * BLOCK_SIZE_N

    num_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N, BLOCK_SIZE_N)
    k_total = tl.cdiv(K, BLOCK_SIZE_K)
    full = num_tiles // NUM_SMS
    rem = num_tiles - full * NUM_SMS
    pid = tl.program_id(0)

    # Whole rounds: exactly the persistent kernel. it: k-steps issued so far by this program, over all its tiles
    # and segments.
    it = tma.whole_tiles(a_desc, b_desc, c_desc, buffers_A, buffers_B, buffers_C, ready, pid, full * NUM_SMS, M, N,
                         k_total, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS,
                         STAGE_BYTES, A_COL, B_COL, EPILOGUE_SUBTILE)

    # The last, partial round: rem tiles' k-steps shared out evenly (see schedule()).
    units = rem * k_total
    share = tl.maximum(tl.minimum(k_total, MIN_SHARE), tl.cdiv(units, NUM_SMS))
    u = pid * share
    end = tl.minimum(u + share, units)
    counters = (ws_ptr + rem * TILE_WORDS).to(tl.pointer_type(tl.int32), bitcast=True)
    rows = tl.arange(0, BLOCK_SIZE_M)
    cols = tl.arange(0, BLOCK_SIZE_N)
    while u < end:
        slot = u // k_total  # the tile's index among the rem stream-K tiles (and its workspace region)
        first = slot * k_total  # the tile's first unit
        k_lo = u - first
        k_hi = tl.minimum(k_total, end - first)
        pieces = (first + k_total - 1) // share - first // share + 1
        pid_m, pid_n = grouped_tile(full * NUM_SMS + slot, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        off_m = pid_m * BLOCK_SIZE_M
        off_n = pid_n * BLOCK_SIZE_N
        acc = mainloop(a_desc, b_desc, buffers_A, buffers_B, ready, it, off_m, off_n, k_lo, k_hi - k_lo,
                       BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES, STAGE_BYTES, A_COL, B_COL)
        it += k_hi - k_lo
        if pieces == 1:  # this program covers the whole tile
            store_c(c_desc, buffers_C, acc, off_m, off_n, BLOCK_SIZE_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
        else:
            ws_tile = ws_ptr + slot * TILE_WORDS + rows[:, None] * BLOCK_SIZE_N + cols[None, :]
            if add_partial(ws_tile, None, counters + slot, acc, REG_REDUCE) == pieces - 1:  # the tile's last piece
                total = read_total(ws_tile, None, acc, REG_REDUCE)
                store_c(c_desc, buffers_C, total, off_m, off_n, BLOCK_SIZE_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
                clear_tile(ws_tile, None, counters + slot, BLOCK_SIZE_M, BLOCK_SIZE_N)  # while the TMA store runs
        u += k_hi - k_lo
    tlx.async_descriptor_store_wait(0)


def kernel_for(a_col: bool = False, b_col: bool = False) -> tuple[object, dict[str, bool]]:
    """The JIT kernel for an operand layout and the layout constexprs it takes (none for row-major A and B)."""
    return layout_kernel(matmul_kernel_tma_streamk, matmul_kernel_tma_streamk_colmajor, a_col, b_col)


#: TMA boxes: the persistent kernel's (C's box is one epilogue slice).
descriptor_blocks = tma.descriptor_blocks
#: Shared memory beyond the persistent kernel's: the scratch that hands the arrival counter's old value
#: from the thread that bumps it to the whole CTA (~100 bytes measured on sm_90; a compile test checks it).
ARRIVAL_SCRATCH = 128


def smem_bytes(const: dict[str, int], elem_bytes: int = 2) -> int:
    """Upper bound of one block's shared memory: the persistent kernel's ring, C staging and barriers, plus
    :data:`ARRIVAL_SCRATCH` (the fp32 partial tiles leave from registers, with no layout conversion)."""
    return tma.smem_bytes(const, elem_bytes) + ARRIVAL_SCRATCH


def fits(const: dict[str, int], elem_bytes: int = 2, limit: int = tma.SMEM_LIMIT) -> bool:
    """True when the configuration's shared memory fits one sm_90 block."""
    return smem_bytes(const, elem_bytes) <= limit
epilogue_subtile = tma.epilogue_subtile


def signature(bm: int, bn: int, bk: int, dtype: str = "fp16", a_col: bool = False, b_col: bool = False,
              epilogue_subtile: int = 1) -> dict[str, str]:
    """Signature for compiling without a GPU (host-side descriptors, an fp32 workspace pointer)."""
    return dict(tma.signature(bm, bn, bk, dtype, a_col, b_col, epilogue_subtile), ws_ptr="*fp32")


def _cfg(bm: int, bn: int, bk: int, stages: int, group_m: int = 8, epilogue_subtile: int = 1,
         min_share: int = 4) -> dict[str, int]:
    cfg = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group_m,
           "NUM_STAGES": stages, "MIN_SHARE": min_share}
    return cfg if epilogue_subtile == 1 else dict(cfg, EPILOGUE_SUBTILE=epilogue_subtile)


#: (constexprs without NUM_SMS, num_warps) for H100/H200: the persistent kernel's best big-shape
#: configurations (128x256x64: 3 stages with a whole-tile C staging buffer, or 4 with C in 128x64 slices).
CONFIGS = [
    (_cfg(128, 256, 64, 3), 8),
    (_cfg(128, 256, 64, 4, epilogue_subtile=4), 8),
    (_cfg(128, 128, 64, 4), 8),
]

#: What ``utlx.matmul`` tunes over (every entry of :data:`CONFIGS` is compiled and tested). Measured on the H200
#: (2026-12-01, docs/benchmarks.md) the tuner took stream-K for one of 14 eligible (shape, dtype) pairs, with this
#: tile; the other two only lengthened every first call's tuning.
TUNED = [CONFIGS[1]]


@dataclass(frozen=True)
class Schedule:
    """The split of ``tiles`` tiles of ``k_total`` k-steps over ``programs`` programs (see the module doc)."""

    tiles: int
    programs: int
    k_total: int
    min_share: int

    @property
    def full(self) -> int:
        """Whole rounds: every program runs this many whole tiles first."""
        return self.tiles // self.programs

    @property
    def rem(self) -> int:
        """Tiles of the last, partial round (shared out along K)."""
        return self.tiles % self.programs

    @property
    def units(self) -> int:
        return self.rem * self.k_total

    @property
    def share(self) -> int:
        """k-steps of the stream-K part per program (the last busy program may get fewer)."""
        return max(min(self.min_share, self.k_total), -(-self.units // self.programs))

    def segments(self, program: int) -> list[tuple[int, int, int]]:
        """``(tile, k_lo, k_hi)`` of program ``program``'s stream-K part, in order (as the kernel walks it)."""
        out = []
        u, end = program * self.share, min((program + 1) * self.share, self.units)
        while u < end:
            slot = u // self.k_total
            k_lo = u - slot * self.k_total
            k_hi = min(self.k_total, end - slot * self.k_total)
            out.append((self.full * self.programs + slot, k_lo, k_hi))
            u += k_hi - k_lo
        return out

    def pieces(self, slot: int) -> int:
        """Programs that cover stream-K tile ``slot`` (0 .. rem-1): the arrivals its counter waits for."""
        first = slot * self.k_total
        return (first + self.k_total - 1) // self.share - first // self.share + 1


def _tiles(M: int, N: int, const: dict[str, int]) -> int:
    return triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"])


def schedule(M: int, N: int, K: int, const: dict[str, int], num_sms: int) -> Schedule:
    """The :class:`Schedule` of one launch."""
    return Schedule(_tiles(M, N, const), num_sms, triton.cdiv(K, const["BLOCK_SIZE_K"]), const["MIN_SHARE"])


def workspace_numel(M: int, N: int, const: dict[str, int], num_sms: int) -> int:
    """fp32 words of the zeroed workspace: one tile region per stream-K tile, then one int32 counter each
    (a larger all-zero workspace works too: the kernel only touches these words and leaves them zero)."""
    rem = _tiles(M, N, const) % num_sms
    return max(1, rem * (const["BLOCK_SIZE_M"] * const["BLOCK_SIZE_N"] + 1))


def useful(M: int, N: int, const: dict[str, int], num_sms: int) -> bool:
    """Whether stream-K differs from the persistent kernel: at least one whole round and a partial one."""
    tiles = _tiles(M, N, const)
    return tiles >= num_sms and tiles % num_sms != 0


def launch(a, b, c, config=0, num_sms=None, workspace=None):
    """Run ``c = a @ b`` once on ``num_sms`` programs (A and B row- or column-major views; host descriptors).

    ``config``: an index into :data:`CONFIGS` or a ``(constexprs, num_warps)`` pair. ``workspace``: an
    all-zero fp32 tensor of at least :func:`workspace_numel` elements on ``a``'s device, reused across
    launches on one stream (the kernel leaves it zeroed); None: a fresh zeroed one.
    """
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    const, nw = CONFIGS[config] if isinstance(config, int) else config
    if num_sms is None:
        num_sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    a_col, b_col = tma.column_major(a), tma.column_major(b)
    M, K = a.shape
    N = b.shape[1]
    fn, cols = kernel_for(a_col, b_col)
    blk_a, blk_b, blk_c = descriptor_blocks(const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"],
                                            a_col, b_col, epilogue_subtile(const))
    numel = workspace_numel(M, N, const, num_sms)
    ws = given_or_fresh(workspace, numel, a.device, "hopper_tma_streamk.launch")
    a_desc = TensorDescriptor.from_tensor(a.T if a_col else a, blk_a)
    b_desc = TensorDescriptor.from_tensor(b.T if b_col else b, blk_b)
    fn[(num_sms,)](a_desc, b_desc, TensorDescriptor.from_tensor(c, blk_c), M, N, K, ws, **const, **cols,
                   NUM_SMS=num_sms, REG_REDUCE=not compat.interpreting(), num_warps=nw)
