"""M3: the persistent TMA + mbarrier + async wgmma GEMM compiles for cuda:90 (host-side descriptors)."""

from __future__ import annotations

import re

import pytest
from _helpers import compile_kernel
from utlx.kernels.nvidia import hopper_tma_persistent as tp


@pytest.fixture(scope="module")
def compiled():
    const, nw = tp.CONFIGS[0]
    return compile_kernel(tp.matmul_kernel_tma_persistent, tp.signature(128, 256, 64), dict(const, NUM_SMS=132),
                          "cuda:90", nw)


@pytest.mark.smoke
def test_ptx_uses_tma_mbarriers_and_wgmma(compiled):
    ptx = compiled.asm["ptx"]
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global\.mbarrier::complete_tx::bytes", ptx)
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", ptx)  # the TMA store epilogue
    assert ptx.count("mbarrier.init") == 3  # one per stage
    assert "mbarrier.arrive.expect_tx" in ptx and "mbarrier.try_wait" in ptx
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16") == 4
    assert sorted(re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+);", ptx)) == ["0", "1"]
    assert "cp.async.bulk.wait_group.read" in ptx
    assert "cp.async.ca" not in ptx and "cp.async.cg" not in ptx  # TMA only, no cp.async


def test_ttgir_and_shared_memory(compiled):
    ttgir = compiled.asm["ttgir"]
    assert "utlx|" not in ttgir and "tt.descriptor_load" not in ttgir  # anchors gone
    assert "ttng.async_tma_copy_global_to_local" in ttgir and "ttng.barrier_expect" in ttgir
    # ring 3 x (128x64 + 64x256) fp16 + C staging 128x256 fp16 + 3 mbarriers of 8 bytes
    assert compiled.metadata.shared == 3 * (128 * 64 + 64 * 256) * 2 + 128 * 256 * 2 + 3 * 8


def test_second_config_compiles():
    const, nw = tp.CONFIGS[1]
    k = compile_kernel(tp.matmul_kernel_tma_persistent, tp.signature(128, 128, 64), dict(const, NUM_SMS=132),
                       "cuda:90", nw)
    assert "wgmma.mma_async.sync.aligned.m64n128k16" in k.asm["ptx"]


def test_tma_on_amd_is_an_error():
    import triton

    const, _nw = tp.CONFIGS[1]
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(tp.matmul_kernel_tma_persistent, tp.signature(64, 64, 32),
                       dict(const, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, NUM_STAGES=2, NUM_SMS=304),
                       "hip:gfx942", 4)
    # the kernel calls its body (shared with the column-major variant): the op's error is the cause
    text, err = "", info.value
    while err is not None:
        text, err = text + str(err), err.__cause__
    assert "utlx.alloc_barriers" in text and "hip:gfx942" in text and "AMD" in text
    assert "ready = tlx.alloc_barriers(NUM_STAGES)" in text  # the source line of the op
