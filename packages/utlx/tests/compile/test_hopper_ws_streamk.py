"""The stream-K hybrid of the cooperative warp-specialized GEMM compiles for cuda:90 to what it promises: no
spills, shared memory within its bound, the register-direct fp32 reduction and the arrival counter, and no
barrier beyond the cooperative kernel's own (each consumer's reduction barrier is its partition's, 128
threads, so the two halves never wait for each other or for the producer)."""

from __future__ import annotations

import re

import pytest
from _helpers import compile_kernel, ptxas_report, spills
from utlx.kernels.nvidia import hopper_tma_persistent as tp
from utlx.kernels.nvidia import hopper_ws_persistent as ws
from utlx.kernels.nvidia import hopper_ws_streamk as wsk


def _bars(ptx: str) -> set[str]:
    return {re.sub(r"\s+", " ", b) for b in re.findall(r"\b(?:bar|barrier)\.sync\s+[^;]*;", ptx)}


@pytest.fixture(scope="module", params=range(len(wsk.CONFIGS)))
def compiled(request):
    const, nw = wsk.CONFIGS[request.param]
    bm, bn, bk, sub = const["BLOCK_SIZE_M"], const["BLOCK_SIZE_N"], const["BLOCK_SIZE_K"], const.get(
        "EPILOGUE_SUBTILE", 1)
    k = compile_kernel(wsk.matmul_kernel_ws_streamk, wsk.signature(bm, bn, bk, "fp16", epilogue_subtile=sub),
                       dict(const, NUM_SMS=132), "cuda:90", nw)
    coop_const = {key: v for key, v in const.items() if key != "MIN_SHARE"}
    coop = compile_kernel(ws.matmul_kernel_ws_persistent, ws.signature(bm, bn, bk, "fp16", epilogue_subtile=sub),
                          dict(coop_const, NUM_SMS=132), "cuda:90", nw)
    return const, k, coop


def test_no_spills_and_shared_memory_within_its_bound(compiled):
    const, k, _coop = compiled
    assert spills(ptxas_report(k.asm["ptx"])) == (0, 0)
    assert k.metadata.shared <= wsk.smem_bytes(const) <= tp.SMEM_LIMIT


def test_reduction_from_registers_in_each_partition(compiled):
    _const, k, coop = compiled
    ptx = k.asm["ptx"]
    assert ptx.count("red.relaxed.gpu.global.add.v2.f32") >= 2 * 64  # both halves: 64x256 fp32 / 128 threads / 2
    assert "atom.global.gpu.acq_rel.add.u32" in ptx  # one arrival per (tile, half)
    assert _bars(ptx) <= _bars(coop.asm["ptx"]), _bars(ptx) - _bars(coop.asm["ptx"])
    assert any(re.fullmatch(r"bar\.sync \d+, 128;", b) for b in _bars(ptx))


def test_schedule_and_workspace_of_4096_cubed():
    """512 tiles of 128x256 on 132 SMs: 3 whole rounds, then 116 tiles of 64 k-steps in shares of 57; the
    workspace holds one fp32 tile and two counters per stream-K tile."""
    const = wsk.CONFIGS[0][0]
    s = wsk.schedule(4096, 4096, 4096, const, 132)
    assert (s.full, s.rem, s.k_total, s.share) == (3, 116, 64, 57)
    assert wsk.workspace_numel(4096, 4096, const, 132) == 116 * (128 * 256 + 2)
