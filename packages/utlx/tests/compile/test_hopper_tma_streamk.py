"""The stream-K hybrid TMA GEMM (issue 13's big shapes): its schedule on the big shapes (the property test
over all schedules is in ``test_hopper_tma_streamk_properties.py``), it compiles for cuda:90 to what it
promises (no spills, shared memory within the limit, the register-direct fp32 reduction and the arrival
counter in PTX), and ``utlx.matmul`` offers it only where the last round of the persistent kernel is partial."""

from __future__ import annotations

import importlib
import re

import pytest
from _helpers import compile_kernel, ptxas_report, registers, spills
from utlx.kernels.nvidia import hopper_tma_persistent as tp
from utlx.kernels.nvidia import hopper_tma_streamk as sk

m = importlib.import_module("utlx.matmul")


# ------------------------------------------------------------------------------------------- the schedule


def test_schedule_of_the_big_shapes():
    """8192^3 at 128x256x64 on 132 SMs: 2048 tiles = 15 whole rounds + 68 tiles of 128 k-steps shared out as
    66 k-steps per program (15.52 rounds of work instead of 16)."""
    s = sk.schedule(8192, 8192, 8192, sk.CONFIGS[0][0], 132)
    assert (s.full, s.rem, s.k_total, s.share) == (15, 68, 128, 66)
    assert sk.workspace_numel(8192, 8192, sk.CONFIGS[0][0], 132) == 68 * (128 * 256 + 1)
    assert {s.pieces(j) for j in range(s.rem)} <= {2, 3}


# ------------------------------------------------------------------------------------------- compiling


def _compile(const, nw, dtype="fp16", a_col=False, b_col=False):
    bm, bn, bk = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"]
    fn, cols = sk.kernel_for(a_col, b_col)
    return compile_kernel(fn, sk.signature(bm, bn, bk, dtype, a_col, b_col, sk.epilogue_subtile(const)),
                          dict(const, NUM_SMS=132, **cols), "cuda:90", nw)


@pytest.fixture(scope="module", params=range(len(sk.CONFIGS)),
                ids=lambda i: m.Candidate("tma_streamk", tuple(sorted(sk.CONFIGS[i][0].items())), sk.CONFIGS[i][1],
                                          "persistent").id)
def compiled(request):
    const, nw = sk.CONFIGS[request.param]
    return const, nw, _compile(const, nw)


def test_no_spills_and_shared_memory_within_the_limit(compiled):
    const, _nw, k = compiled
    report = ptxas_report(k.asm["ptx"])
    assert spills(report) == (0, 0)
    assert registers(report) <= 255
    # no layout-conversion scratch for the fp32 tile: the persistent kernel's bytes plus the arrival's
    assert tp.smem_bytes(const) < k.metadata.shared <= sk.smem_bytes(const) <= tp.SMEM_LIMIT


def test_ptx_reduction_from_registers_arrival_and_clean_up(compiled):
    const, nw, k = compiled
    ptx = k.asm["ptx"]
    bm, bn = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"]
    pairs = bm * bn // (2 * 32 * nw)  # fp32 column pairs per thread
    # the partial tile: v2 reductions straight from the accumulator, no tl.atomic_add (that would convert)
    adds = [mt.start() for mt in re.finditer(r"red\.relaxed\.gpu\.global\.add\.v2\.f32", ptx)]
    assert len(adds) == pairs
    assert not re.search(r"atom\.global\.[\w.]*add\.(v\d\.)?f32", ptx)
    # then one acq_rel arrival after a CTA barrier
    arrive = ptx.index("atom.global.gpu.acq_rel.add.u32")
    assert ptx.count("atom.global.gpu.acq_rel.add.u32") == 1
    assert adds[-1] < arrive and "bar.sync" in ptx[adds[-1]:arrive]
    # the last piece reads the finished tile from L2 into the accumulator's registers, then zeroes the
    # tile and resets the counter
    loads = [mt.start() for mt in re.finditer(r"ld\.global\.cg\.v2\.f32", ptx)]
    assert len(loads) == pairs and loads[0] > arrive
    zero = [mt.start() for mt in re.finditer(r"st\.global\.v4\.b32 \[ %rd\d+ \+ \d+ \], \{ (%r\d+), \1, \1, \1 \}",
                                             ptx)]
    assert zero and zero[0] > loads[-1] and "bar.sync" in ptx[loads[-1]:zero[0]]
    # C leaves by TMA (whole tiles and completed pieces alike)
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", ptx)
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16" in ptx


@pytest.mark.parametrize(("a_col", "b_col", "dtype"), [(False, True, "bf16"), (True, False, "fp16")],
                         ids=["bcol-bf16", "acol-fp16"])
def test_column_major_variants(a_col, b_col, dtype):
    const, nw = sk.CONFIGS[2]  # 128x128x64
    k = _compile(const, nw, dtype, a_col, b_col)
    ptx_type = {"fp16": "f16", "bf16": "bf16"}[dtype]
    assert f"wgmma.mma_async.sync.aligned.m64n128k16.f32.{ptx_type}.{ptx_type}" in k.asm["ptx"]
    assert "red.relaxed.gpu.global.add.v2.f32" in k.asm["ptx"]
    assert spills(ptxas_report(k.asm["ptx"])) == (0, 0)


# ------------------------------------------------------------------------------------------- candidates


def test_candidates_and_ids():
    ids = [c.id for c in m.candidates("hopper", True) if c.family == "tma_streamk"]
    assert ids == ["tma_streamk/persistent/128x256x64/s4/g8/w8/e4"]  # TUNED; all of CONFIGS compile (above)
    cols = [c.id for c in m.candidates("hopper", True, b_col=True) if c.family == "tma_streamk"]
    assert cols and all(i.endswith("/bcol") for i in cols)


@pytest.mark.parametrize(("shape", "offered"), [((8192, 8192, 8192), True), ((4096, 4096, 4096), True),
                                                ((1024, 16384, 8192), True), ((2048, 2048, 2048), False),
                                                ((128 * 132, 256, 1024), False)],
                         ids=["8192^3", "4096^3", "1024x16384x8192", "2048^3-fewer-tiles-than-SMs", "whole-rounds"])
def test_for_problem_offers_stream_k_only_with_a_partial_last_round(shape, offered):
    M, N, K = shape
    kept = [c for c in m.for_problem(m.candidates("hopper", True, shape=shape), M, N, 132, K)
            if c.family == "tma_streamk" and c.config["BLOCK_SIZE_N"] == 256]
    assert bool(kept) == offered
