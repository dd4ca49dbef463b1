"""Layout choices for the TTGIR ops utlx creates.

Why a module: TLX leaves shared-memory layouts implicit, so the lowering must pick them from how a
buffer is used. Buffers read by wgmma need an NVMMA (swizzled, descriptor-addressable) layout; buffers
feeding ``tl.dot`` through ``local_load`` get a swizzled layout that avoids bank conflicts; anything
else gets the plain unswizzled layout that every op accepts.
"""

from __future__ import annotations

from typing import Any

from .placeholder import Placeholder

#: Placeholders whose result is a view of their first handle's buffer (same bytes, same allocation).
VIEW_OPS = ("local_view", "local_slice", "local_trans", "local_reinterpret")


def infer_alloc_roles(found: list[Placeholder]) -> dict[int, str]:
    """``{alloc uid: role}``: ``mma`` when a view of the buffer is a wgmma operand, ``dot`` when it is
    read with ``local_load`` (register-staged dot operand), ``tma`` when TMA writes it, else ``""``."""
    root: dict[int, int] = {}  # placeholder result id -> alloc uid
    roles: dict[int, str] = {}
    for ph in found:
        rid = ph.result.id()
        if ph.name in ("local_alloc", "alloc_barriers"):
            root[rid] = ph.uid
            roles.setdefault(ph.uid, "")
            continue
        if ph.name in VIEW_OPS and ph.handles:
            src = root.get(ph.handles[0].id())
            if src is not None:
                root[rid] = src
            continue
        uses: list[tuple[int, str]] = []
        if ph.name == "async_dot":
            n_ops = 1 if ph.attrs.get("a_reg") else 2
            uses = [(h.id(), "mma") for h in ph.handles[:n_ops]]
        elif ph.name == "local_load" and ph.handles:
            uses = [(ph.handles[0].id(), "dot")]
        elif ph.name in ("async_descriptor_load", "async_descriptor_store") and ph.handles:
            uses = [(ph.handles[0].id(), "tma")]
        for hid, role in uses:
            src = root.get(hid)
            if src is None:
                continue
            # wgmma/TMA need NVMMA layouts; they win over the register-path preference.
            if roles.get(src) in ("mma", "tma"):
                continue
            roles[src] = role
    return roles


def _nvmma_swizzle(shape: list[int], bits: int) -> int:
    row_bytes = shape[-1] * bits // 8
    for sw in (128, 64, 32):
        if row_bytes % sw == 0:
            return sw
    return 0


def shared_layout(role: str, shape: list[int], dtype: Any, target: str) -> Any:
    """The shared-memory layout for a buffer of ``shape`` x ``dtype`` used as ``role``."""
    from triton.experimental.gluon import language as ttgl

    bits = dtype.primitive_bitwidth
    rank = len(shape)
    if role in ("mma", "tma") and rank >= 2:
        return ttgl.NVMMASharedLayout(swizzle_byte_width=_nvmma_swizzle(shape, bits), element_bitwidth=bits,
                                      rank=rank)
    order = list(range(rank - 1, -1, -1))
    if role == "dot" and rank == 2 and target.startswith("hip"):
        # Bank-conflict-free reads of MFMA operands: 8 x 16-bit per vector, phase over one 128-byte row.
        vec = max(1, 128 // bits)
        inner = shape[-1]
        per_phase = max(1, (128 * 8 // bits) // max(1, inner))
        max_phase = max(1, min(16, inner // vec))
        return ttgl.SwizzledSharedLayout(vec=vec, per_phase=per_phase, max_phase=max_phase, order=order)
    if role == "dot" and rank == 2 and target.startswith("cuda"):
        return ttgl.NVMMASharedLayout(swizzle_byte_width=_nvmma_swizzle(shape, bits), element_bitwidth=bits,
                                      rank=rank)
    return ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=order)


def memdesc_type(dtype: Any, shape: list[int], layout: Any, alloc_shape: list[int]) -> Any:
    """Gluon's shared-memory descriptor type (``!ttg.memdesc``), mutable, in shared memory."""
    from triton.experimental.gluon import language as ttgl

    return ttgl.shared_memory_descriptor_type(dtype, list(shape), layout, list(alloc_shape))


def distributed_type(dtype: Any, shape: list[int], layout: Any) -> Any:
    """A register tensor type with an explicit layout."""
    from triton.experimental.gluon import language as ttgl

    return ttgl.distributed_type(dtype, list(shape), layout)


def dot_operand_layout(index: int, parent: Any, k_width: int) -> Any:
    """``#ttg.dot_op`` layout of operand ``index`` of an MMA with layout ``parent``."""
    from triton.experimental.gluon import language as ttgl

    return ttgl.DotOperandLayout(operand_index=index, parent=parent, k_width=k_width)
