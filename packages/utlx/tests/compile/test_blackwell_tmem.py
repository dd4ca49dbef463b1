"""Blackwell (sm_100) TLX ops compile to tensor-memory and tcgen05 instructions (issue 27).

Compile-verified only: no Blackwell GPU is available, so each kernel is checked in its PTX (``tcgen05.alloc``,
``tcgen05.st``/``ld``, ``tcgen05.mma``, ``tcgen05.commit``, mbarrier waits) and, where it matters, in its TTGIR
(``ttng.tmem_*``, ``ttng.tc_gen5_mma``); the numbers are checked under the interpreter
(``tests/interpreter``). On Triton 3.6 the ops are refused with an error naming them and the version.
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel
from utlx import compat

needs_blackwell_tlx = pytest.mark.skipif(not compat.BLACKWELL_TLX,
                                         reason="utlx compiles TLX's Blackwell ops with Triton 3.7+")


@triton.jit
def _tmem_round_trip(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    bufs = tlx.local_alloc((M, N), tl.float32, 2, tlx.storage_kind.tmem)
    tlx.local_store(bufs[1], tl.load(x_ptr + rows))
    tl.store(y_ptr + rows, tlx.local_load(tlx.local_view(bufs, 1)) * 2.0)


@triton.jit
def _mma(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, COMMIT: tl.constexpr):
    a_offs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    b_offs = tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :]
    a = tlx.local_alloc((M, K), tl.float16, 1)
    b = tlx.local_alloc((K, N), tl.float16, 1)
    tlx.local_store(a[0], tl.load(a_ptr + a_offs))
    tlx.local_store(b[0], tl.load(b_ptr + b_offs))
    tlx.fence_async_shared()
    acc = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)
    done = tlx.alloc_barriers(1)
    if COMMIT:
        tlx.async_dot(a[0], b[0], acc[0], use_acc=False)
        tlx.tcgen05_commit(done[0])
    else:
        tlx.async_dot(a[0], b[0], acc[0], use_acc=False, mBarriers=[done[0]])
    tlx.barrier_wait(done[0], 0)
    c = tlx.local_load(acc[0])
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


@triton.jit
def _alloc_only(x_ptr, ROWS: tl.constexpr, COLS: tl.constexpr, NUM: tl.constexpr):
    tlx.local_alloc((ROWS, COLS), tl.float32, NUM, tlx.storage_kind.tmem)


@triton.jit
def _slices(x_ptr, y_ptr):
    rows = tl.arange(0, 128)[:, None] * 64 + tl.arange(0, 64)[None, :]
    buf = tlx.local_alloc((128, 128), tl.float32, 1, tlx.storage_kind.tmem)
    tlx.local_store(tlx.subslice(buf[0], 64, 64), tl.load(x_ptr + rows))
    tl.store(y_ptr + rows, tlx.local_load(tlx.local_slice(buf[0], [0, 64], [128, 64])))


def _count(text: str, pattern: str) -> int:
    return len(re.findall(pattern, text))


@needs_blackwell_tlx
def test_tmem_buffers_are_allocated_stored_and_loaded_in_tensor_memory():
    k = compile_kernel(_tmem_round_trip, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"M": 128, "N": 64}, "cuda:100")
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert re.search(r"^\.target sm_100a", ptx, re.M)
    assert "ttng.tmem_alloc" in ttgir and "ttng.tmem_store" in ttgir and "ttng.tmem_load" in ttgir
    assert _count(ptx, r"tcgen05\.alloc") == 1 and _count(ptx, r"tcgen05\.st\.") >= 1
    assert _count(ptx, r"tcgen05\.ld\.") >= 1 and "tcgen05.dealloc" in ptx
    assert "wgmma" not in ptx


@needs_blackwell_tlx
@pytest.mark.parametrize("commit", [False, True], ids=["mbarriers", "tcgen05_commit"])
def test_async_dot_is_a_tcgen05_mma_into_tensor_memory(commit):
    k = compile_kernel(_mma, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"},
                       {"M": 128, "N": 128, "K": 64, "COMMIT": commit}, "cuda:100")
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert "ttng.tc_gen5_mma" in ttgir
    assert _count(ptx, r"tcgen05\.mma\.cta_group::1\.kind::f16") == 4  # K = 64 in four k16 steps
    assert _count(ptx, r"tcgen05\.commit\.cta_group::1") >= 1
    assert "mbarrier.try_wait" in ptx and "wgmma" not in ptx
    # the operands live in NVMMA-swizzled shared memory (what tcgen05's descriptors address)
    assert re.search(r"#ttg\.nvmma_shared<\{swizzlingByteWidth = 128", ttgir)


@needs_blackwell_tlx
def test_tmem_slices_select_columns():
    k = compile_kernel(_slices, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {}, "cuda:100")
    assert "ttng.tmem_subslice" in k.asm["ttgir"]
    assert _count(k.asm["ptx"], r"tcgen05\.(st|ld)\.") >= 2


@needs_blackwell_tlx
@pytest.mark.parametrize(("kernel", "consts", "message"), [
    (_alloc_only, {"ROWS": 96, "COLS": 64, "NUM": 1}, r"utlx\.local_alloc: a tensor-memory buffer has 64 or 128 rows"),
    (_alloc_only, {"ROWS": 128, "COLS": 384, "NUM": 2}, r"utlx\.local_alloc: 2 buffer\(s\) of \[128, 384\] x fp32 take "
                                                       r"768 TMEM columns; a CTA has 512"),
    (_mma, {"M": 128, "N": 128, "K": 8, "COMMIT": False}, r"utlx\.async_dot: K must be at least 16"),
])
def test_bad_blackwell_shapes_name_op_and_limit(kernel, consts, message):
    sig = {"x_ptr": "*fp32"} if kernel is _alloc_only else {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
    with pytest.raises(triton.compiler.errors.CompilationError, match=message):
        compile_kernel(kernel, sig, consts, "cuda:100")


@pytest.mark.skipif(compat.BLACKWELL_TLX, reason="the refusal is Triton 3.6's")
def test_triton_36_refuses_blackwell_ops_naming_the_version():
    with pytest.raises(triton.compiler.errors.CompilationError, match=r"utlx\.local_alloc: .*Triton 3\.7 or newer"):
        compile_kernel(_tmem_round_trip, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"M": 128, "N": 64}, "cuda:100")


def test_tmem_on_hopper_still_names_sm100():
    with pytest.raises(triton.compiler.errors.CompilationError, match=r"utlx\.local_alloc: needs Blackwell \(sm_100\)"):
        compile_kernel(_tmem_round_trip, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"M": 128, "N": 64}, "cuda:90")
