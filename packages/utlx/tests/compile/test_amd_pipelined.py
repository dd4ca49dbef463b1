"""M2: the register-staged pipelined GEMM (MI300 TLX kernel) compiles for gfx942/gfx950 from the same
source as on NVIDIA, and NVIDIA-only ops fail on AMD with an error naming op, target and alternative."""

from __future__ import annotations

import re

import pytest
from _helpers import compile_kernel
from utlx.kernels.amd import amd_pipelined as ap
from utlx.kernels.nvidia import hopper_pipelined as hp

ONES = ("stride_ak", "stride_bn", "stride_cn")
#: Spill bound stated by the issue: the pipelined AMD GEMM must not spill at all.
MAX_SPILLS = 0


def _spills(asm: str) -> int:
    counts = re.findall(r"\.(?:vgpr|sgpr)_spill_count:\s+(\d+)", asm)
    assert counts, "no spill counts in the AMD assembly"
    return sum(int(c) for c in counts)


@pytest.mark.smoke
@pytest.mark.parametrize(("arch", "config"), [("gfx942", 0), ("gfx950", 1), ("gfx942", 2)])
def test_amd_register_staged_gemm(arch, config):
    const, nw = ap.CONFIGS[config]
    k = compile_kernel(ap.matmul_kernel_pipelined_amd, ap.SIGNATURE, const, f"hip:{arch}", nw, ONES)
    asm = k.asm["amdgcn"]
    assert re.search(r"\bds_write", asm), "tiles are not stored to LDS"
    assert re.search(r"\bds_read", asm), "MFMA operands are not read from LDS"
    assert re.search(r"\bv_mfma_f32_\w+_f16", asm), "no fp16 MFMA"
    assert _spills(asm) <= MAX_SPILLS
    assert re.search(r"ScratchSize:\s+0\b", asm)
    # The ring is exactly (NUM_STAGES - 1) x (A tile + B tile) of fp16.
    bm, bn, bk, stages = (const[x] for x in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "NUM_STAGES"))
    assert k.metadata.shared >= (stages - 1) * (bm * bk + bk * bn) * 2
    ttgir = k.asm["ttgir"]
    assert "utlx|" not in ttgir
    # local_load feeds the MFMA directly in its dot-operand layout (no extra layout conversion).
    assert re.search(r"ttg\.local_load .*-> tensor<\d+x\d+xf16, #ttg\.dot_op<\{opIdx = 0, parent = #mma", ttgir)


def test_same_source_compiles_for_hopper():
    const, nw = ap.CONFIGS[1]
    k = compile_kernel(ap.matmul_kernel_pipelined_amd, ap.SIGNATURE, const, "cuda:90", nw, ONES)
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async" in ptx or "mma.sync" in ptx
    assert "st.shared" in ptx


@pytest.mark.smoke
def test_nvidia_only_op_on_amd_names_op_target_and_alternative():
    import triton

    const = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "NUM_STAGES": 3}
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(hp.matmul_kernel_pipelined_hopper, hp.SIGNATURE, const, "hip:gfx942", 4, ONES)
    text = str(info.value)
    # async_load compiles for AMD (staged through registers on gfx942); the Hopper MMA does not
    assert "utlx.async_dot" in text
    assert "hip:gfx942" in text
    assert "tl.dot(tlx.local_load(a_view)" in text  # the AMD alternative
    assert "tlx.async_dot(a_k, b_k, acc)" in text  # the kernel's source line


def test_too_much_shared_memory_is_triton_out_of_resources():
    """Refused at compile time (also on a CPU), as Triton's OutOfResources so triton.autotune skips it."""
    from triton.runtime.errors import OutOfResources

    const, nw = ap.CONFIGS[0]  # 1 stage of 256x32 + 32x256 fp16 = 32 KiB: fits; 8 stages do not
    const = dict(const, NUM_STAGES=9)  # 8 buffers per operand: 256 KiB > 64 KiB of gfx942 LDS
    with pytest.raises(OutOfResources) as info:
        compile_kernel(ap.matmul_kernel_pipelined_amd, ap.SIGNATURE, const, "hip:gfx942", nw, ONES)
    text = str(info.value)
    assert "utlx.local_alloc" in text and "65536" in text and "hip:gfx942" in text
    assert "amd_pipelined.py" in text  # the allocation's source line
