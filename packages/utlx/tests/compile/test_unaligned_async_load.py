"""async_load on rows Triton cannot prove aligned: staged through registers (or a clear error), never an LLVM failure.

The JIT marks an integer argument 16-divisible only when it is ``% 16 == 0``; a row stride of 136 fp16
elements gets no mark, Triton's analysis then allows 1-element (2-byte) copies, and cp.async needs 4.
Before utlx measured this, ``convert-triton-gpu-to-llvm`` failed with "failed to legalize operation
'ttg.async_copy_global_to_local'" (seen on the H200 for shapes like (300, 200, 136)).
"""

from __future__ import annotations

import re
import warnings

import pytest
from _helpers import compile_kernel
from utlx.compiler.common.errors import UtlxPerformanceWarning
from utlx.compiler.nvidia import copy_width
from utlx.kernels.nvidia import hopper_pipelined as hp

ONES = ("stride_ak", "stride_bn", "stride_cn")
ROW_STRIDES = ("stride_am", "stride_bk", "stride_cm")
CONFIG = 2  # 64x128x64, 4 stages, 4 warps: the smallest tile, the fastest compile


def _compile(unaligned: tuple[str, ...]):
    const, nw = hp.CONFIGS[CONFIG]
    return compile_kernel(hp.matmul_kernel_pipelined_hopper, hp.SIGNATURE, const, "cuda:90", nw, ONES,
                          unaligned=unaligned)


def _cp_async(ptx: str) -> int:
    return len(re.findall(r"cp\.async\.c[ga]\.shared\.global", ptx))


@pytest.mark.smoke
def test_unaligned_row_strides_fall_back_to_synchronous_loads():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k = _compile(ROW_STRIDES)
    msgs = [str(w.message) for w in caught if issubclass(w.category, UtlxPerformanceWarning)]
    # Four traced async_load ops (A and B, prologue and loop), each too narrow: one warning each.
    assert len(msgs) == 4, msgs
    assert all(m.startswith("utlx.async_load: in kernel 'matmul_kernel_pipelined_hopper'") for m in msgs)
    assert "1 contiguous element(s) x 2 byte(s) = 2 byte(s) per copy" in msgs[0]
    assert "multiples of 16 elements" in msgs[0] and "tlx.local_store" in msgs[0]
    ptx = k.asm["ptx"]
    assert _cp_async(ptx) == 0  # no copy reached the cp.async lowering
    assert re.search(r"@%p\d+ ld\.global(\.\w+)* \{ %rs\d+ \}", ptx)  # predicated 2-byte global loads instead
    assert "st.shared" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ptx  # the MMA side is unchanged
    assert "utlx|" not in k.asm["ttgir"]


def test_unaligned_k_stages_only_the_operand_whose_mask_is_unaligned():
    # K not a multiple of 16: A's mask (offs_k < K - ...) varies along A's contiguous dimension, so A's
    # copies are 1 element wide; B's mask is constant along B's contiguous dimension (N), so B stays cp.async.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k = _compile(("K",))
    assert len([w for w in caught if issubclass(w.category, UtlxPerformanceWarning)]) == 2
    aligned = _compile(())
    # Aligned: A 64x64 + B 64x128 fp16 = 24 KiB = 12 16-byte copies per thread (128 threads) per stage,
    # 4 stage-loads in the PTX (3 unrolled prologue + 1 in the loop) = 48; here B's 8 per stage remain.
    assert _cp_async(aligned.asm["ptx"]) == 48
    assert _cp_async(k.asm["ptx"]) == 32


def test_strict_mode_names_async_load_and_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(copy_width, "FALLBACK", False)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))  # the fallback build above is cached under the same key
    with pytest.raises(Exception) as info:
        _compile(ROW_STRIDES)
    text = str(info.value)
    assert "utlx.async_load: in kernel 'matmul_kernel_pipelined_hopper'" in text
    assert "= 2 byte(s) per copy, and cp.async needs at least 4" in text
    assert "UTLX_ASYNC_LOAD_FALLBACK=0" in text
    assert "Fix: make the row strides multiples of 16 elements" in text
    assert "failed to legalize" not in text


@pytest.mark.parametrize(("text", "expected"), [
    ("tensor<64x64x!tt.ptr<f16>, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], "
     "warpsPerCTA = [4, 1], order = [1, 0]}>>", (8, 2)),
    ("tensor<64x128x!tt.ptr<f32>, #ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [32, 1], "
     "warpsPerCTA = [4, 1], order = [0, 1]}>>", (4, 4)),
    ("tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], "
     "warpsPerCTA = [4, 1], order = [1, 0]}>>", None),  # not pointers
])
def test_parse_pointer_tensor(text, expected):
    assert copy_width.parse_pointer_tensor(text) == expected
