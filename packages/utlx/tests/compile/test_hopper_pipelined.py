"""M1: the classic TLX pipelined GEMM (cp.async ring + async wgmma) compiles for cuda:90 on stock Triton."""

from __future__ import annotations

import re

import pytest
from _helpers import compile_kernel
from utlx.kernels.nvidia import hopper_pipelined as hp

ONES = ("stride_ak", "stride_bn", "stride_cn")


@pytest.fixture(scope="module")
def compiled():
    const, nw = hp.CONFIGS[0]  # 128x256x64, 3 stages, 8 warps
    return compile_kernel(hp.matmul_kernel_pipelined_hopper, hp.SIGNATURE, const, "cuda:90", nw, ONES)


@pytest.mark.smoke
def test_ptx_has_cp_async_ring(compiled):
    ptx = compiled.asm["ptx"]
    # A 128x64 + B 64x256 fp16 tile = 48 KiB = 12 16-byte copies per thread (256 threads), issued in
    # the two unrolled prologue stages and once in the loop.
    assert ptx.count("cp.async.cg.shared.global") == 36
    assert ptx.count("cp.async.commit_group") == 3
    # The kernel's own wait count (NUM_STAGES - 2 = 1) survives (Triton's pipeliner would reset it to 0),
    # then the drain after the loop (utlx.compiler.common.drain) waits for the tail prefetches.
    assert re.findall(r"cp\.async\.wait_group\s+(\d+);", ptx) == ["1", "0"]


@pytest.mark.smoke
def test_ptx_has_async_wgmma(compiled):
    ptx = compiled.asm["ptx"]
    # BLOCK_K = 64 is 4 wgmma k-steps of 16, instruction shape m64n256k16.
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16") == 4
    waits = re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+);", ptx)
    assert waits == ["1", "0"]
    assert "fence.proxy.async" in ptx


def test_ttgir_is_real_ttgir(compiled):
    ttgir = compiled.asm["ttgir"]
    assert "utlx|" not in ttgir  # every placeholder was lowered and removed
    assert "ttg.local_alloc" in ttgir and "!ttg.memdesc<3x128x64xf16" in ttgir
    assert "ttng.warp_group_dot" in ttgir and "isAsync = true" in ttgir
    # The accumulator lives in the wgmma layout across iterations (no per-iteration layout conversion).
    assert re.search(r"scf\.for .*-> \(tensor<128x256xf32, #mma>", ttgir)


def test_shared_memory_is_the_ring(compiled):
    # 3 stages x (128x64 + 64x256) fp16 = 147456 bytes, nothing else.
    assert compiled.metadata.shared == 3 * (128 * 64 + 64 * 256) * 2


@pytest.mark.parametrize("config", [1, 2])
def test_other_configs_compile(config):
    const, nw = hp.CONFIGS[config]
    k = compile_kernel(hp.matmul_kernel_pipelined_hopper, hp.SIGNATURE, const, "cuda:90", nw, ONES)
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async" in ptx and "cp.async.cg" in ptx
    assert re.findall(r"cp\.async\.wait_group\s+(\d+);", ptx) == [str(const["NUM_STAGES"] - 2), "0"]
