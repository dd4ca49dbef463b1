"""Descriptors in global memory (``allocate_tensor_descriptor`` + ``make_tensor_descriptor(desc_ptr=slots[i])`` +
``reinterpret_tensor_descriptor``) compile for Hopper and Blackwell: each slot is a device-side descriptor of its own.

Checked in the TTGIR (one ``tensormap_create`` into its own 128-byte global scratch region per slot, guarded by the
slot index, so a make writes only slot ``i``), in the kernel's global scratch size (slots never share memory: a TMA
copy in flight keeps reading its descriptor), and in the PTX (the TMA copy through a tensormap written on the
device). What cannot be resolved while compiling is an error naming the op. The interpreter's slots are checked in
``tests/interpreter`` (``test_interp_tlx_ops``).
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel


@triton.jit
def _rotating(a_ptr, out_ptr, M, G, SLOTS: tl.constexpr, STATIC: tl.constexpr):
    """One problem per iteration, its descriptor written into slot g % SLOTS and read back for the TMA copy."""
    slots = tlx.allocate_tensor_descriptor(num=SLOTS)
    bufs = tlx.local_alloc((64, 64), tl.float16, 1)
    bars = tlx.alloc_barriers(1)
    phase = 0
    for g in range(G):
        if STATIC:
            slot = slots[1]
        else:
            slot = slots[g % SLOTS]
        tlx.make_tensor_descriptor(desc_ptr=slot, base=a_ptr + g * 64 * M, shape=[M, 64], strides=[64, 1],
                                   block_shape=[64, 64])
        desc = tlx.reinterpret_tensor_descriptor(desc_ptr=slot, block_shape=[64, 64], dtype=tl.float16)
        tlx.barrier_expect_bytes(bars[0], 64 * 64 * 2)
        tlx.async_descriptor_load(desc, bufs[0], [0, 0], bars[0])
        tlx.barrier_wait(bars[0], phase)
        phase ^= 1
        offs = tl.arange(0, 64)
        tl.store(out_ptr + g * 4096 + offs[:, None] * 64 + offs[None, :], tlx.local_load(bufs[0]))


SIG = {"a_ptr": "*fp16", "out_ptr": "*fp16", "M": "i32", "G": "i32"}


@pytest.mark.parametrize("target", ["cuda:90", "cuda:100"])
@pytest.mark.parametrize("slots", [1, 3])
def test_each_slot_is_a_descriptor_of_its_own_written_only_when_selected(target, slots):
    k = compile_kernel(_rotating, SIG, {"SLOTS": slots, "STATIC": False}, target)
    ttgir, ptx = k.asm["ttgir"], k.asm["ptx"]
    assert ttgir.count("ttng.tensormap_create") == slots and ttgir.count("ttg.global_scratch_alloc") == slots
    # the slot index picks which one runs (slots - 1 nested ifs yielding the descriptor)
    assert len(re.findall(r"scf\.if %\S+ -> \(!tt\.tensordesc<(?:tensor<)?64x64xf16", ttgir)) == slots - 1
    # distinct memory per slot: writing slot i never touches a descriptor another copy still reads
    assert k.metadata.global_scratch_size == 128 * slots
    assert re.search(r"tensormap\.cp_fenceproxy\.global\.shared::cta\.tensormap::generic\.release", ptx)
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global", ptx)


def test_a_compile_time_slot_is_one_descriptor():
    k = compile_kernel(_rotating, SIG, {"SLOTS": 3, "STATIC": True}, "cuda:100")
    assert k.asm["ttgir"].count("ttng.tensormap_create") == 1 and "scf.if" not in k.asm["ttgir"]


@triton.jit
def _misuse(a_ptr, M, WHICH: tl.constexpr):
    slots = tlx.allocate_tensor_descriptor(num=2)
    i = tl.program_id(0) % 2
    if WHICH == "unwritten":
        tlx.reinterpret_tensor_descriptor(slots[0], [64, 64], tl.float16)
    elif WHICH == "other_index":
        tlx.make_tensor_descriptor(slots[i], a_ptr, [M, 64], [64, 1], [64, 64])
        j = tl.program_id(0) % 2
        tlx.reinterpret_tensor_descriptor(slots[j], [64, 64], tl.float16)
    elif WHICH == "block_shape":
        tlx.make_tensor_descriptor(slots[1], a_ptr, [M, 64], [64, 1], [64, 64])
        tlx.reinterpret_tensor_descriptor(slots[1], [32, 64], tl.float16)
    elif WHICH == "scope":  # made in each iteration of a loop, read after it
        for _ in range(M):
            tlx.make_tensor_descriptor(slots[1], a_ptr, [M, 64], [64, 1], [64, 64])
        tlx.reinterpret_tensor_descriptor(slots[1], [64, 64], tl.float16)
    elif WHICH == "range":
        tlx.make_tensor_descriptor(slots[2], a_ptr, [M, 64], [64, 1], [64, 64])


@pytest.mark.parametrize(("which", "op", "message"), [
    ("unwritten", "reinterpret_tensor_descriptor", "reads slot 0 of a tlx.allocate_tensor_descriptor, but no"),
    ("other_index", "reinterpret_tensor_descriptor", "reads this slot (its index value)"),
    ("block_shape", "reinterpret_tensor_descriptor", "block_shape [32, 64] / dtype fp16 differ from the descriptor"),
    ("scope", "reinterpret_tensor_descriptor", "comes before it in an enclosing scope"),
    ("range", "allocate_tensor_descriptor slots[i]", "slot 2 is out of range for 2 descriptor slots"),
])
def test_what_cannot_be_resolved_while_compiling_names_the_op(which, op, message):
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(_misuse, {"a_ptr": "*fp16", "M": "i32"}, {"WHICH": which}, "cuda:100")
    text = str(info.value)
    assert f"utlx.{op}:" in text and message in text, text


def test_amd_has_no_tma_descriptors():
    with pytest.raises(triton.compiler.errors.CompilationError) as info:
        compile_kernel(_rotating, SIG, {"SLOTS": 2, "STATIC": False}, "hip:gfx942")
    assert "utlx.allocate_tensor_descriptor:" in str(info.value), str(info.value)
