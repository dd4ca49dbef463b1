"""fp32 global-memory traffic straight from (and into) a wgmma accumulator's registers.

Why: ``tl.store`` / ``tl.atomic_add`` / ``tl.load`` of a tensor in the wgmma accumulator layout first
convert it to a coalesced layout through shared-memory scratch (32 KB for a 64x128 fp32 tile, 128 KB for a
128x256 one), which kernels whose TMA rings already fill shared memory do not have. Each thread of a wgmma
accumulator holds pairs of adjacent columns, so ``tl.inline_asm_elementwise(..., pack=2)`` reaches every
pair with one 8-byte instruction and no conversion. Inline PTX does not run under ``TRITON_INTERPRET=1``:
with ``REGS`` False these fall back to the plain Triton ops (the launchers pass ``not interpreting``).
The pointer tensors are passed as int64 addresses (``inline_asm_elementwise`` refuses to mix pointers with
floats); pairs must start at an even, 8-byte-aligned column, as accumulator pairs do.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def store_pairs(ptrs, acc, REGS: tl.constexpr):
    """``*ptrs = acc`` (fp32), as ``st.global.v2.f32`` per column pair when ``REGS``."""
    if REGS:
        tl.inline_asm_elementwise("st.global.v2.f32 [$2], {$4, $5};\n\tmov.b32 $0, 0;\n\tmov.b32 $1, 0;",
                                  "=r,=r,l,l,f,f", [ptrs.to(tl.int64), acc], dtype=tl.int32, is_pure=False, pack=2)
    else:
        tl.store(ptrs, acc)


@triton.jit
def add_pairs(ptrs, acc, mask, REGS: tl.constexpr):
    """``*ptrs += acc`` (fp32, relaxed, GPU scope), as ``red...add.v2.f32`` per column pair when ``REGS``
    (then ``mask`` must be None)."""
    if REGS:
        tl.static_assert(mask is None, "add_pairs: REGS takes no mask")
        tl.inline_asm_elementwise("red.relaxed.gpu.global.add.v2.f32 [$2], {$4, $5};\n\tmov.b32 $0, 0;\n\t"
                                  "mov.b32 $1, 0;", "=r,=r,l,l,f,f", [ptrs.to(tl.int64), acc], dtype=tl.int32,
                                  is_pure=False, pack=2)
    else:
        tl.atomic_add(ptrs, acc, mask=mask, sem="relaxed", scope="gpu")


@triton.jit
def load_pairs_cg(ptrs, like, mask, REGS: tl.constexpr):
    """``*ptrs`` (fp32, from L2: ``.cg``). With ``REGS`` (``mask`` None) the loads land in the registers of
    ``like`` (tied operands), so the result keeps the accumulator's layout; ``like``'s values are dropped."""
    if REGS:
        tl.static_assert(mask is None, "load_pairs_cg: REGS takes no mask")
        return tl.inline_asm_elementwise("ld.global.cg.v2.f32 {$0, $1}, [$2];", "=f,=f,l,l,0,1",
                                         [ptrs.to(tl.int64), like], dtype=tl.float32, is_pure=False, pack=2)
    else:
        return tl.load(ptrs, mask=mask, cache_modifier=".cg")
