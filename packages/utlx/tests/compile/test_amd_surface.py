"""The rest of issue 17's surface on the compile path: clear errors where stock Triton cannot follow (each names
op and target), the new parameters, the fork's HIP options and range comprehensions, and the NVIDIA side of
ops that are not AMD-only (``prefetch``, ``fence_mbarrier_init_cluster``, ``barrier_arrive(pred=)``)."""

from __future__ import annotations

import re
import warnings

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel
from triton.compiler.errors import CompilationError
from utlx.compiler.common import downgrade
from utlx.compiler.common.errors import UtlxCompileError, UtlxPerformanceWarning


@triton.jit
def _buffer_copy(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tlx.buffer_store(tlx.buffer_load(x_ptr, offs, mask=offs < N), y_ptr, offs, mask=offs < N)


@triton.jit
def _one_op(x_ptr, OP: tl.constexpr):
    offs = tl.arange(0, 64)
    if OP == "sched_barrier":
        tlx.amd_sched_barrier(0)
    if OP == "warp_pipeline":
        with tlx.warp_pipeline_stage("load", priority=1):
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
    if OP == "wmma":
        tlx.require_amd_wmma_layout(tl.load(x_ptr + offs))
    if OP == "tdm":
        tlx.async_amd_descriptor_wait(0)
    if OP == "tensormap_prefetch":
        tlx.prefetch(x_ptr + offs, tensormap=True)
    if OP == "offsets_i64":
        tlx.buffer_load(x_ptr, offs.to(tl.int64))
    if OP == "other_without_mask":
        tlx.buffer_load(x_ptr, offs, other=0.0)
    if OP == "remat_both":
        buf = tlx.local_alloc((64,), tl.float32, 1)
        tlx.local_load(buf[0], rematerialize_coordinates=True, rematerialize_coordinates_group=1)
    if OP == "prefetch":
        tlx.prefetch(x_ptr + offs, level="L2", mask=offs < 32)
    if OP == "fence_cluster":
        tlx.fence_mbarrier_init_cluster()


def _compile_op(op: str, target: str):
    return compile_kernel(_one_op, {"x_ptr": "*fp32"}, {"OP": op}, target=target)


@pytest.mark.parametrize(("op", "target", "message"), [
    ("sched_barrier", "cuda:90", r"utlx\.amd_sched_barrier: is an AMD-only op \[target cuda:90\]"),
    ("warp_pipeline", "cuda:90", r"utlx\.warp_pipeline_stage: is an AMD-only op \[target cuda:90\]"),
    ("wmma", "hip:gfx950", r"utlx\.require_amd_wmma_layout: AMD WMMA layouts .* \[target hip:gfx950\]"),
    ("tdm", "hip:gfx950", r"utlx\.async_amd_descriptor_wait: AMD TDM .*\(gfx1250\) .* \[target hip:gfx950\]"),
    ("tensormap_prefetch", "hip:gfx942", r"utlx\.prefetch: tensormap=True .*TMA descriptors do not exist on AMD"),
    ("offsets_i64", "hip:gfx942", r"utlx\.buffer_load: 'offsets' must be a tensor of int32 element offsets"),
    ("other_without_mask", "hip:gfx942", r"utlx\.buffer_load: 'other' needs a 'mask'"),
    ("remat_both", "hip:gfx942", r"utlx\.local_load: 'rematerialize_coordinates' and .* exclude each other"),
])
def test_errors_name_op_and_target(op, target, message):
    with pytest.raises(CompilationError, match=message):
        _compile_op(op, target)


def test_buffer_ops_are_amd_only():
    with pytest.raises(CompilationError, match=r"utlx\.buffer_load: is an AMD-only op \[target cuda:90\]. use "
                                               r"tl\.load\(ptr \+ offsets"):
        compile_kernel(_buffer_copy, {"x_ptr": "*fp32", "y_ptr": "*fp32", "N": "i32"}, {"BLOCK": 64})


def test_prefetch_on_nvidia_is_a_predicated_ptx_prefetch_and_nothing_on_amd():
    ptx = _compile_op("prefetch", "cuda:90").asm["ptx"]
    assert re.search(r"@p prefetch\.global\.L2 \[", ptx)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtlxPerformanceWarning)
        asm = _compile_op("prefetch", "hip:gfx950").asm["amdgcn"]
    assert "prefetch" not in asm.split(".end_amdgpu_metadata")[0].split("amdhsa.kernels")[0]
    assert any("utlx.prefetch: gfx9 GPUs have no prefetch instruction" in str(w.message) for w in caught)


def test_fence_mbarrier_init_cluster_on_hopper():
    assert "fence.mbarrier_init.release.cluster" in _compile_op("fence_cluster", "cuda:90").asm["ptx"]


@triton.jit
def _arrive_if(flag):
    bars = tlx.alloc_barriers(1, arrive_count=1)
    tlx.barrier_arrive(bars[0], pred=flag > 0)


def test_barrier_arrive_pred_is_the_arrive_predicate():
    ptx = compile_kernel(_arrive_if, {"flag": "i32"}, {}).asm["ptx"]
    assert re.search(r"@%p\d+ mbarrier\.arrive", ptx), "the arrive is not predicated"


def test_strict_mode_turns_a_downgrade_into_an_error(monkeypatch):
    monkeypatch.setattr(downgrade, "STRICT", True)
    with pytest.raises(UtlxCompileError, match=r"utlx\.async_load: staged .* UTLX_STRICT_AMD=1 forbids the fallback "
                                               r"\[target hip:gfx942\]"):
        downgrade.downgrade("async_load", "staged through registers", target="hip:gfx942")
    monkeypatch.setattr(downgrade, "STRICT", False)
    with pytest.warns(UtlxPerformanceWarning,
                      match=r"utlx\.async_load: staged through registers \[target hip:gfx942\]"):
        downgrade.downgrade("async_load", "staged through registers", target="hip:gfx942")


@triton.jit
def _tuple_of_buffers(x_ptr, N: tl.constexpr):
    bufs = tl.tuple([tlx.local_alloc((64,), tl.float32, 1) for _ in range(N)])
    offs = tl.arange(0, 64)
    tlx.local_store(bufs[N - 1][0], tl.load(x_ptr + offs))
    tl.store(x_ptr + offs, tlx.local_load(bufs[N - 1][0]) + 1)


def test_list_comprehension_over_a_constexpr_range():
    """Meta's fork accepts ``[f(i) for i in range(N)]`` in @jit code (matmul_kernel_persistent.py); so does utlx."""
    ttgir = compile_kernel(_tuple_of_buffers, {"x_ptr": "*fp32"}, {"N": 3}, target="hip:gfx942").asm["ttgir"]
    assert ttgir.count("ttg.local_alloc") >= 1 and "ttg.local_load" in ttgir


@triton.jit
def _add_one(x_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < N) + 1, mask=offs < N)


_add_one_nv = triton.jit(_add_one.fn)


def test_fork_hip_options_are_accepted_on_amd_launches():
    """The AMD tutorials pass LLVM scheduling options of the fork's HIPOptions; on stock they are dropped."""
    torch = pytest.importorskip("torch")  # the launch takes a tensor (the smoke envs have no torch)
    from compile_only_gpu import compile_only_gpu
    from triton.backends.compiler import GPUTarget

    x = torch.zeros(64)
    with compile_only_gpu(GPUTarget("hip", "gfx950", 64)) as gpu:
        _add_one[(1,)](x, 64, BLOCK=64, reverse_local_assignment=True, sink_insts_to_avoid_spills=True,
                       enable_sched_group_barrier_scheduler=True, sched_group_barrier_mfma_per_dwordx4=2)
        with pytest.raises(TypeError, match="reverse_local_assignment=1 must be bool"):
            _add_one[(1,)](x, 64, BLOCK=64, reverse_local_assignment=1)
    assert [launch.name for launch in gpu.launches] == ["_add_one"]
    # NVIDIA: stock's error (another kernel object: a JITFunction keeps its target per device index, which both
    # stand-ins share)
    with compile_only_gpu(), pytest.raises(KeyError, match="reverse_local_assignment"):
        _add_one_nv[(1,)](x, 64, BLOCK=64, reverse_local_assignment=True)


@triton.jit
def _carried_operands(a_ptr, b_ptr, c_ptr, K_TILES: tl.constexpr):
    """Tiles read from LDS into loop-carried registers (the AMD tutorials' alternating register sets)."""
    offs = tl.arange(0, 64)
    ptrs = offs[:, None] * 64 + offs[None, :]
    bufs_a = tlx.local_alloc((64, 64), tl.float16, 2)
    bufs_b = tlx.local_alloc((64, 64), tl.float16, 2)
    for i in tl.static_range(2):
        tlx.local_store(bufs_a[i], tl.load(a_ptr + i * 4096 + ptrs))
        tlx.local_store(bufs_b[i], tl.load(b_ptr + i * 4096 + ptrs))
    a = tlx.local_load(bufs_a[0])
    b = tlx.local_load(bufs_b[0])
    acc = tl.zeros((64, 64), dtype=tl.float32)
    for k in range(1, K_TILES):
        acc = tl.dot(a, b, acc)
        a = tlx.local_load(bufs_a[k % 2])
        b = tlx.local_load(bufs_b[k % 2])
    acc = tl.dot(a, b, acc)
    tl.store(c_ptr + ptrs, acc)


def _operand_round_trips(ttgir: str) -> int:
    """``ttg.local_alloc`` of a register tensor whose only reader is a ``local_load`` into an MFMA operand."""
    allocs = set(re.findall(r"(%\S+) = ttg\.local_alloc %", ttgir))
    return sum(1 for m in re.finditer(r"ttg\.local_load (%[^\s:]+) .*-> tensor<[^\n]*#ttg\.dot_op", ttgir)
               if m.group(1) in allocs)


def test_mfma_operands_of_tlx_kernels_are_converted_without_lds_buffers(monkeypatch):
    """reduce-data-duplication routes each operand conversion through an LDS buffer of its own; in TLX kernels
    utlx turns them back into conversions (amd_passes.dot_operand_conversions_pass)."""
    from utlx.compiler.amd import passes as amd_passes

    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
    kernel = compile_kernel(_carried_operands, sig, {"K_TILES": 4}, target="hip:gfx950")
    ttgir = kernel.asm["ttgir"]
    assert "#ttg.dot_op" in ttgir and _operand_round_trips(ttgir) == 0, ttgir
    assert re.search(r"ttg\.convert_layout [^\n]*-> tensor<[^\n]*#ttg\.dot_op", ttgir), ttgir
    # with the pass switched off (another K_TILES: another cache entry), the buffers are there (in the fork's
    # v7_slice they take the LDS that makes it overflow gfx950's 160 KiB; the corpus test covers that)
    monkeypatch.setattr(amd_passes, "is_amd_tlx_module", lambda module: False)
    stock = compile_kernel(_carried_operands, sig, {"K_TILES": 5}, target="hip:gfx950")
    assert _operand_round_trips(stock.asm["ttgir"]) > 0
