"""Epilogue subtiling (``EPILOGUE_SUBTILE``) in the persistent TMA and warp-specialized GEMMs, for cuda:90.

The point of it: 128x256x64 with 4 ring stages fits shared memory only when C leaves in column slices through
two small staging buffers (the whole 64 KB C tile plus 4 x 48 KB stages is over the 227 KB limit). Shown here
for every shipped subtiled configuration, fp16 and bf16, row- and column-major operands: the shared memory
Triton allocates (within the limit, and what ``smem_bytes`` predicts, so ``utlx.matmul`` filters correctly),
no ptxas spills, the slices cut in registers (``tt.split``, no layout conversion through shared memory), and one
TMA store per slice, each buffer reused only after ``cp.async.bulk.wait_group.read 1``.
"""

from __future__ import annotations

import importlib
import re

import pytest
from _helpers import compile_kernel, ptxas_report, registers, spills
from utlx.kernels.nvidia import hopper_tma_persistent as tp
from utlx.kernels.nvidia import hopper_ws_persistent as ws

m = importlib.import_module("utlx.matmul")

MODULES = {"tma_persistent": tp, "ws_persistent": ws}
#: The shipped subtiled configurations: (family, constexprs, num_warps).
SUBTILED = [(family, const, nw) for family, mod in MODULES.items() for const, nw in mod.CONFIGS
            if tp.epilogue_subtile(const) != 1]
CASES = [(family, const, nw, dtype, a_col, b_col) for family, const, nw in SUBTILED
         for dtype, a_col, b_col in (("fp16", False, False), ("bf16", False, True), ("fp16", True, False))]


def _id(case) -> str:
    family, const, nw, dtype, a_col, b_col = case
    return (f"{family}-{const['BLOCK_SIZE_M']}x{const['BLOCK_SIZE_N']}x{const['BLOCK_SIZE_K']}-s{const['NUM_STAGES']}"
            f"-e{const['EPILOGUE_SUBTILE']}-w{nw}-{dtype}-{'c' if a_col else 'r'}{'c' if b_col else 'r'}")


def _compile(family, const, nw, dtype="fp16", a_col=False, b_col=False):
    mod = MODULES[family]
    fn, cols = mod.kernel_for(a_col, b_col)
    sig = mod.signature(const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"], dtype, a_col, b_col,
                        tp.epilogue_subtile(const))
    return compile_kernel(fn, sig, dict(const, NUM_SMS=132, **cols), "cuda:90", nw)


def test_the_128x256x64_four_stage_configurations_ship_subtiled():
    shipped = {(f, c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"], c["BLOCK_SIZE_K"], c["NUM_STAGES"]) for f, c, _ in SUBTILED}
    assert {("tma_persistent", 128, 256, 64, 4), ("ws_persistent", 128, 256, 64, 4)} <= shipped
    for family, const, _nw in SUBTILED:
        whole = {k: v for k, v in const.items() if k != "EPILOGUE_SUBTILE"}
        # without subtiling the same ring does not fit; with it, it does
        assert MODULES[family].smem_bytes(whole) > m.SMEM_LIMIT >= MODULES[family].smem_bytes(const)


def test_matmul_offers_them_and_filters_by_their_shared_memory():
    ids = {c.id for c in m.candidates("hopper", True)}
    assert "tma_persistent/persistent/128x256x64/s4/g8/w8/e4" in ids
    assert "ws_persistent/persistent/128x256x64/s4/g8/w4/e4" in ids
    assert "tma_persistent/persistent/128x256x64/s4/g8/w8/e4/bcol" in {c.id for c in m.candidates("hopper", True,
                                                                                                  b_col=True)}
    # two 128x128 slices in two buffers (64 KB) bring back the overflow: such a candidate is filtered out
    big = m.Candidate("tma_persistent", tuple(sorted(tp._cfg(128, 256, 64, 4, epilogue_subtile=2).items())), 8,
                      "persistent")
    assert big.smem_bytes() > m.SMEM_LIMIT
    assert tp.c_staging_bytes(128, 256, 4) == 2 * 128 * 64 * 2 and tp.c_staging_bytes(128, 256, 1) == 128 * 256 * 2


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_subtiled_epilogue_compiles_within_shared_memory_without_spills(case):
    family, const, nw, dtype, a_col, b_col = case
    k = _compile(family, const, nw, dtype, a_col, b_col)
    sub = tp.epilogue_subtile(const)
    bm, bn = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"]
    shared = k.metadata.shared
    if family == "tma_persistent":
        assert shared == tp.smem_bytes(const) <= m.SMEM_LIMIT
    else:  # the estimate is an upper bound within the slack (barriers, alignment)
        assert shared <= ws.smem_bytes(const) <= m.SMEM_LIMIT and ws.smem_bytes(const) - shared < ws.SMEM_SLACK
    report = ptxas_report(k.asm["ptx"])
    assert spills(report) == (0, 0), report
    assert registers(report) <= 255

    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    rows = bm if family == "tma_persistent" else bm // 2
    consumers = 1 if family == "tma_persistent" else 2
    elem = {"fp16": "f16", "bf16": "bf16"}[dtype]
    staging = re.findall(rf"ttg\.local_alloc : \(\) -> !ttg\.memdesc<2x{rows}x{bn // sub}x{elem}", ttgir)
    assert len(staging) == consumers, "one pair of slice buffers per storing task"
    assert f"memdesc<1x{rows}x{bn}x{elem}" not in ttgir  # no whole-tile staging buffer
    assert "ttg.convert_layout" not in ttgir  # the slices are cut in registers
    assert ttgir.count("tt.split") == consumers * (sub - 1)  # halves, then quarters
    stores = ptx.count("cp.async.bulk.tensor.2d.global.shared::cta")
    assert stores == consumers * sub
    assert len(re.findall(r"cp\.async\.bulk\.wait_group\.read\s+1;", ptx)) == consumers * sub
    assert "stmatrix" in ptx
    # each slice: wait for the store two slices back, barrier, registers -> shared, fence, barrier, TMA store
    for store in re.finditer(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", ptx):
        before = ptx[:store.start()]
        wait = before.rindex("cp.async.bulk.wait_group.read")
        between = before[wait:]
        assert "stmatrix" in between and "fence.proxy.async.shared::cta" in between
        assert between.rindex("bar.sync") > between.rindex("fence.proxy.async")  # all threads wrote before the copy
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.{elem}.{elem}" in ptx


def test_whole_tile_path_is_unchanged():
    """``EPILOGUE_SUBTILE`` left at its default (1) is the old epilogue: one C tile, one TMA store per tile,
    ``wait_group.read 0`` before reusing it, no split."""
    const, nw = tp.CONFIGS[0]
    assert "EPILOGUE_SUBTILE" not in const
    k = _compile("tma_persistent", const, nw)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "memdesc<1x128x256xf16" in ttgir and "tt.split" not in ttgir
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == 1
    assert not re.search(r"cp\.async\.bulk\.wait_group\.read\s+1;", ptx)
    assert k.metadata.shared == tp.smem_bytes(const) == 3 * (128 * 64 + 64 * 256) * 2 + 128 * 256 * 2 + 3 * 8
