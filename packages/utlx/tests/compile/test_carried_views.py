"""Buffer views carried through loops and branches compile (``utlx/compiler/common/carried.py``, issue 27).

A view reassigned inside an ``scf.for`` ("the view of the previous iteration", Meta's GDPA kernel) or picked in a
runtime ``scf.if`` is carried by Triton as the i32 of its placeholder; the lowering carries the buffer index and
rebuilds the view where the carried value is defined. Checked in the TTGIR (a ``ttg.memdesc_index`` by the loop's
iter_arg / the branch's result, no placeholder left) and in the PTX (``tcgen05.mma`` / ``wgmma``); views of
different allocations reaching one value stay an error naming the op.
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel
from carried_kernels import branch_half, branch_view, prev_view
from utlx import compat
from utlx.compiler.common.errors import UtlxCompileError

needs_blackwell_tlx = pytest.mark.skipif(not compat.BLACKWELL_TLX,
                                         reason="utlx compiles TLX's Blackwell ops with Triton 3.7+")

SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
SIZES = {"M": 128, "N": 64, "K": 64}


@triton.jit
def _ping_pong_allocs(a_ptr, b_ptr, c_ptr, ITERS: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                      K: tl.constexpr):
    """A loop swapping views of two different allocations: no one buffer index can stand for it, refused."""
    a_offs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    a = tlx.local_alloc((M, K), tl.float16, 1)
    b0 = tlx.local_alloc((K, N), tl.float16, 1)
    b1 = tlx.local_alloc((K, N), tl.float16, 1)
    acc = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)
    tlx.local_store(a[0], tl.load(a_ptr + a_offs))
    cur = tlx.local_view(b0, 0)
    other = tlx.local_view(b1, 0)
    for _ in range(ITERS):
        tlx.async_dot(a[0], cur, acc[0], use_acc=True)
        cur, other = other, cur
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], tlx.local_load(acc[0]))


@triton.jit
def _tmem_prev_slice(a_ptr, c_ptr, ITERS: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    """A TMEM column slice of the previous iteration's buffer, read back each iteration (a ring of two)."""
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    half = tl.arange(0, M)[:, None] * (N // 2) + tl.arange(0, N // 2)[None, :]
    bufs = tlx.local_alloc((M, N), tl.float32, 2, tlx.storage_kind.tmem)
    tlx.local_store(bufs[0], tl.load(a_ptr + offs))
    prev = tlx.subslice(bufs[0], N // 2, N // 2)
    total = tl.zeros((M, N // 2), tl.float32)
    for i in range(1, ITERS + 1):
        cur = tlx.local_view(bufs, i % 2)
        tlx.local_store(cur, tl.load(a_ptr + i * M * N + offs))
        total += tlx.local_load(prev)
        prev = tlx.subslice(cur, N // 2, N // 2)
    tl.store(c_ptr + half, total)


def _check_carried(ttgir: str) -> None:
    assert "utlx|" not in ttgir, "a utlx placeholder reached the final TTGIR"


@needs_blackwell_tlx
def test_view_of_the_previous_iteration_is_indexed_by_the_carried_buffer_index():
    k = compile_kernel(prev_view, SIG, {"ITERS": 3, **SIZES}, "cuda:100")
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    _check_carried(ttgir)
    # the B ring is indexed by a value of the loop (an iter_arg), not only by constants
    loop_args = set(re.findall(r"iter_args\(([^)]*)\)", ttgir)[0].replace(" ", "").split(","))
    carried = {a.split("=")[0] for a in loop_args}
    indices = re.findall(r"ttg\.memdesc_index %b\[(%[\w]+)\]", ttgir)
    assert any(i in carried for i in indices), (indices, carried)
    assert re.search(r"tcgen05\.mma\.cta_group::1\.kind::f16", ptx)
    # the B buffers are MMA operands: NVMMA-swizzled, although the MMA reads them only through the carried view
    enc = re.search(r"%b = ttg\.local_alloc[^\n]*!ttg\.memdesc<2x64x64xf16, (#\w+)", ttgir).group(1)
    assert re.search(rf"^{enc} = #ttg\.nvmma_shared<", ttgir, re.M), enc


@needs_blackwell_tlx
def test_view_picked_in_a_runtime_branch_is_rebuilt_from_the_branch_result():
    k = compile_kernel(branch_view, {**SIG, "pick": "i32"}, SIZES, "cuda:100")
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    _check_carried(ttgir)
    # b is indexed by the branch's run-time result (folded to a value of ``pick``), not only by the constants 0, 1
    indices = re.findall(r"ttg\.memdesc_index %b\[(%[\w]+)\]", ttgir)
    constants = [i for i in indices if re.fullmatch(r"%c\d+_i32", i)]
    assert sorted(constants) == ["%c0_i32", "%c1_i32"], indices
    assert [i for i in indices if i not in constants], indices
    assert re.search(r"tcgen05\.mma\.cta_group::1\.kind::f16", ptx)


@needs_blackwell_tlx
def test_tmem_slice_of_the_previous_iteration_compiles():
    k = compile_kernel(_tmem_prev_slice, {"a_ptr": "*fp32", "c_ptr": "*fp32"}, {"ITERS": 3, "M": 128, "N": 64},
                       "cuda:100")
    _check_carried(k.asm["ttgir"])
    assert "ttng.tmem_subslice" in k.asm["ttgir"]
    assert re.search(r"tcgen05\.ld\.sync\.aligned", k.asm["ptx"])


@needs_blackwell_tlx
def test_views_of_two_allocations_through_one_branch_are_yielded_by_a_second_branch():
    k = compile_kernel(branch_view, {**SIG, "pick": "i32"}, {**SIZES, "TWO_ALLOCS": True}, "cuda:100")
    ttgir = k.asm["ttgir"]
    _check_carried(ttgir)
    # the view is a memory descriptor picked by an scf.if (or what the canonicalizer folds it to)
    assert re.search(r"scf\.if[^\n]*-> \(!ttg\.memdesc<64x64xf16", ttgir) or \
        re.search(r"arith\.select[^\n]*!ttg\.memdesc<64x64xf16", ttgir), ttgir[-4000:]
    # both B allocations are MMA operands: NVMMA-swizzled
    for name in ("b0", "b1"):
        enc = re.search(rf"%{name} = ttg\.local_alloc[^\n]*!ttg\.memdesc<1x64x64xf16, (#\w+)", ttgir).group(1)
        assert re.search(rf"^{enc} = #ttg\.nvmma_shared<", ttgir, re.M), (name, enc)
    assert re.search(r"tcgen05\.mma\.cta_group::1\.kind::f16", k.asm["ptx"])


@needs_blackwell_tlx
def test_a_loop_swapping_views_of_two_allocations_is_refused_naming_the_op():
    with pytest.raises(Exception) as info:
        compile_kernel(_ping_pong_allocs, SIG, {"ITERS": 4, **SIZES}, "cuda:100")
    exc: BaseException | None = info.value
    while exc is not None and not isinstance(exc, UtlxCompileError):
        exc = exc.__cause__ or exc.__context__
    assert exc is not None, repr(info.value)
    assert "tcgen05_mma" in str(exc) and "does not come directly from a TLX op" in str(exc)


def test_slice_picked_in_a_runtime_branch_compiles_for_hopper():
    k = compile_kernel(branch_half, {"x_ptr": "*fp16", "y_ptr": "*fp16", "pick": "i32"}, {"M": 64, "N": 64},
                       "cuda:90")
    ttgir = k.asm["ttgir"]
    _check_carried(ttgir)
    offsets = re.findall(r"ttg\.memdesc_subslice %\w+\s*\[(\d+), (\d+)\]", ttgir)
    assert ("0", "0") in offsets and ("0", "32") in offsets, offsets
    assert re.search(r"(scf\.if|arith\.select)[^\n]*!ttg\.memdesc<64x32xf16", ttgir), ttgir[-3000:]
