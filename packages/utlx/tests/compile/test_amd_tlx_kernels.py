"""utlx's own AMD TLX kernels (``utlx.kernels.amd.amd_tlx``) compile for gfx942 and gfx950 to what each op promises.

Checked in the AMDGCN (and TTGIR where the promise is a layout): vectorised buffer loads/stores, direct-to-LDS
copies on gfx950 (and their staging through registers on gfx942, with the performance warning), MFMA,
``s_setprio`` of the warp-pipeline stages, the kernel's own shared and register layouts, ``v_readfirstlane`` of
``assume_uniform``, buffer atomics. Numerics are checked under the interpreter
(``tests/interpreter/test_interp_amd_kernels.py``).
"""

from __future__ import annotations

import re
import warnings

import pytest
import utlx.kernels.amd.amd_tlx as k
from _helpers import compile_kernel
from utlx import compat
from utlx.compiler.common.errors import UtlxPerformanceWarning

TARGETS = ("hip:gfx942", "hip:gfx950")
GEMM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
            "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}


def _count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text))


def _compile(fn, sig, consts, target, num_warps=4, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtlxPerformanceWarning)
        kernel = compile_kernel(fn, sig, consts, target=target, num_warps=num_warps, **options)
    return kernel, [str(w.message) for w in caught if issubclass(w.category, UtlxPerformanceWarning)]


@pytest.mark.smoke
@pytest.mark.parametrize("target", TARGETS)
def test_buffer_gemm(target):
    kernel, _ = _compile(k.buffer_gemm_kernel, GEMM_SIG, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "NUM_WARPS": 4},
                         target)
    asm, ttgir = kernel.asm["amdgcn"], kernel.asm["ttgir"]
    assert _count(r"\bbuffer_load_dwordx4\b", asm) >= 2  # A and B tiles, 8 fp16 per lane
    assert _count(r"\bbuffer_load_(?:ushort|short_d16)", asm) == 0  # not element by element
    assert _count(r"\bbuffer_store_dword", asm) >= 1
    assert _count(r"\bglobal_(?:load|store)", asm) == 0
    assert _count(r"\bv_mfma_f32_\w+_f16", asm) > 0
    assert "amdg.buffer_load " in ttgir and "amdg.buffer_store " in ttgir
    # assume_uniform on bases computed from arguments keeps Triton's alignment facts (hence dwordx4 above)


@pytest.mark.parametrize("target", TARGETS)
def test_assume_uniform_reads_loaded_pointers_from_the_first_lane(target):
    sig = {"table_ptr": "*i64", "out_ptr": "*fp32", "N": "i32"}
    plain, _ = _compile(k.row_table_kernel, sig, {"BLOCK": 256, "UNIFORM": False}, target)
    uniform, _ = _compile(k.row_table_kernel, sig, {"BLOCK": 256, "UNIFORM": True}, target)
    lanes = [_count(r"\bv_readfirstlane_b32\b", c.asm["amdgcn"]) for c in (plain, uniform)]
    assert lanes[1] == lanes[0] + 2, lanes  # the 64-bit base, read from lane 0 in two halves
    asm = uniform.asm["amdgcn"]
    assert _count(r"\bs_cbranch_execnz\b", asm) == 0  # no waterfall loop around the buffer ops
    assert _count(r"\bbuffer_load_dword", asm) > 0 and _count(r"\bbuffer_store_dword", asm) > 0


DIRECT_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
              "stride_am": "i32", "stride_bn": "i32", "stride_cm": "i32"}
DIRECT_CONST = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "NUM_BUFFERS": 3}


@pytest.mark.smoke
def test_direct_lds_gemm_gfx950_copies_straight_into_lds():
    kernel, warned = _compile(k.direct_lds_gemm_kernel, DIRECT_SIG, DIRECT_CONST, "hip:gfx950", num_warps=8)
    asm, ttgir = kernel.asm["amdgcn"], kernel.asm["ttgir"]
    lds_copies = _count(r"\b(?:buffer|global)_load_\w+\b[^\n]*\blds\b|\bglobal_load_lds_\w+", asm)
    assert lds_copies >= 4, "A and B tiles of the prologue and the loop go global -> LDS directly"
    assert _count(r"\bds_read\w*", asm) > 0 and _count(r"\bv_mfma_f32_\w+_f16", asm) > 0
    assert not [w for w in warned if "staged through registers" in w], warned
    # the kernel's layouts: padded A buffer, K-contiguous B buffer (order [1, 0] of [BLOCK_N, BLOCK_K])
    assert re.search(r"#ttg\.padded_shared<\[512:\+16\]", ttgir)
    assert "ttg.async_copy_global_to_local" in ttgir or "amdg.buffer_load_to_local" in ttgir
    assert re.search(r"ttg\.async_wait \{num = 1 : i32", ttgir), "the kernel's wait count was not kept"
    if compat.version_at_least(3, 7):  # the loop split into the kernel's two stages
        assert re.search(r'triton\.warp_pipeline\.priority = 1 : i32, triton\.warp_pipeline\.stage = "lds_read"', ttgir)
        assert re.search(r'triton\.warp_pipeline\.stage = "mfma_and_copy"', ttgir)
    if compat.version_at_least(3, 8):  # (3.7's LLVM conversion emits no s_setprio for this loop; measured)
        assert _count(r"\bs_setprio\b", asm) >= 2, "warp-pipeline priorities"
    if compat.gluon_builder_has("create_amd_sched_barrier"):
        assert "sched_barrier" in asm


@pytest.mark.smoke
def test_direct_lds_gemm_gfx942_stages_through_registers_with_a_warning():
    kernel, warned = _compile(k.direct_lds_gemm_kernel, DIRECT_SIG, DIRECT_CONST, "hip:gfx942", num_warps=8)
    asm = kernel.asm["amdgcn"]
    assert _count(r"\blds\b", asm) == 0
    assert _count(r"\bds_write\w*", asm) > 0 and _count(r"\bv_mfma", asm) > 0
    staged = [w for w in warned if "staged through registers" in w]
    assert any("buffer_load_to_local" in w for w in staged) and any("async_load" in w for w in staged)
    assert all("hip:gfx942" in w for w in staged)


LAYOUT_SIG = {"x_ptr": "*fp16", "y_ptr": "*fp16", "bits_ptr": "*i16", "t_ptr": "*fp16", "q_ptr": "*fp16"}


def test_tlx_layout_becomes_a_linear_layout():
    """CuTe shape/stride -> bases: 8 elements per lane along a row, lanes 8 x 8, warps down the rows."""
    from utlx.compiler.common import layouts

    spec = layouts.spec_of(k.TILE_LAYOUT, [32, 64], 64)
    assert spec == {"kind": "linear", "reg": [[0, 1], [0, 2], [0, 4]],
                    "lane": [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0], [4, 0]], "warp": [[8, 0], [16, 0]],
                    "shape": [32, 64]}
    assert layouts.is_permutation(spec)
    assert not layouts.is_permutation(layouts.spec_of(k.SWIZZLED_WARPS, [32, 64], 64))  # warp base [8, 8]
    gluon = layouts.from_spec(spec)
    assert gluon.reg_bases == spec["reg"] and gluon.warp_bases == spec["warp"]


@pytest.mark.parametrize("target", TARGETS)
def test_layouts_kernel_uses_the_kernels_layouts(target, capfd):
    consts = {"BLOCK_M": 32, "BLOCK_N": 64, "REGISTER": k.TILE_LAYOUT, "SWIZZLED": k.SWIZZLED_WARPS}
    kernel, warned = _compile(k.layouts_kernel, LAYOUT_SIG, consts, target)
    ttgir = kernel.asm["ttgir"]
    # shared layouts as written, to the end (padded with permuted bases, shared linear with the XOR swizzle)
    assert re.search(r"#ttg\.padded_shared<\[64:\+4\] \{offset = \[\[0, 1\], \[0, 2\], \[0, 4\], \[0, 8\], "
                     r"\[0, 16\], \[0, 32\], \[2, 0\], \[1, 0\]", ttgir)
    assert re.search(r"#ttg\.shared_linear<\{?offset = \[\[0, 1\], .*\[1, 8\], \[2, 16\], \[4, 32\]", ttgir)
    assert "utlx|" not in ttgir
    # stock Triton has no layout pins: its passes folded the register layout the kernel asked for, and the
    # kernel's assert_same_layout says so (naming both layouts)
    moved = [w for w in warned if w.startswith("utlx.assert_same_layout")]
    assert moved and "the layouts differ" in moved[0] and "DistributedLinearLayout" in moved[0]
    # the warp-swizzled layout cannot be built on stock Triton: dropped, said so
    assert any("generic_linear" in w and "local_load" in w for w in warned), warned
    err = capfd.readouterr().err
    assert re.search(r"utlx\.dump_layout \(.*amd_tlx\.py.*\): tensor<32x64xf16, #ttg\.", err), err


@pytest.mark.parametrize("target", TARGETS)
def test_mfma_hints_kernel(target):
    kernel, warned = _compile(k.mfma_hints_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32",
                                                     "d_ptr": "*fp32"}, {"BLOCK": 64, "NUM_WARPS": 4}, target)
    asm = kernel.asm["amdgcn"]
    assert _count(r"\bv_mfma_f32_\w+_f16", asm) > 0  # both scheduled MFMAs are MFMA tl.dots
    assert any("amd_scheduled_mfma" in w for w in warned) and any("amd_register_resident" in w for w in warned)


@pytest.mark.parametrize("target", TARGETS)
def test_buffer_atomic_add(target):
    kernel, _ = _compile(k.atomic_rowsum_kernel, {"x_ptr": "*fp16", "out_ptr": "*fp32", "M": "i32", "N": "i32",
                                                  "stride_m": "i32"}, {"BLOCK_M": 64, "BLOCK_N": 64}, target)
    asm = kernel.asm["amdgcn"]
    assert _count(r"\bbuffer_atomic_add_f32\b", asm) > 0
    assert "amdg.buffer_atomic_rmw" in kernel.asm["ttgir"]


@pytest.mark.skipif(not compat.gluon_builder_has("create_local_gather"), reason="ttg.local_gather is Triton 3.7+")
@pytest.mark.parametrize("target", TARGETS)
def test_gather_scatter(target):
    kernel, _ = _compile(k.gather_scatter_kernel, {"x_ptr": "*fp32", "perm_ptr": "*i32", "idx_ptr": "*i32",
                                                   "y_ptr": "*fp32", "g_ptr": "*fp32"}, {"BLOCK_M": 32, "BLOCK_N": 64},
                         target)
    ttgir, asm = kernel.asm["ttgir"], kernel.asm["amdgcn"]
    assert "ttg.local_scatter" in ttgir and "ttg.local_gather" in ttgir
    assert _count(r"\bds_write\w*", asm) > 0 and _count(r"\bds_read\w*", asm) > 0


def test_gather_on_36_is_a_clear_error():
    if compat.gluon_builder_has("create_local_gather"):
        pytest.skip("this Triton has ttg.local_gather")
    from triton.compiler.errors import CompilationError

    with pytest.raises(CompilationError, match=r"utlx\.local_scatter: needs ttg\.local_gather/local_scatter, added "
                                               r"in Triton 3\.7"):
        compile_kernel(k.gather_scatter_kernel, {"x_ptr": "*fp32", "perm_ptr": "*i32", "idx_ptr": "*i32",
                                                 "y_ptr": "*fp32", "g_ptr": "*fp32"}, {"BLOCK_M": 32, "BLOCK_N": 64},
                       target="hip:gfx950")
