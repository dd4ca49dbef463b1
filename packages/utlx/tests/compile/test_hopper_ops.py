"""Compile path of the TLX ops the Hopper tutorials use beyond the GEMM set (issue 10), on small kernels.

Each test compiles a kernel of ours for cuda:90 on the CPU and shows the op's effect in TTGIR or PTX:
``bufs[i]`` is ``local_view``, ``local_trans`` makes wgmma read B transposed, ``async_dot`` without an
accumulator ignores it, a register A operand reaches wgmma in registers, named barriers/fences/special
registers are the PTX instructions TLX promises, and misuse is an error naming op and values.
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel

SIG = {"a_ptr": "*fp16", "out_ptr": "*fp32"}


def _ttgir_ops(ttgir: str) -> str:
    """TTGIR without locations and SSA names: what two equivalent kernels must share."""
    body = "\n".join(line for line in ttgir.splitlines() if not line.startswith("#loc"))
    body = re.sub(r"\s*loc\([^)]*\)", "", body)
    return re.sub(r"%[\w]+(:\d+)?", "%v", body)


# ---------------------------------------------------------------- bufs[i] / bars[i]


@triton.jit
def _ring_indexed(a_ptr, out_ptr, INDEX: tl.constexpr):
    offs = tl.arange(0, 64)
    ptrs = a_ptr + offs[:, None] * 64 + offs[None, :]
    bufs = tlx.local_alloc((64, 64), tl.float16, 2)
    bars = tlx.alloc_barriers(2, 1)
    if INDEX:
        tlx.barrier_expect_bytes(bars[1], 64 * 64 * 2)
        tlx.local_store(bufs[1], tl.load(ptrs))
        x = tlx.local_load(bufs[1])
    else:
        tlx.barrier_expect_bytes(tlx.local_view(bars, 1), 64 * 64 * 2)
        tlx.local_store(tlx.local_view(bufs, 1), tl.load(ptrs))
        x = tlx.local_load(tlx.local_view(bufs, 1))
    tl.store(out_ptr + offs[:, None] * 64 + offs[None, :], x.to(tl.float32))


def test_subscript_is_local_view():
    indexed = compile_kernel(_ring_indexed, SIG, {"INDEX": True}).asm["ttgir"]
    viewed = compile_kernel(_ring_indexed, SIG, {"INDEX": False}).asm["ttgir"]
    assert indexed.count("ttg.memdesc_index") >= 3  # bars[1] and two bufs[1] (CSE may merge the buffer views)
    assert _ttgir_ops(indexed) == _ttgir_ops(viewed)


@triton.jit
def _index_out_of_range(out_ptr):
    bufs = tlx.local_alloc((64, 64), tl.float16, 2)
    tlx.local_store(bufs[2], tl.zeros((64, 64), tl.float16))


def test_subscript_out_of_range_names_op_and_line():
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(_index_out_of_range, {"out_ptr": "*fp32"}, {})
    text = str(info.value)
    assert "utlx.local_view" in text and "buffer index 2 is out of range for 2 buffers" in text
    assert "bufs[2]" in text  # the source line


# ---------------------------------------------------------------- wgmma forms


@triton.jit
def _dot(a_ptr, out_ptr, TRANS: tl.constexpr, NO_ACC: tl.constexpr, A_REG: tl.constexpr):
    offs = tl.arange(0, 64)
    ptrs = a_ptr + offs[:, None] * 64 + offs[None, :]
    bufs = tlx.local_alloc((64, 64), tl.float16, 2)
    tlx.local_store(bufs[0], tl.load(ptrs))
    tlx.local_store(bufs[1], tl.load(ptrs + 4096))
    tlx.fence_async_shared()
    b = bufs[1]
    if TRANS:
        b = tlx.local_trans(bufs[1])
    if A_REG:
        acc = tlx.async_dot(tl.load(ptrs), b, tl.zeros((64, 64), tl.float32))
    elif NO_ACC:
        acc = tlx.async_dot(bufs[0], b)
    else:
        acc = tlx.async_dot(bufs[0], b, tl.zeros((64, 64), tl.float32))
    acc = tlx.async_dot_wait(0, acc)
    tl.store(out_ptr + offs[:, None] * 64 + offs[None, :], acc)


def _wgmma_immediates(ptx: str) -> list[str]:
    """``imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b`` of the first wgmma."""
    instr = re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16[^;]*;", ptx).group(0)
    return [x.strip() for x in instr.rstrip(";").split(",")[-4:]]


def test_local_trans_makes_wgmma_read_b_transposed():
    plain = compile_kernel(_dot, SIG, {"TRANS": False, "NO_ACC": False, "A_REG": False})
    trans = compile_kernel(_dot, SIG, {"TRANS": True, "NO_ACC": False, "A_REG": False})
    assert "ttg.memdesc_trans" in trans.asm["ttgir"] and "ttg.memdesc_trans" not in plain.asm["ttgir"]
    assert "ttg.local_load" not in trans.asm["ttgir"]  # no copy: wgmma reads the transposed view itself
    assert _wgmma_immediates(plain.asm["ptx"])[3] != _wgmma_immediates(trans.asm["ptx"])[3]


def test_async_dot_without_accumulator_ignores_it():
    k = compile_kernel(_dot, SIG, {"TRANS": False, "NO_ACC": True, "A_REG": False})
    dots = [line for line in k.asm["ttgir"].splitlines() if "ttng.warp_group_dot " in line]
    assert len(dots) == 1 and re.search(r"warp_group_dot %\w+, %\w+, %\w+, %false", dots[0]), dots
    assert "wgmma.mma_async" in k.asm["ptx"]


def test_async_dot_with_a_in_registers():
    k = compile_kernel(_dot, SIG, {"TRANS": False, "NO_ACC": False, "A_REG": True})
    dot = next(line for line in k.asm["ttgir"].splitlines() if "ttng.warp_group_dot " in line)
    assert "tensor<64x64xf16, #ttg.dot_op<{opIdx = 0" in dot
    # A as four 32-bit registers per thread (m64n64k16, fp16), B from a shared-memory descriptor
    a_regs = r"\{%r\d+,%r\d+,%r\d+,%r\d+\}"
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16 \{[^}]*\}, " + a_regs + r", %rd\d+",
                     k.asm["ptx"])


@triton.jit
def _flash_like(q_ptr, out_ptr, N: tl.constexpr):
    """The flash-attention inner loop shape: S = Q K^T (no acc), softmax, O += P V with P in registers."""
    offs = tl.arange(0, 64)
    ptrs = q_ptr + offs[:, None] * 64 + offs[None, :]
    q = tlx.local_alloc((64, 64), tl.float16, 1)
    kv = tlx.local_alloc((64, 64), tl.float16, 2)
    tlx.local_store(q[0], tl.load(ptrs))
    acc = tl.zeros((64, 64), tl.float32)
    m_i = tl.zeros((64,), tl.float32) - float("inf")
    for i in range(N):
        tlx.local_store(kv[0], tl.load(ptrs + (i + 1) * 4096))
        tlx.local_store(kv[1], tl.load(ptrs + (i + 2) * 4096))
        tlx.fence_async_shared()
        qk = tlx.async_dot(q[0], tlx.local_trans(kv[0]))
        qk = tlx.async_dot_wait(0, qk)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        acc = acc * tl.math.exp2(m_i - m_ij)[:, None]
        acc = tlx.async_dot(p.to(tl.float16), kv[1], acc)
        acc = tlx.async_dot_wait(0, acc)
        m_i = m_ij
    tl.store(out_ptr + offs[:, None] * 64 + offs[None, :], acc)


def test_flash_loop_keeps_accumulator_in_mma_layout():
    """Speed: the accumulator and softmax state are loop-carried in the wgmma layout (no conversions of
    in-flight accumulators, which make ptxas serialize wgmma)."""
    k = compile_kernel(_flash_like, {"q_ptr": "*fp16", "out_ptr": "*fp32"}, {"N": 4})
    ttgir = k.asm["ttgir"]
    loop = ttgir[ttgir.index("scf.for"):]
    loop = loop[:loop.index("scf.yield")]
    header = loop.splitlines()[0]
    assert "tensor<64x64xf32, #mma>" in header and "#ttg.slice<{dim = 1, parent = #mma}>" in header
    assert not re.search(r"ttg\.convert_layout [^\n]*: tensor<64x64xf32, #mma>", loop)
    assert loop.count("ttng.warp_group_dot ") == 2 and "ttg.memdesc_trans" in ttgir


# ---------------------------------------------------------------- views


@triton.jit
def _views(a_ptr, out_ptr):
    offs = tl.arange(0, 64)
    bufs = tlx.local_alloc((64, 64), tl.float16, 1)
    tlx.local_store(bufs[0], tl.load(a_ptr + offs[:, None] * 64 + offs[None, :]))
    as_int = tlx.local_reinterpret(bufs[0], tl.int16)
    right = tlx.subslice(bufs[0], 32, 32)
    x = tlx.local_load(as_int)
    y = tlx.local_load(right)
    tl.store(out_ptr + offs[:, None] * 64 + offs[None, :], x.to(tl.float32))
    tl.store(out_ptr + 4096 + offs[:, None] * 32 + tl.arange(0, 32)[None, :], y.to(tl.float32))


def test_reinterpret_and_subslice_are_views():
    k = compile_kernel(_views, SIG, {})
    ttgir = k.asm["ttgir"]
    assert re.search(r"ttg\.memdesc_reinterpret [^\n]*-> !ttg\.memdesc<64x64xi16", ttgir)
    assert re.search(r"ttg\.memdesc_subslice [^\n]*\[0, 32\][^\n]*-> !ttg\.memdesc<64x32xf16", ttgir)
    assert ttgir.count("ttg.local_alloc") == 1  # one buffer, three views of it


@triton.jit
def _bad_reinterpret(out_ptr):
    bufs = tlx.local_alloc((64, 64), tl.float16, 1)
    tlx.local_reinterpret(bufs[0], tl.float32, [64, 64])


@triton.jit
def _bad_trans(out_ptr):
    bufs = tlx.local_alloc((64, 64), tl.float16, 1)
    tlx.local_trans(bufs[0], (0, 0))


@pytest.mark.parametrize(("kernel", "words"), [
    (_bad_reinterpret, ["utlx.local_reinterpret", "[64, 64] x fp32 is 16384 bytes", "8192 bytes"]),
    (_bad_trans, ["utlx.local_trans", "permutation of 0..1", "(0, 0)"]),
])
def test_view_misuse_is_reported(kernel, words):
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(kernel, {"out_ptr": "*fp32"}, {})
    assert all(w in str(info.value) for w in words), str(info.value)


# ---------------------------------------------------------------- synchronisation and special registers


@triton.jit
def _sync(out_ptr, bar_id):
    tlx.named_barrier_arrive(10, 256)
    tlx.named_barrier_wait(9, 256)
    tlx.named_barrier_wait(bar_id, 128)
    tlx.fence("gpu")
    tlx.fence("sys")
    tlx.fence("async_shared")
    tlx.cluster_barrier()
    t0 = tlx.clock64()
    v = tlx.thread_id(1) + tlx.cluster_cta_rank() * 1000 + tlx.cluster_size_1d() * 100000
    t1 = tlx.clock64()
    tl.store(out_ptr, v)
    tl.store(out_ptr + 1, (t1 - t0).to(tl.int32))


def test_sync_and_special_registers_in_ptx():
    ptx = compile_kernel(_sync, {"out_ptr": "*i32", "bar_id": "i32"}, {}, unaligned=("bar_id",)).asm["ptx"]
    assert re.search(r"bar\.arrive 10, 256;", ptx) and re.search(r"bar\.sync 9, 256;", ptx)
    assert re.search(r"bar\.sync %r\d+, 128;", ptx)  # a runtime barrier id
    assert "fence.acq_rel.gpu;" in ptx and "fence.acq_rel.sys;" in ptx and "fence.proxy.async" in ptx
    assert "barrier.cluster.arrive.aligned;" in ptx and "barrier.cluster.wait.aligned;" in ptx
    assert "%tid.y" in ptx and "%cluster_ctarank" in ptx and "%cluster_nctarank" in ptx
    assert ptx.count("mov.u64 %rd") >= 2 and ptx.count("%clock64") == 2  # two reads, not merged


@triton.jit
def _bad_named_barrier(out_ptr, BAR: tl.constexpr, COUNT: tl.constexpr):
    tlx.named_barrier_wait(BAR, COUNT)


@triton.jit
def _bad_fence(out_ptr):
    tlx.fence("cta")


@pytest.mark.parametrize(("kernel", "consts", "words"), [
    (_bad_named_barrier, {"BAR": 0, "COUNT": 128}, ["utlx.named_barrier_wait", "1..15", "got 0"]),
    (_bad_named_barrier, {"BAR": 9, "COUNT": 100}, ["utlx.named_barrier_wait", "multiple of 32", "got 100"]),
    (_bad_fence, {}, ["utlx.fence", "'gpu', 'sys' or 'async_shared'", "'cta'"]),
])
def test_sync_misuse_is_reported(kernel, consts, words):
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(kernel, {"out_ptr": "*i32"}, consts)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_special_registers_are_nvidia_only():
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(_sync, {"out_ptr": "*i32", "bar_id": "i32"}, {}, "hip:gfx942", unaligned=("bar_id",))
    assert "utlx.named_barrier_arrive" in str(info.value) and "AMD" in str(info.value)


# ---------------------------------------------------------------- warp barriers


@triton.jit
def _warp_barrier(out_ptr, WARPS: tl.constexpr):
    bars = tlx.alloc_warp_barrier(num_barriers=2, num_warps=WARPS, num_arrivals=3)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.barrier_wait(bars[0], 0)
        with tlx.async_task(num_warps=4):
            tlx.barrier_arrive(bars[0])


def test_warp_barrier_counts_one_arrival_per_warp_group():
    ptx = compile_kernel(_warp_barrier, {"out_ptr": "*i32"}, {"WARPS": 4}).asm["ptx"]
    inits = re.findall(r"mbarrier\.init\.shared(?:::cta)?\.b64 \[%r\d+(?:\+\d+)?\], (\d+);", ptx)
    assert inits == ["3", "3"], inits  # num_arrivals arrivals of the whole 4-warp group
    # one arrival per call: a single elected thread arrives (after a sync of the task's warps on 3.7+)
    assert len(re.findall(r"@%p\d+ mbarrier\.arrive\.shared::cta\.b64", ptx)) == 1


def test_warp_barrier_from_a_task_of_other_width_is_reported():
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(_warp_barrier, {"out_ptr": "*i32"}, {"WARPS": 2})
    text = str(info.value)
    assert "utlx.barrier_arrive" in text and "num_warps=2" in text and "runs on 4 warps" in text


# ---------------------------------------------------------------- global memory and descriptors


@triton.jit
def _async_store(a_ptr, out_ptr, nbytes):
    offs = tl.arange(0, 64)
    bufs = tlx.local_alloc((64, 64), tl.float16, 1)
    tlx.local_store(bufs[0], tl.load(a_ptr + offs[:, None] * 64 + offs[None, :]))
    tlx.fence_async_shared()
    tlx.async_store(out_ptr, bufs[0], nbytes)
    tlx.async_descriptor_store_wait(0)


def test_async_store_copies_the_buffer_to_global():
    k = compile_kernel(_async_store, {"a_ptr": "*fp16", "out_ptr": "*fp16", "nbytes": "i32"}, {})
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert "ttg.local_load" in ttgir and re.search(r"tt\.store [^\n]*tensor<4096x!tt\.ptr<f16>", ttgir)
    assert re.search(r"ld\.shared", ptx) and re.search(r"@%p\d+ st\.global", ptx)  # masked by nbytes


@triton.jit
def _device_descriptor(a_ptr, out_ptr, M, PTR: tl.constexpr):
    if PTR:
        slots = tlx.allocate_tensor_descriptor(2)
        desc = tlx.make_tensor_descriptor(slots[0], a_ptr, [M, 64], [64, 1], [64, 64])
    else:
        desc = tlx.make_tensor_descriptor(None, a_ptr, [M, 64], [64, 1], [64, 64])
    bufs = tlx.local_alloc((64, 64), tl.float16, 1)
    bars = tlx.alloc_barriers(1)
    tlx.async_descriptor_prefetch_tensor(desc, [64, 0])
    tlx.barrier_expect_bytes(bars[0], 64 * 64 * 2)
    tlx.async_descriptor_load(desc, bufs[0], [0, 0], bars[0])
    tlx.barrier_wait(bars[0], 0)
    offs = tl.arange(0, 64)
    tl.store(out_ptr + offs[:, None] * 64 + offs[None, :], tlx.local_load(bufs[0]).to(tl.float32))


def test_make_tensor_descriptor_feeds_tma():
    k = compile_kernel(_device_descriptor, {"a_ptr": "*fp16", "out_ptr": "*fp32", "M": "i32"}, {"PTR": False})
    # Triton builds the descriptor in global scratch memory on the device and TMA reads through it
    assert "ttng.tensormap_create" in k.asm["ttgir"] and "ttng.reinterpret_tensor_descriptor" in k.asm["ttgir"]
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global", k.asm["ptx"])
    assert "tensormap.replace" in k.asm["ptx"]


def test_a_descriptor_made_into_a_slot_feeds_tma():
    # slot 0 of allocate_tensor_descriptor is a device-side descriptor of its own (test_descriptor_slots.py)
    k = compile_kernel(_device_descriptor, {"a_ptr": "*fp16", "out_ptr": "*fp32", "M": "i32"}, {"PTR": True})
    assert k.asm["ttgir"].count("ttng.tensormap_create") == 1 and k.metadata.global_scratch_size == 128
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global", k.asm["ptx"])
