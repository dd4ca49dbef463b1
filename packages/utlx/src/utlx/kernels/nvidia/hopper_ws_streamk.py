"""Stream-K hybrid of the cooperative warp-specialized GEMM: whole rounds as in :mod:`hopper_ws_persistent`, then
the last, partial round cut along K.

Why: the cooperative kernel is ``utlx.matmul``'s fastest family on the big shapes, and every one of them has
128, 512 or 2048 tiles of 128x256 on the H200's 132 SMs, so its last round is partial: about 3% of the
machine idles on every shape. :mod:`hopper_tma_streamk` closes that gap for the single-task persistent kernel,
which is slower to begin with. Here the same schedule (:func:`hopper_tma_streamk.schedule`: ``full`` whole
rounds, then ``rem * k_total`` k-steps in equal shares of at least ``MIN_SHARE``) drives the producer and both
consumer warpgroups:

* the producer walks the same segments and loads each segment's k-steps (:func:`ws_ring.produce_range`);
* each consumer accumulates its half (``BLOCK_SIZE_M / 2`` rows) of a segment. A segment that covers its whole
  tile stores C. A *piece* adds its fp32 half into the workspace region of its stream-K tile and arrives on the
  counter of that (tile, half) (:func:`hopper_tma_splitk.add_partial`). The barrier inside it is the
  partition's own (``bar.sync id, 128`` on Triton 3.6-3.9, checked by a compile test), never a CTA-wide one,
  so each half is reduced on its own, with a counter of its own. The arrival that completes a half reads the
  total, stores that half of C and zeroes its words and counter (self-cleaning workspace, as split-K).

Workspace: ``rem`` regions of ``BLOCK_SIZE_M x BLOCK_SIZE_N`` fp32, then ``2 * rem`` int32 counters (tile
``j``'s half ``h`` at ``2 j + h``), all zero before a launch and after it.

Status: correct on the H200 (``tools/device/ws_streamk_ab.py``) and in the interpreter, and **not** one of
``utlx.matmul``'s candidates: measured against the cooperative kernel it loses 15% at 4096^3 and is within
+-1.5% at 8192^3 (the atomic reduction of ~2 pieces per tail tile costs more than the idle SMs it saves;
``docs/utlx.md``). It is the base for a fixup without atomics.
"""

from __future__ import annotations

import triton
import triton.language as tl

import utlx.language as tlx
from utlx import compat
from utlx.kernels import grid_dependency
from utlx.kernels import ws_ring as ring
from utlx.kernels.nvidia import hopper_tma_streamk as sk
from utlx.kernels.nvidia import hopper_ws_persistent as ws
from utlx.kernels.nvidia.hopper_tma_persistent import alloc_a, alloc_b, alloc_c_staging, column_major
from utlx.kernels.nvidia.hopper_tma_persistent import store_c as _store_c
from utlx.kernels.nvidia.hopper_tma_splitk import add_partial, clear_tile, read_total
from utlx.kernels.tiles import grouped_tile
from utlx.launch import FastLaunch
from utlx.splitk_workspace import given_or_fresh


@triton.jit
def _stream_k_part(K, num_tiles, BLOCK_SIZE_K: tl.constexpr, NUM_SMS: tl.constexpr, MIN_SHARE: tl.constexpr):
    """This program's stream-K range: (whole rounds, k-steps per tile, first unit, end unit, share)."""
    k_total = tl.cdiv(K, BLOCK_SIZE_K)
    full = num_tiles // NUM_SMS
    units = (num_tiles - full * NUM_SMS) * k_total
    share = tl.maximum(tl.minimum(k_total, MIN_SHARE), tl.cdiv(units, NUM_SMS))
    u = tl.program_id(0) * share
    return full, k_total, u, tl.minimum(u + share, units), share


@triton.jit
def _producer(a_desc, b_desc, bufs_A0, bufs_A1, bufs_B, full_bars, empty, M, N, K,
              BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
              GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr, MIN_SHARE: tl.constexpr,
              A_COL: tl.constexpr, B_COL: tl.constexpr):
    num_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N, BLOCK_SIZE_N)
    full, k_total, u, end, _share = _stream_k_part(K, num_tiles, BLOCK_SIZE_K, NUM_SMS, MIN_SHARE)
    it = ring.produce_tiles(a_desc, b_desc, bufs_A0, bufs_A1, bufs_B, full_bars, empty, M, N, K, full * NUM_SMS,
                            BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL,
                            True)
    while u < end:
        slot = u // k_total
        k_lo = u - slot * k_total
        k_hi = tl.minimum(k_total, end - slot * k_total)
        pid_m, pid_n = grouped_tile(full * NUM_SMS + slot, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        it = ring.produce_range(a_desc, b_desc, bufs_A0, bufs_A1, bufs_B, full_bars, empty, it, pid_m * BLOCK_SIZE_M,
                                pid_n * BLOCK_SIZE_N, k_lo, k_hi, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES,
                                A_COL, B_COL, True)
        u += k_hi - k_lo


@triton.jit
def _consumer(c_desc, bufs_A, bufs_B, buf_C, full_bars, empty, ws_ptr, M, N, K, ROW: tl.constexpr,
              BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
              GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr, MIN_SHARE: tl.constexpr,
              A_COL: tl.constexpr, B_COL: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, REG_REDUCE: tl.constexpr):
    """Rows ``ROW * BLOCK_SIZE_M / 2 ...`` of every segment of this program."""
    HALF_M: tl.constexpr = BLOCK_SIZE_M // 2
    TILE_WORDS: tl.constexpr = BLOCK_SIZE_M * BLOCK_SIZE_N
    num_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N, BLOCK_SIZE_N)
    full, k_total, u, end, share = _stream_k_part(K, num_tiles, BLOCK_SIZE_K, NUM_SMS, MIN_SHARE)
    it = ws.consume_tiles(c_desc, bufs_A, bufs_B, buf_C, full_bars, empty, M, N, K, full * NUM_SMS, ROW,
                          BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL,
                          EPILOGUE_SUBTILE)
    rem = num_tiles - full * NUM_SMS
    counters = (ws_ptr + rem * TILE_WORDS).to(tl.pointer_type(tl.int32), bitcast=True)
    rows = ROW * HALF_M + tl.arange(0, HALF_M)
    cols = tl.arange(0, BLOCK_SIZE_N)
    while u < end:
        slot = u // k_total  # the tile's index among the rem stream-K tiles (its workspace region)
        first = slot * k_total
        k_lo = u - first
        k_hi = tl.minimum(k_total, end - first)
        pieces = (first + k_total - 1) // share - first // share + 1
        pid_m, pid_n = grouped_tile(full * NUM_SMS + slot, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        off_m = pid_m * BLOCK_SIZE_M + ROW * HALF_M
        off_n = pid_n * BLOCK_SIZE_N
        acc = tl.zeros((HALF_M, BLOCK_SIZE_N), dtype=tl.float32)
        acc, it = ring.mainloop(bufs_A, bufs_B, full_bars, empty, acc, it, k_hi - k_lo, NUM_STAGES, A_COL, B_COL)
        acc = ring.retire(acc, empty, it, NUM_STAGES)
        if pieces == 1:  # this program covers the whole tile
            _store_c(c_desc, buf_C, acc, off_m, off_n, HALF_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
        else:
            ws_half = ws_ptr + slot * TILE_WORDS + rows[:, None] * BLOCK_SIZE_N + cols[None, :]
            counter = counters + 2 * slot + ROW
            if add_partial(ws_half, None, counter, acc, REG_REDUCE) == pieces - 1:  # the half's last piece
                total = read_total(ws_half, None, acc, REG_REDUCE)
                _store_c(c_desc, buf_C, total, off_m, off_n, HALF_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
                clear_tile(ws_half, None, counter, HALF_M, BLOCK_SIZE_N)  # while the TMA store runs
        u += k_hi - k_lo
    tlx.async_descriptor_store_wait(0)


@triton.jit
def matmul_kernel_ws_streamk(
    a_desc, b_desc, c_desc, M, N, K, ws_ptr,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr, MIN_SHARE: tl.constexpr,
    A_COL: tl.constexpr = False, B_COL: tl.constexpr = False, EPILOGUE_SUBTILE: tl.constexpr = 1,
    REG_REDUCE: tl.constexpr = True, PDL: tl.constexpr = False,
):
    """Launched on exactly ``NUM_SMS`` programs. ``A_COL`` / ``B_COL``: that operand is column-major and its
    descriptor is over its transpose. ``REG_REDUCE``: partial halves leave straight from the accumulator's
    registers (inline PTX; False for the interpreter). ``PDL``: :mod:`utlx.kernels.grid_dependency`."""
    grid_dependency.begin(PDL)
    HALF_M: tl.constexpr = BLOCK_SIZE_M // 2
    dtype = tlx.dtype_of(a_desc)
    bufs_A0 = alloc_a(dtype, HALF_M, BLOCK_SIZE_K, NUM_STAGES, A_COL)
    bufs_A1 = alloc_a(dtype, HALF_M, BLOCK_SIZE_K, NUM_STAGES, A_COL)
    bufs_B = alloc_b(dtype, BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES, B_COL)
    buf_C0 = alloc_c_staging(dtype, HALF_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
    buf_C1 = alloc_c_staging(dtype, HALF_M, BLOCK_SIZE_N, EPILOGUE_SUBTILE)
    full_bars = tlx.alloc_barriers(NUM_STAGES)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            _consumer(c_desc, bufs_A0, bufs_B, buf_C0, full_bars, empty, ws_ptr, M, N, K, 0, BLOCK_SIZE_M,
                      BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, MIN_SHARE, A_COL, B_COL,
                      EPILOGUE_SUBTILE, REG_REDUCE)
        with tlx.async_task(num_warps=4, registers=216):
            _consumer(c_desc, bufs_A1, bufs_B, buf_C1, full_bars, empty, ws_ptr, M, N, K, 1, BLOCK_SIZE_M,
                      BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, MIN_SHARE, A_COL, B_COL,
                      EPILOGUE_SUBTILE, REG_REDUCE)
        with tlx.async_task(num_warps=1, registers=40):
            _producer(a_desc, b_desc, bufs_A0, bufs_A1, bufs_B, full_bars, empty, M, N, K, BLOCK_SIZE_M,
                      BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, MIN_SHARE, A_COL, B_COL)


#: TMA boxes: the cooperative kernel's (A and C in halves).
descriptor_blocks = ws.descriptor_blocks
#: Shared memory beyond the cooperative kernel's: each consumer's scratch for its counter's old value.
ARRIVAL_SCRATCH = 256


def smem_bytes(const: dict[str, int], elem_bytes: int = 2) -> int:
    """Upper bound of one block's shared memory: the cooperative kernel's, plus :data:`ARRIVAL_SCRATCH`."""
    return ws.smem_bytes(const, elem_bytes) + ARRIVAL_SCRATCH


def signature(bm: int, bn: int, bk: int, dtype: str = "fp16", a_col: bool = False, b_col: bool = False,
              epilogue_subtile: int = 1) -> dict[str, str]:
    """Signature for compiling without a GPU (host-side descriptors, an fp32 workspace pointer)."""
    return dict(ws.signature(bm, bn, bk, dtype, a_col, b_col, epilogue_subtile), ws_ptr="*fp32")


#: (constexprs without NUM_SMS, num_warps): the cooperative kernel's big-shape tiles, with stream-K shares of at
#: least 4 k-steps.
CONFIGS = [(dict(const, MIN_SHARE=4), nw) for const, nw in ws.CONFIGS if const["BLOCK_SIZE_N"] == 256]

schedule = sk.schedule
useful = sk.useful


def workspace_numel(M: int, N: int, const: dict[str, int], num_sms: int) -> int:
    """fp32 words of the zeroed workspace: one tile region per stream-K tile, then two int32 counters each."""
    rem = triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"]) % num_sms
    return max(1, rem * (const["BLOCK_SIZE_M"] * const["BLOCK_SIZE_N"] + 2))


def make_launcher(M: int, N: int, config, num_sms: int, workspace, a_col: bool = False, b_col: bool = False):
    """A ``run(a, b, c)`` for one problem size and operand layout through ``workspace`` (all zero, at least
    :func:`workspace_numel` words; the kernel leaves it zero): constexprs bound once, descriptors per call."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    const, nw = config
    kernel = FastLaunch(matmul_kernel_ws_streamk, (num_sms,),
                        dict(const, NUM_SMS=num_sms, A_COL=a_col, B_COL=b_col, REG_REDUCE=not compat.interpreting()),
                        nw)
    blk_a, blk_b, blk_c = descriptor_blocks(const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"],
                                            a_col, b_col, const.get("EPILOGUE_SUBTILE", 1))
    from_tensor = TensorDescriptor.from_tensor

    def run(a, b, c):
        kernel(from_tensor(a.T if a_col else a, blk_a), from_tensor(b.T if b_col else b, blk_b),
               from_tensor(c, blk_c), a.shape[0], b.shape[1], a.shape[1], workspace)

    return run


def launch(a, b, c, config=0, num_sms=None, workspace=None):
    """Run ``c = a @ b`` once on ``num_sms`` programs (A and B row- or column-major views; host descriptors).

    ``config``: an index into :data:`CONFIGS` or a ``(constexprs, num_warps)`` pair. ``workspace``: an
    all-zero fp32 tensor of at least :func:`workspace_numel` elements on ``a``'s device, reused across
    launches on one stream (the kernel leaves it zeroed); None: a fresh zeroed one.
    """
    import torch

    config = CONFIGS[config] if isinstance(config, int) else config
    if num_sms is None:
        num_sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    M, N = a.shape[0], b.shape[1]
    ws_t = given_or_fresh(workspace, workspace_numel(M, N, config[0], num_sms), a.device, "hopper_ws_streamk.launch")
    make_launcher(M, N, config, num_sms, ws_t, column_major(a), column_major(b))(a, b, c)
