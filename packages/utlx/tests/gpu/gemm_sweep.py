"""The GEMM correctness sweep: which tiles, which shapes, how to launch and how to check (issue 15).

Why a sweep: a lowering bug that only shows at one tile shape, one K-tile count or one dtype (the 64-row
tile once returned wrong values when its ring's tail prefetches landed in reused shared memory) is
invisible to a handful of hand-picked tests. Every shipped kernel and the hand-written TLX styles run
over the tile grid BM 64/128/256 x BN 64/128/256 x BK 32/64 x stages 2-5 x warps 4/8 (minus tiles that
cannot exist: too much shared memory, too many accumulator registers, or a shape the kernel's design
excludes), each on shapes with K = 1, 2, 3 and many tiles, ragged M/N/K, in fp16 and bf16, against a
float32 reference on fresh random data.

The full product is large (790 style x tile x dtype cases, ~2400 compiles), so by default each style runs
an *all-pairs covering set* of its feasible tiles: every pair of values of any two parameters that some
feasible tile has (BM=64 with stages=5, BK=32 with warps=8, ...) appears in at least one chosen tile, plus
every tile the kernel ships. Interactions of two parameters are where tile bugs live (the 64-row bug is
BM=64 with a short wgmma); ``full=True`` (``UTLX_SWEEP=full`` in the GPU test) runs the whole product.

This module is pure description plus launchers; it imports torch and triton lazily so the CPU tests can
import it to check the space itself. ``test_gemm_sweep.py`` (GPU) and the interpreter sweep use it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

BMS = (64, 128, 256)
BNS = (64, 128, 256)
BKS = (32, 64)
STAGES = (2, 3, 4, 5)
WARPS = (4, 8)
DTYPES = ("float16", "bfloat16")

#: Dynamic shared memory one block may use on sm_90.
SMEM_LIMIT = 227 * 1024
#: fp32 accumulator registers per thread we allow (the rest of the 255 hold addresses and operands).
MAX_ACC_REGS = 128


@dataclass(frozen=True)
class Tile:
    bm: int
    bn: int
    bk: int
    stages: int
    warps: int
    #: C column slices of the TMA kernels' epilogue (``EPILOGUE_SUBTILE``); 1: the whole tile. The grid only
    #: has 1; shipped configurations with more (e.g. 128x256x64 with 4 stages) join each sweep as they ship.
    epilogue_subtile: int = 1

    @property
    def name(self) -> str:
        tail = f"-e{self.epilogue_subtile}" if self.epilogue_subtile != 1 else ""
        return f"{self.bm}x{self.bn}x{self.bk}-s{self.stages}-w{self.warps}{tail}"

    def constexprs(self, group_m: int = 8) -> dict[str, int]:
        const = {"BLOCK_SIZE_M": self.bm, "BLOCK_SIZE_N": self.bn, "BLOCK_SIZE_K": self.bk,
                 "GROUP_SIZE_M": group_m, "NUM_STAGES": self.stages}
        return const if self.epilogue_subtile == 1 else dict(const, EPILOGUE_SUBTILE=self.epilogue_subtile)


@dataclass(frozen=True)
class KernelStyle:
    """One kernel under test: which tiles it takes and how to launch it on torch tensors."""

    name: str
    tiles: Callable[[], list[Tile]]
    launch: Callable[..., None]  # launch(tile, a, b, c, warmup=False)
    needs_16b_rows: bool  # TMA kernels: row strides must be 16-byte multiples


def _grid() -> Iterator[Tile]:
    for bm, bn, bk, st, nw in itertools.product(BMS, BNS, BKS, STAGES, WARPS):
        yield Tile(bm, bn, bk, st, nw)


def _acc_regs(rows: int, cols: int, warps: int) -> int:
    return rows * cols // (warps * 32)


def pipelined_tiles() -> list[Tile]:
    """cp.async ring + async wgmma (``utlx.kernels.nvidia.hopper_pipelined`` and the hand-written twin)."""
    return [t for t in _grid() if t.stages * (t.bm + t.bn) * t.bk * 2 <= SMEM_LIMIT
            and _acc_regs(t.bm, t.bn, t.warps) <= MAX_ACC_REGS]


def register_staged_tiles() -> list[Tile]:
    """``tl.load`` -> ``local_store`` -> ``local_load`` -> ``tl.dot``: the ring has stages - 1 buffers, and the
    loaded tile plus both dot operands live in registers, so the register bound is tighter."""
    return [t for t in _grid() if t.stages >= 2 and (t.stages - 1) * (t.bm + t.bn) * t.bk * 2 <= SMEM_LIMIT
            and _acc_regs(t.bm, t.bn, t.warps) <= 64 and t.bk == 32]


def tma_tiles() -> list[Tile]:
    """Persistent TMA + wgmma (``utlx.kernels.nvidia.hopper_tma_persistent``): ring plus the C staging tile."""
    from utlx.kernels.nvidia import hopper_tma_persistent as tma

    return [t for t in _grid() if tma.fits(t.constexprs()) and _acc_regs(t.bm, t.bn, t.warps) <= MAX_ACC_REGS]


def streamk_tiles() -> list[Tile]:
    """Stream-K hybrid (``utlx.kernels.nvidia.hopper_tma_streamk``): the persistent kernel's tiles (its ring and C
    staging, plus the arrival counter's scratch)."""
    from utlx.kernels.nvidia import hopper_tma_streamk as sk

    return [t for t in _grid() if sk.fits(dict(t.constexprs(), MIN_SHARE=sk.CONFIGS[0][0]["MIN_SHARE"]))
            and _acc_regs(t.bm, t.bn, t.warps) <= MAX_ACC_REGS]


def ws_tiles() -> list[Tile]:
    """Warp-specialized persistent GEMM: two 4-warp consumers of ``bm / 2`` rows each and a TMA producer.

    Its design fixes the warps (the default task is one consumer warpgroup), so only ``warps == 4``.
    """
    from utlx.kernels.nvidia import hopper_ws_persistent as ws

    return [t for t in _grid() if t.warps == 4 and t.bm >= 128 and ws.smem_bytes(t.constexprs()) <= SMEM_LIMIT
            and _acc_regs(t.bm // 2, t.bn, 4) <= MAX_ACC_REGS]


def pingpong_tiles() -> list[Tile]:
    """Warp-specialized pingpong GEMM: two 4-warp consumers, each with a whole ``bm x bn`` accumulator of its
    own (every other tile), and a TMA producer: ``warps == 4`` and a one-warpgroup register budget."""
    from utlx.kernels.nvidia import hopper_ws_pingpong as pp

    return [t for t in _grid() if t.warps == 4 and pp.smem_bytes(t.constexprs()) <= SMEM_LIMIT
            and _acc_regs(t.bm, t.bn, 4) <= MAX_ACC_REGS]


def producer_consumer_tiles() -> list[Tile]:
    """The hand-written warp-specialized GEMM: one consumer warpgroup holds the whole tile (so warps 4 and
    a register-bounded tile) and a 1-warp TMA producer."""
    # the ring stays allocated across the warp_specialize region, so the epilogue's layout-conversion
    # scratch (an fp16 tile) cannot reuse it: count both (H200: 256x64x64 with 5 stages needs 237660 B)
    return [t for t in _grid() if t.warps == 4 and t.stages * (t.bm + t.bn) * t.bk * 2 + t.bm * t.bn * 2 + 1024
            <= SMEM_LIMIT and _acc_regs(t.bm, t.bn, 4) <= MAX_ACC_REGS]


def shapes(tile: Tile, *, big: bool = True) -> list[tuple[int, int, int]]:
    """(M, N, K) for one tile: K spanning 1, 2 and 3 tiles and many, and ragged edges in M, N, K.

    N and K stay multiples of 8 (16-byte fp16 rows, which the TMA kernels need and which keeps cp.async
    16 bytes wide); M is fully ragged. ``big`` adds 2048x2048x128 and a many-tile shape (the shapes that
    exposed the 64-row bug), each more costly.
    """
    bm, bn, bk = tile.bm, tile.bn, tile.bk
    out = [(2 * bm, 2 * bn, bk), (2 * bm, bn, 2 * bk), (bm, 2 * bn, 3 * bk), (3 * bm - 17, 2 * bn + 8, 5 * bk + 16),
           (bm + 1, bn - 8, bk - 8)]
    if big:
        out += [(2048, 2048, 128), (1024 + bm, 1024, 40 * bk)]
    return out


# ---------------------------------------------------------------------------------------------- launchers


def _launch_pointer_kernel(kernel: Any, tile: Tile, a: Any, b: Any, c: Any, warmup: bool = False) -> None:
    import triton

    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, tile.bm) * triton.cdiv(N, tile.bn),)
    kernel.run(a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
               grid=grid, warmup=warmup, num_warps=tile.warps, **tile.constexprs())


def launch_hopper_pipelined(tile: Tile, a: Any, b: Any, c: Any, warmup: bool = False) -> None:
    from utlx.kernels.nvidia import hopper_pipelined

    _launch_pointer_kernel(hopper_pipelined.matmul_kernel_pipelined_hopper, tile, a, b, c, warmup)


def launch_register_staged(tile: Tile, a: Any, b: Any, c: Any, warmup: bool = False) -> None:
    from utlx.kernels.amd import amd_pipelined

    _launch_pointer_kernel(amd_pipelined.matmul_kernel_pipelined_amd, tile, a, b, c, warmup)


def launch_handwritten_pipelined(tile: Tile, a: Any, b: Any, c: Any, warmup: bool = False) -> None:
    """The textbook TLX ring written independently of the shipped kernel (``sweep_kernels.py``)."""
    import sweep_kernels
    import triton

    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, tile.bm) * triton.cdiv(N, tile.bn),)
    sweep_kernels.textbook_ring_gemm.run(a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), grid=grid,
                                         warmup=warmup, num_warps=tile.warps, BM=tile.bm, BN=tile.bn, BK=tile.bk,
                                         STAGES=tile.stages)


def launch_handwritten_ws(tile: Tile, a: Any, b: Any, c: Any, warmup: bool = False) -> None:
    """The hand-written producer/consumer TLX GEMM (``sweep_kernels.py``)."""
    import sweep_kernels
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, tile.bm) * triton.cdiv(N, tile.bn),)
    a_d = TensorDescriptor.from_tensor(a, [tile.bm, tile.bk])
    b_d = TensorDescriptor.from_tensor(b, [tile.bk, tile.bn])
    sweep_kernels.producer_consumer_gemm.run(a_d, b_d, c, M, N, K, c.stride(0), grid=grid, warmup=warmup,
                                             num_warps=tile.warps, BM=tile.bm, BN=tile.bn, BK=tile.bk,
                                             STAGES=tile.stages)


def _descs(a: Any, b: Any, c: Any, a_block: list[int], b_block: list[int], c_block: list[int]) -> tuple:
    from triton.tools.tensor_descriptor import TensorDescriptor

    return (TensorDescriptor.from_tensor(a, a_block), TensorDescriptor.from_tensor(b, b_block),
            TensorDescriptor.from_tensor(c, c_block))


#: Programs of a persistent launch on CPU tensors (the interpreter): few, so each walks several tiles.
INTERPRETER_PROGRAMS = 3


def _num_sms(a: Any) -> int:
    import torch

    if a.device.type != "cuda":
        return INTERPRETER_PROGRAMS
    return torch.cuda.get_device_properties(a.device).multi_processor_count


def launch_tma_persistent(tile: Tile, a: Any, b: Any, c: Any, warmup: bool = False) -> None:
    from utlx.kernels.nvidia import hopper_tma_persistent as tma

    M, K = a.shape
    N = b.shape[1]
    const = tile.constexprs()
    programs, stride = tma.grid_for(M, N, const, _num_sms(a))
    a_d, b_d, c_d = _descs(a, b, c, *tma.descriptor_blocks(tile.bm, tile.bn, tile.bk,
                                                           epilogue_subtile=tile.epilogue_subtile))
    tma.matmul_kernel_tma_persistent.run(a_d, b_d, c_d, M, N, K, grid=(programs,), warmup=warmup,
                                         num_warps=tile.warps, NUM_SMS=stride, **const)


def launch_tma_streamk(tile: Tile, a: Any, b: Any, c: Any, warmup: bool = False) -> None:
    """On every SM (the interpreter: ``INTERPRETER_PROGRAMS``): the sweep's small shapes have fewer tiles than
    programs, so every tile is cut along K into pieces; the many-tile shapes get whole rounds too. A fresh
    zeroed workspace per launch (the caching allocator keeps it alive in stream order)."""
    import torch
    from utlx import compat
    from utlx.kernels.nvidia import hopper_tma_streamk as sk

    M, K = a.shape
    N = b.shape[1]
    const = dict(tile.constexprs(), MIN_SHARE=sk.CONFIGS[0][0]["MIN_SHARE"])
    programs = _num_sms(a)
    ws = torch.zeros(sk.workspace_numel(M, N, const, programs), dtype=torch.float32, device=a.device)
    a_d, b_d, c_d = _descs(a, b, c, *sk.descriptor_blocks(tile.bm, tile.bn, tile.bk,
                                                          epilogue_subtile=tile.epilogue_subtile))
    sk.matmul_kernel_tma_streamk.run(a_d, b_d, c_d, M, N, K, ws, grid=(programs,), warmup=warmup,
                                     num_warps=tile.warps, NUM_SMS=programs, REG_REDUCE=not compat.interpreting(),
                                     **const)


def launch_ws_persistent(tile: Tile, a: Any, b: Any, c: Any, warmup: bool = False) -> None:
    import triton
    from utlx.kernels.nvidia import hopper_ws_persistent as ws

    M, K = a.shape
    N = b.shape[1]
    grid = (min(_num_sms(a), triton.cdiv(M, tile.bm) * triton.cdiv(N, tile.bn)),)
    a_d, b_d, c_d = _descs(a, b, c, *ws.descriptor_blocks(tile.bm, tile.bn, tile.bk,
                                                          epilogue_subtile=tile.epilogue_subtile))
    ws.matmul_kernel_ws_persistent.run(a_d, b_d, c_d, M, N, K, grid=grid, warmup=warmup, num_warps=tile.warps,
                                       NUM_SMS=grid[0], **tile.constexprs())


def launch_ws_pingpong(tile: Tile, a: Any, b: Any, c: Any, warmup: bool = False) -> None:
    from utlx.kernels.nvidia import hopper_ws_pingpong as pp

    M, K = a.shape
    N = b.shape[1]
    grid = (pp.programs(M, N, tile.constexprs(), _num_sms(a)),)
    a_d, b_d, c_d = _descs(a, b, c, *pp.descriptor_blocks(tile.bm, tile.bn, tile.bk,
                                                          epilogue_subtile=tile.epilogue_subtile))
    pp.matmul_kernel_ws_pingpong.run(a_d, b_d, c_d, M, N, K, grid=grid, warmup=warmup, num_warps=tile.warps,
                                     NUM_SMS=grid[0], **tile.constexprs())


STYLES = {
    "hopper_pipelined": KernelStyle("hopper_pipelined", pipelined_tiles, launch_hopper_pipelined, False),
    "handwritten_ring": KernelStyle("handwritten_ring", pipelined_tiles, launch_handwritten_pipelined, False),
    "register_staged": KernelStyle("register_staged", register_staged_tiles, launch_register_staged, False),
    "tma_persistent": KernelStyle("tma_persistent", tma_tiles, launch_tma_persistent, True),
    "tma_streamk": KernelStyle("tma_streamk", streamk_tiles, launch_tma_streamk, True),
    "ws_persistent": KernelStyle("ws_persistent", ws_tiles, launch_ws_persistent, True),
    "ws_pingpong": KernelStyle("ws_pingpong", pingpong_tiles, launch_ws_pingpong, True),
    "handwritten_ws": KernelStyle("handwritten_ws", producer_consumer_tiles, launch_handwritten_ws, True),
}


_PARAMS = ("bm", "bn", "bk", "stages", "warps")


def _pairs(tile: Tile) -> set[tuple[str, int, str, int]]:
    vals = [(p, getattr(tile, p)) for p in _PARAMS]
    return {(p, v, q, w) for (p, v), (q, w) in itertools.combinations(vals, 2)}


def all_pairs(tiles: list[Tile], must: list[Tile] = ()) -> list[Tile]:
    """A small subset of ``tiles`` covering every parameter-value pair that any of ``tiles`` covers.

    Greedy (most new pairs first, ties broken by order): not minimal, but deterministic and complete.
    ``must`` tiles are taken first whatever they cover.
    """
    chosen = [t for t in must if t in tiles]
    todo = set().union(*(_pairs(t) for t in tiles)) if tiles else set()
    for t in chosen:
        todo -= _pairs(t)
    while todo:
        best = max(tiles, key=lambda t: len(_pairs(t) & todo))
        chosen.append(best)
        todo -= _pairs(best)
    return chosen


def shipped_tiles(style: str) -> list[Tile]:
    """The configurations a shipped kernel offers (``utlx.matmul`` candidates) as sweep tiles."""
    from utlx.kernels.amd import amd_pipelined
    from utlx.kernels.nvidia import (
        hopper_pipelined,
        hopper_tma_persistent,
        hopper_tma_streamk,
        hopper_ws_persistent,
        hopper_ws_pingpong,
    )

    configs = {"hopper_pipelined": hopper_pipelined.CONFIGS, "handwritten_ring": hopper_pipelined.CONFIGS,
               "register_staged": amd_pipelined.CONFIGS,
               "tma_persistent": hopper_tma_persistent.CONFIGS + hopper_tma_persistent.TILE_CONFIGS,
               "tma_streamk": hopper_tma_streamk.CONFIGS,
               "ws_persistent": hopper_ws_persistent.CONFIGS, "ws_pingpong": hopper_ws_pingpong.CONFIGS,
               "handwritten_ws": []}[style]
    return [Tile(c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"], c["BLOCK_SIZE_K"], c["NUM_STAGES"], nw,
                 c.get("EPILOGUE_SUBTILE", 1)) for c, nw in configs]


def style_tiles(style: str, full: bool = False) -> list[Tile]:
    """The tiles one style runs: the whole feasible grid, or its all-pairs cover plus shipped tiles."""
    feasible = STYLES[style].tiles()
    shipped = list(dict.fromkeys(shipped_tiles(style)))  # configs differing only in GROUP_SIZE_M: one tile
    extra = [t for t in shipped if t not in feasible]
    if full:
        return feasible + extra
    return all_pairs(feasible, [t for t in shipped if t in feasible]) + extra


def cases(full: bool = False) -> list[tuple[str, Tile, str]]:
    """Every (style, tile, dtype) of the sweep, in a stable order (the GPU test's parameters)."""
    return [(s, t, d) for s in STYLES for t in style_tiles(s, full) for d in DTYPES]


# ---------------------------------------------------------------------------------------------- checking


def warm_chunk(chunk: list[tuple[str, Tile, str]]) -> list[str]:
    """Compile (``warmup=True``, no launch) every specialization the chunk's shapes need.

    Run in worker processes by the GPU test to compile in parallel; returns the failures as text and never
    raises (the case's own test reports the error with its traceback).
    """
    import warnings

    import torch
    import utlx  # noqa: F401  (importing utlx activates its lowering)

    errors = []
    for style, tile, dtype in chunk:
        for M, N, K in shapes(tile):
            a, b, c = inputs(M, N, K, getattr(torch, dtype), "cuda", seed=0)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    STYLES[style].launch(tile, a, b, c, warmup=True)
            except Exception as exc:
                errors.append(f"{style} {tile.name} {dtype} {M}x{N}x{K}: {type(exc).__name__}: {exc}"[:300])
    return errors


def inputs(M: int, N: int, K: int, dtype: Any, device: str, seed: int) -> tuple[Any, Any, Any]:
    """Fresh random A, B and a NaN-poisoned C (an unwritten element can never pass)."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn((M, K), device=device, dtype=torch.float32, generator=g).to(dtype)
    b = torch.randn((K, N), device=device, dtype=torch.float32, generator=g).to(dtype)
    c = torch.full((M, N), float("nan"), device=device, dtype=dtype)
    return a, b, c


def relative_error(c: Any, a: Any, b: Any) -> float:
    """``||c - A@B|| / ||A@B||`` against a float32 reference (NaN when any element is NaN)."""
    ref = a.float() @ b.float()
    return float((c.float() - ref).norm() / ref.norm().clamp_min(1e-30))


#: fp32 accumulation, one rounding of the output: fp16 lands near 4e-4, bf16 near 3e-3.
TOLERANCE = {"float16": 2e-3, "bfloat16": 1e-2}
