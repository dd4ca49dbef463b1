"""The split-K TMA GEMM (issue 13's skinny shapes) compiles for cuda:90 to what it promises, and
``utlx.matmul`` offers it (and the narrow-tile TMA configurations) only for skinny problems."""

from __future__ import annotations

import importlib
import re
from collections import Counter

import pytest
from _helpers import compile_kernel, ptxas_report, spills
from utlx.kernels.nvidia import hopper_tma_persistent as tp
from utlx.kernels.nvidia import hopper_tma_splitk as sk

m = importlib.import_module("utlx.matmul")

#: The fp32 partial-tile adds: ``atom`` with an unused result on Triton 3.6-3.8, ``red`` on 3.9.
REDUCE = re.compile(r"(?:atom|red)\.global\.gpu\.relaxed\.add\.v4\.f32")


def _compile(const, nw, dtype="fp16", a_col=False, b_col=False):
    bm, bn, bk = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"]
    fn, cols = sk.kernel_for(a_col, b_col)
    return compile_kernel(fn, sk.signature(bm, bn, bk, dtype, a_col, b_col), dict(const, **cols), "cuda:90", nw)


@pytest.fixture(scope="module")
def compiled():
    return _compile(*sk.CONFIGS[0])  # 64x128x128, 4 stages, SPLIT_K=2, one warpgroup


def test_ptx_tma_ring_wgmma_and_fp32_reduction(compiled):
    ptx = compiled.asm["ptx"]
    # the ring: TMA loads completing on mbarriers, 4 stages, async wgmma (BK=128: 8 k16 steps per stage)
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global\.mbarrier::complete_tx::bytes", ptx)
    assert ptx.count("mbarrier.init") == 4
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 8
    assert "cp.async.ca" not in ptx and "cp.async.cg" not in ptx
    # the reduction: vectorized fp32 atomic adds (64x128 fp32 over 128 threads: 16 x v4 each), then one
    # acq_rel arrival per program after a CTA barrier
    atoms = Counter(re.findall(r"atom\.global\.[\w.]+", ptx))
    adds = list(REDUCE.finditer(ptx))
    assert len(adds) == 16
    assert atoms["atom.global.gpu.acq_rel.add.u32"] == 1
    red_end = adds[-1].start()
    arrive = ptx.index("atom.global.gpu.acq_rel.add.u32")
    assert red_end < arrive and "bar.sync" in ptx[red_end:arrive]
    # the last slice reads the finished fp32 tile from L2 and stores C by TMA
    assert ptx.count("ld.global.cg.v4.b32") == 16 and ptx.index("ld.global.cg") > arrive
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", ptx)


def test_ptx_last_slice_zeroes_the_tile_and_resets_its_counter(compiled):
    """Self-cleaning workspace: after the last slice's reads of the fp32 tile (``ld.global.cg``) and a CTA
    barrier, it stores zeros over the same tile (64x128 fp32 over 128 threads: 16 x v4 each) and a 0 to the
    very address the arrival counter was bumped at, before the kernel ends."""
    ptx = compiled.asm["ptx"]
    arrive = re.search(r"atom\.global\.gpu\.acq_rel\.add\.u32 %r\d+, \[ (%rd\d+) \+ 0 \]", ptx)
    assert arrive
    last_read = ptx.rindex("ld.global.cg.v4.b32")
    zero_stores = [mt for mt in re.finditer(r"st\.global\.v4\.b32 \[ %rd\d+ \+ 0 \], \{ (%r\d+), \1, \1, \1 \}", ptx)]
    assert len(zero_stores) == 16 == ptx.count("st.global.v4")  # C itself leaves by TMA, not st.global
    zero_reg = zero_stores[0].group(1)
    assert all(mt.group(1) == zero_reg for mt in zero_stores)
    assert re.search(rf"mov\.b32 \s*{zero_reg}, 0;", ptx), "the stored register is not the constant 0"
    assert last_read < zero_stores[0].start()
    assert "bar.sync" in ptx[last_read:zero_stores[0].start()]  # every thread's reads precede any zero store
    reset = re.search(rf"st\.global\.b32 \[ {re.escape(arrive.group(1))} \+ 0 \], \{{ {zero_reg} \}}", ptx)
    assert reset and reset.start() > zero_stores[-1].start()
    assert ptx.index("cp.async.bulk.wait_group.read", reset.start()) > reset.start()  # still inside the kernel


def test_ttgir_stores_zeros_over_the_tile_and_the_counter(compiled):
    ttgir = compiled.asm["ttgir"]
    zeros = re.findall(r"(%cst\w*) = arith\.constant dense<0\.000000e\+00> : tensor<64x128xf32", ttgir)
    stored = re.findall(r"tt\.store %\w+, (%\w+), %\w+ : tensor<64x128x!tt\.ptr<f32>", ttgir)  # masked
    assert len(stored) == 1 and stored[0] in zeros
    arrival = re.search(r"tt\.atomic_rmw add, acq_rel, gpu, (%\w+),", ttgir)
    assert arrival
    assert re.search(rf"tt\.store {arrival.group(1)}, %c0_i32\w* : !tt\.ptr<i32>", ttgir)


def test_ptxas_no_spills(compiled):
    assert spills(ptxas_report(compiled.asm["ptx"])) == (0, 0)


def test_ttgir_and_shared_memory(compiled):
    ttgir = compiled.asm["ttgir"]
    assert "utlx|" not in ttgir and "ttng.async_tma_copy_global_to_local" in ttgir
    assert re.search(r"tt\.atomic_rmw fadd, relaxed, gpu, .*tensor<64x128x!tt\.ptr<f32>", ttgir)
    assert re.search(r"tt\.atomic_rmw add, acq_rel, gpu, .*!tt\.ptr<i32>", ttgir)
    assert "ttng.warp_group_dot" in ttgir
    const = sk.CONFIGS[0][0]
    assert compiled.metadata.shared == sk.smem_bytes(const) == 4 * (64 * 128 + 128 * 128) * 2 + 64 * 128 * 2 + 4 * 8


@pytest.mark.parametrize(("a_col", "b_col", "dtype"), [(False, True, "bf16"), (True, False, "fp16")],
                         ids=["bcol-bf16", "acol-fp16"])
def test_column_major_variants(a_col, b_col, dtype):
    const, nw = sk.CONFIGS[3]  # 128x128x64, two consumer warpgroups
    k = _compile(const, nw, dtype, a_col, b_col)
    ptx = k.asm["ptx"]
    ptx_type = {"fp16": "f16", "bf16": "bf16"}[dtype]
    assert f"wgmma.mma_async.sync.aligned.m64n128k16.f32.{ptx_type}.{ptx_type}" in ptx
    assert REDUCE.search(ptx)
    assert k.metadata.shared == sk.smem_bytes(const)


def _skinny_additions(shape):
    base = {c.id for c in m.candidates("hopper", True)}
    return [c for c in m.candidates("hopper", True, shape=shape) if c.id not in base]


def test_skinny_problems_get_split_k_and_narrow_tiles_big_ones_do_not():
    added = _skinny_additions((16, 8192, 8192))
    assert {c.family for c in added} == {"tma_splitk", "tma_persistent"}
    assert "tma_persistent/tiles/64x128x128/s4/g8/w4" in {c.id for c in added}
    assert len([c for c in added if c.family == "tma_splitk"]) == len(sk.CONFIGS)
    assert "tma_splitk/tiles/64x128x128/s4/g8/w4/k2" in {c.id for c in added}
    for shape in [(4096, 4096, 4096), (16, 8192, 1024), (1024, 8192, 8192)]:  # big M, or short K
        assert m.candidates("hopper", True, shape=shape) == m.candidates("hopper", True)
    assert m.candidates("nvidia", True, shape=(16, 8192, 8192)) == m.candidates("nvidia", True)
    cols = [c for c in m.candidates("hopper", True, b_col=True, shape=(16, 8192, 8192)) if c.family == "tma_splitk"]
    assert len(cols) == len(sk.CONFIGS) and all(re.search(r"/k[24]/bcol$", c.id) for c in cols)


def test_for_problem_keeps_split_k_only_where_it_can_pay():
    space = m.candidates("hopper", True, shape=(16, 8192, 8192))
    kept = {c.id for c in m.for_problem(space, 16, 8192, 132, 8192)}
    assert "tma_splitk/tiles/64x128x128/s4/g8/w4/k2" in kept  # 64 tiles -> 128 programs
    # 512 x 8192: 128x128 tiles already fill 132 SMs
    assert not any(c.family == "tma_splitk" for c in m.for_problem(space, 512, 8192, 132, 8192))
    # K = 1024 split 4 ways over BK=128: 2 k-steps per slice, fewer than the 4-stage ring
    short = {c.id for c in m.for_problem(space, 16, 8192, 132, 1024)}
    assert "tma_splitk/tiles/64x128x128/s4/g8/w4/k4" not in short
    assert "tma_splitk/tiles/64x128x128/s4/g8/w4/k2" in short  # 4 k-steps per slice
    # M = 128: 32 tiles of 128x256 x 4 slices = 128 programs (one wave) stay; 128 tiles of 64x128 x 2 = 256 do not
    m128 = {c.id for c in m.for_problem(m.candidates("hopper", True, shape=(128, 8192, 8192)), 128, 8192, 132, 8192)}
    assert {"tma_splitk/tiles/128x256x64/s3/g8/w8/k4", "tma_splitk/tiles/128x128x64/s5/g8/w8/k2"} <= m128
    assert "tma_splitk/tiles/64x128x128/s4/g8/w4/k2" not in m128
    # two programs per SM: 64 tiles x 4 slices = 256 programs fit the 264 places of one wave at M = 16; at M = 128
    # the same tile gives 512 programs (two waves), which is not kept
    assert "tma_splitk/tiles/64x128x128/s2/g8/w4/k4" in kept
    assert "tma_splitk/tiles/64x128x128/s2/g8/w4/k4" not in m128
    # without K (the old call form) nothing is dropped for being split-K
    assert len(m.for_problem(space, 16, 8192, 132)) >= len(kept)


def test_blocks_per_sm_counts_what_shared_memory_allows():
    by_id = {m.Candidate("tma_splitk", tuple(sorted(c.items())), nw).id: c for c, nw in sk.CONFIGS}
    assert sk.blocks_per_sm(by_id["tma_splitk/tiles/64x128x128/s2/g8/w4/k4"]) == 2  # 112 KB
    assert sk.blocks_per_sm(by_id["tma_splitk/tiles/64x128x128/s4/g8/w4/k2"]) == 1  # 208 KB
    assert all((sk.smem_bytes(c) + sk.BLOCK_RESERVED_SMEM) * sk.blocks_per_sm(c) <= sk.SM_SMEM for c, _ in sk.CONFIGS)


def test_split_k_geometry():
    const = sk.CONFIGS[0][0]
    assert sk.programs(16, 8192, const) == 64 * 2
    assert sk.workspace_numel(16, 8192, const) == 16 * 8192 + 64
    assert sk.programs(100, 300, const) == 2 * 3 * 2


@pytest.mark.parametrize("cand", [c for c in m.candidates("hopper", True, shape=(16, 8192, 8192))
                                  if c.id not in {x.id for x in m.candidates("hopper", True)}], ids=lambda c: c.id)
def test_skinny_candidate_compiles_for_sm90_within_shared_memory(cand):
    c = cand.config
    bm, bn, bk = c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"], c["BLOCK_SIZE_K"]
    if cand.family == "tma_splitk":
        k = _compile(c, cand.num_warps)
        assert REDUCE.search(k.asm["ptx"])
        assert k.metadata.shared == cand.smem_bytes()
    else:
        k = compile_kernel(tp.matmul_kernel_tma_persistent, tp.signature(bm, bn, bk),
                           dict(c, NUM_SMS=tp.ONE_TILE_STRIDE), "cuda:90", cand.num_warps)
        assert k.metadata.shared == cand.smem_bytes()
    assert cand.smem_bytes() <= m.SMEM_LIMIT
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16" in k.asm["ptx"]  # the tile's N fits one wgmma
