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
from triton.language.extra.cuda.inline_ptx_lib import (  # the fork's path
    _fma_f32x2,
    _mul_f32x2,
    _sub_f32x2,
    tanh_approx_fp32,
)
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


@triton.jit
def _aliased(x_ptr, y_ptr, SLICES: tl.constexpr):
    rows = tl.arange(0, 128)[:, None] * 64 + tl.arange(0, 64)[None, :]
    spec = tlx.storage_alias_spec(storage=tlx.storage_kind.tmem)
    s_tiles = tlx.local_alloc((128, 128), tl.float32, 2, tlx.storage_kind.tmem, reuse=spec)
    p_tiles = tlx.local_alloc((128, 128 // SLICES), tl.float16, 2 * SLICES, tlx.storage_kind.tmem, reuse=spec)
    m_tiles = tlx.local_alloc((128, 1), tl.float32, 2, tlx.storage_kind.tmem, reuse=spec)
    spec.set_buffer_overlap(tlx.reuse_group(
        s_tiles,
        tlx.reuse_group(tlx.reuse_group(p_tiles, group_size=SLICES), m_tiles,
                        group_type=tlx.reuse_group_type.distinct),
        group_type=tlx.reuse_group_type.shared))
    tlx.local_store(s_tiles[1], tl.zeros((128, 128), tl.float32))
    tlx.local_store(p_tiles[SLICES + 1], tl.load(x_ptr + rows).to(tl.float16))
    tlx.local_store(m_tiles[1], tl.zeros((128, 1), tl.float32))
    tl.store(y_ptr + rows, tlx.local_load(p_tiles[SLICES + 1]).to(tl.float32))


def test_reuse_tree_places_members_in_the_spec_columns():
    from utlx.compiler.nvidia.blackwell import alias

    members = [_FakeAlloc(2, (128, 128), "fp32"), _FakeAlloc(4, (128, 64), "fp16"), _FakeAlloc(2, (128, 1), "fp32")]
    tree = {"type": "shared", "size": 1, "members": [
        {"leaf": 0},
        {"type": "distinct", "size": 1, "members": [{"type": "shared", "size": 2, "members": [{"leaf": 1}]},
                                                    {"leaf": 2}]}]}
    assert alias._measure(tree, members) == (2, 128)  # 2 slots of max(128 fp32 cols, 2 x 32 packed fp16 + 1)
    where: dict = {}
    alias._place(tree, members, 0, 1, where)
    assert where == {0: (0, 1), 1: (0, 2), 2: (64, 1)}  # P's two slices side by side, m right after them


class _FakeAlloc:
    """What alias planning reads of a tmem_alloc placeholder."""

    def __init__(self, num: int, shape: tuple[int, int], dtype: str) -> None:
        self.attrs = {"num": num, "shape": list(shape), "dtype": dtype}


@needs_blackwell_tlx
def test_storage_alias_spec_members_are_views_of_one_tmem_allocation():
    if not compat.version_at_least(3, 8):
        pytest.skip("a group_size > 1 member needs its index read back as a constant (Triton 3.8+)")
    k = compile_kernel(_aliased, {"x_ptr": "*fp16", "y_ptr": "*fp32"}, {"SLICES": 2}, "cuda:100")
    ttgir = k.asm["ttgir"]
    assert _count(ttgir, r"ttng\.tmem_alloc") == 1  # the spec's region, every member a view of it
    assert "ttg.memdesc_reinterpret" in ttgir and "ttng.tmem_subslice" in ttgir
    assert _count(k.asm["ptx"], r"tcgen05\.st\.") >= 3 and _count(k.asm["ptx"], r"tcgen05\.ld\.") >= 1


@triton.jit
def _scaled_mma(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, SCALES: tl.constexpr, A_TMEM: tl.constexpr = False,
                S_COLS: tl.constexpr = 128, COPY_A_SCALES: tl.constexpr = True):
    """One block-scaled MMA. SCALES: "smem" (the MMA copies them), "tmem_copy" (copied by the kernel), "alias"
    (copied into scales buffers declared inside a storage_alias_spec next to an fp32 tile of S_COLS columns, as
    Meta's mxfp8 attention does; COPY_A_SCALES=False leaves A's scales to whatever the spec's columns hold).
    A_TMEM: A stored into tensor memory from registers (as attention's P)."""
    offs = tl.arange(0, 128)[:, None] * 128 + tl.arange(0, 128)[None, :]
    sflat = tl.arange(0, 512)
    if A_TMEM:
        a = tlx.local_alloc((128, 128), tl.float8e4nv, 1, tlx.storage_kind.tmem)
    else:
        a = tlx.local_alloc((128, 128), tl.float8e4nv, 1)
    b = tlx.local_alloc((128, 128), tl.float8e4nv, 1)  # [N, K]: fed as its transpose
    sa = tlx.local_alloc((1, 1, 1, 2, 256), tl.uint8, 1)
    sb = tlx.local_alloc((1, 1, 1, 2, 256), tl.uint8, 1)
    tlx.local_store(a[0], tl.load(a_ptr + offs))
    tlx.local_store(b[0], tl.load(b_ptr + offs))
    tlx.local_store(sa[0], tl.load(sa_ptr + sflat).reshape(1, 1, 1, 2, 256))
    tlx.local_store(sb[0], tl.load(sb_ptr + sflat).reshape(1, 1, 1, 2, 256))
    tlx.fence_async_shared()
    acc = tlx.local_alloc((128, 128), tl.float32, 1, tlx.storage_kind.tmem)
    done = tlx.alloc_barriers(1)
    extra = tl.zeros((128, 128), tl.float32)
    if SCALES == "smem":
        tlx.async_dot_scaled(a[0], tlx.local_trans(b[0]), acc[0], sa[0], "e4m3", sb[0], "e4m3", use_acc=False,
                             mBarriers=[done[0]])
    elif SCALES == "tmem_copy":
        sa_t = tlx.local_alloc((128, 4), tl.uint8, 1, tlx.storage_kind.tmem)
        sb_t = tlx.local_alloc((128, 4), tl.uint8, 1, tlx.storage_kind.tmem)
        tlx.tmem_copy(sa[0], sa_t[0])
        tlx.tmem_copy(sb[0], sb_t[0])
        tlx.async_dot_scaled(a[0], tlx.local_trans(b[0]), acc[0], sa_t[0], "e4m3", sb_t[0], "e4m3", use_acc=False,
                             mBarriers=[done[0]])
    else:
        spec = tlx.storage_alias_spec(storage=tlx.storage_kind.tmem)
        s_tiles = tlx.local_alloc((128, S_COLS), tl.float32, 2, tlx.storage_kind.tmem, reuse=spec)
        m_tiles = tlx.local_alloc((128, 1), tl.float32, 2, tlx.storage_kind.tmem, reuse=spec)
        sa_t = tlx.local_alloc((128, 4), tl.uint8, 2, tlx.storage_kind.tmem, reuse=spec)
        sb_t = tlx.local_alloc((128, 4), tl.uint8, 2, tlx.storage_kind.tmem, reuse=spec)
        spec.set_buffer_overlap(tlx.reuse_group(
            s_tiles, tlx.reuse_group(m_tiles, sa_t, sb_t, group_type=tlx.reuse_group_type.distinct),
            group_type=tlx.reuse_group_type.shared))
        tlx.local_store(m_tiles[1], tl.zeros((128, 1), tl.float32))
        if COPY_A_SCALES:
            tlx.tmem_copy(sa[0], sa_t[1])
        tlx.tmem_copy(sb[0], sb_t[1])
        tlx.async_dot_scaled(a[0], tlx.local_trans(b[0]), acc[0], sa_t[1], "e4m3", sb_t[1], "e4m3", use_acc=False,
                             mBarriers=[done[0]])
        extra += tlx.local_load(m_tiles[1])
    tlx.barrier_wait(done[0], 0)
    tl.store(c_ptr + offs, tlx.local_load(acc[0]) + extra)


_SCALED_SIG = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "sa_ptr": "*u8", "sb_ptr": "*u8", "c_ptr": "*fp32"}


@needs_blackwell_tlx
@pytest.mark.parametrize("in_smem", [False, True], ids=["tmem_copy", "scales_in_smem"])
def test_async_dot_scaled_is_a_block_scaled_tcgen05_mma(in_smem):
    k = compile_kernel(_scaled_mma, _SCALED_SIG, {"SCALES": "smem" if in_smem else "tmem_copy"}, "cuda:100")
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    assert "ttng.tc_gen5_mma_scaled" in ttgir and _count(ttgir, r"ttng\.tmem_copy") == 2
    assert re.search(r"tcgen05\.mma\.cta_group::1\.kind::mxf8f6f4\.block_scale", ptx)
    assert _count(ptx, r"tcgen05\.cp\.cta_group::1") >= 2


@triton.jit
def _scaled_mma_two_scale_buffers(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr):
    """Two MMAs, each with its own buffer of a 2-buffer TMEM scales allocation (indices known at compile time)."""
    offs = tl.arange(0, 128)[:, None] * 128 + tl.arange(0, 128)[None, :]
    sflat = tl.arange(0, 512)
    a = tlx.local_alloc((128, 128), tl.float8e4nv, 1)
    b = tlx.local_alloc((128, 128), tl.float8e4nv, 1)
    sa = tlx.local_alloc((1, 1, 1, 2, 256), tl.uint8, 2)
    sb = tlx.local_alloc((1, 1, 1, 2, 256), tl.uint8, 1)
    tlx.local_store(a[0], tl.load(a_ptr + offs))
    tlx.local_store(b[0], tl.load(b_ptr + offs))
    for i in tl.static_range(2):
        tlx.local_store(sa[i], tl.load(sa_ptr + i * 512 + sflat).reshape(1, 1, 1, 2, 256))
    tlx.local_store(sb[0], tl.load(sb_ptr + sflat).reshape(1, 1, 1, 2, 256))
    tlx.fence_async_shared()
    acc = tlx.local_alloc((128, 128), tl.float32, 2, tlx.storage_kind.tmem)
    done = tlx.alloc_barriers(2)
    sa_t = tlx.local_alloc((128, 4), tl.uint8, 2, tlx.storage_kind.tmem)
    sb_t = tlx.local_alloc((128, 4), tl.uint8, 1, tlx.storage_kind.tmem)
    tlx.tmem_copy(sb[0], sb_t[0])
    for i in tl.static_range(2):
        tlx.tmem_copy(sa[i], sa_t[i])
        tlx.async_dot_scaled(a[0], tlx.local_trans(b[0]), acc[i], sa_t[i], "e4m3", sb_t[0], "e4m3", use_acc=False,
                             mBarriers=[done[i]])
    for i in tl.static_range(2):
        tlx.barrier_wait(done[i], 0)
        tl.store(c_ptr + i * 128 * 128 + offs, tlx.local_load(acc[i]))


@needs_blackwell_tlx
def test_each_buffer_of_a_tmem_scales_allocation_is_its_own_allocation():
    """TMEM's scales layout has no buffer index and stock Triton cannot slice it: each buffer is allocated alone
    (this used to emit a ``ttng.tmem_subslice`` of a scales buffer, which Triton's verifier refuses)."""
    k = compile_kernel(_scaled_mma_two_scale_buffers, {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "sa_ptr": "*u8",
                                                       "sb_ptr": "*u8", "c_ptr": "*fp32"}, {}, "cuda:100")
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert _count(ttgir, r"ttng\.tmem_alloc[^\n]*#tmem_scales,") == 3, ttgir
    assert _count(ttgir, r"ttng\.tc_gen5_mma_scaled") == 2 and _count(ttgir, r"ttng\.tmem_copy") == 3
    # each MMA is K=128: four K=32 block-scaled tcgen05 instructions
    assert _count(ptx, r"tcgen05\.mma\.cta_group::1\.kind::mxf8f6f4\.block_scale") == 8


@triton.jit
def _packed_math(x_ptr, y_ptr):
    offs = tl.arange(0, 128)
    x = tl.load(x_ptr + offs)
    y = _fma_f32x2(_mul_f32x2(x, x), _sub_f32x2(x, 1.0), tanh_approx_fp32(x))
    tl.store(y_ptr + offs, y)


def test_the_forks_inline_ptx_lib_is_packed_f32x2_ptx():
    import importlib

    lib = importlib.import_module("triton.language.extra.cuda.inline_ptx_lib")
    assert lib._mul_f32x2 is tlx.language.inline_ptx_lib._mul_f32x2
    ptx = compile_kernel(_packed_math, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {}, "cuda:100").asm["ptx"]
    for instr in ("mul.rn.f32x2", "sub.rn.f32x2", "fma.rn.f32x2", "tanh.approx.f32"):
        assert instr in ptx, instr
    with pytest.raises(triton.compiler.errors.CompilationError, match=r"utlx\._mul_f32x2: has no implementation"):
        compile_kernel(_packed_math, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {}, "cuda:90")


@needs_blackwell_tlx
def test_scales_members_of_an_alias_spec_get_tensor_memory_of_their_own():
    """Stock Triton cannot view a spec's columns in TMEM's scales layout, so each scales buffer of a spec member is
    an allocation of its own (the spec only shares capacity; the other members stay views of its region)."""
    k = compile_kernel(_scaled_mma, _SCALED_SIG, {"SCALES": "alias"}, "cuda:100")
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    # the two used scales buffers (the unused ones are dropped), beside the accumulator and the spec's region
    assert _count(ttgir, r"ttng\.tmem_alloc[^\n]*128x4xi8, #tmem_scales,") == 2, ttgir
    assert _count(ttgir, r"ttng\.tmem_alloc[^\n]*128x256xf32") == 1 and _count(ttgir, r"ttng\.tmem_alloc") == 4
    assert _count(ttgir, r"ttng\.tmem_copy") == 2 and _count(ttgir, r"ttng\.tc_gen5_mma_scaled") == 1
    assert _count(ptx, r"tcgen05\.mma\.cta_group::1\.kind::mxf8f6f4\.block_scale") == 4
    assert _count(ptx, r"tcgen05\.cp\.cta_group::1") >= 2


@needs_blackwell_tlx
def test_scales_members_that_do_not_fit_beside_the_spec_are_refused():
    """128 accumulator columns + a 2 x 192-column region leave no room for the scales' own allocations."""
    with pytest.raises(Exception) as info:
        compile_kernel(_scaled_mma, _SCALED_SIG, {"SCALES": "alias", "S_COLS": 192}, "cuda:100")
    text = str(info.value)
    assert ("storage_alias_spec: its block-scales members (uint8/int8) need tensor memory of their own (2 member(s), "
            "4 allocations, 16 columns)") in text
    assert "the kernel needs 528 of the 512 TMEM columns" in text, text


@needs_blackwell_tlx
def test_async_dot_scaled_reads_a_from_tensor_memory():
    k = compile_kernel(_scaled_mma, _SCALED_SIG, {"SCALES": "tmem_copy", "A_TMEM": True}, "cuda:100")
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert re.search(r"ttng\.tc_gen5_mma_scaled %\S+, %\S+, %\S+, %\S+, %\S+, %\S+", ttgir)
    # the A operand of the block-scaled tcgen05.mma is a tensor-memory address: [a] in brackets, not a descriptor
    mmas = re.findall(r"tcgen05\.mma\.cta_group::1\.kind::mxf8f6f4\.block_scale[^;]*;", ptx)
    assert len(mmas) == 4, ptx
    # [d], [a + k-step], b-descriptor: A advances 8 columns (32 packed e4m3) per K=32 step
    a_cols = [re.search(r"block32 \[ %r\d+ \+ 0 \], \[ %r\d+ \+ (\d+) \], %rd\d+", m) for m in mmas]
    assert all(a_cols), mmas
    assert [int(m.group(1)) for m in a_cols] == [0, 8, 16, 24], mmas


@needs_blackwell_tlx
def test_scales_member_read_but_never_written_through_itself_is_refused():
    """Its data could only come through the spec's shared columns, which its own allocation does not have."""
    with pytest.raises(Exception) as info:
        compile_kernel(_scaled_mma, _SCALED_SIG, {"SCALES": "alias", "COPY_A_SCALES": False}, "cuda:100")
    text = str(info.value)
    assert "storage_alias_spec: a block-scales member (utlx.tmem_alloc at " in text and '"sa_t"' in text, text
    assert "is read (utlx.tcgen05_mma_scaled at " in text and "but never written through itself" in text, text
