"""Descriptors in global memory (``allocate_tensor_descriptor``, ``make_tensor_descriptor(desc_ptr=slots[i])``,
``reinterpret_tensor_descriptor``) on stock Triton: one device-side descriptor per slot, read back at compile time.

Why: TLX kernels that switch problems on the device (Meta's grouped GEMM) build TMA descriptors into ``num``
128-byte slots of global scratch and later turn a slot back into a descriptor. The slots are multi-buffered on
purpose: a TMA copy still in flight reads its descriptor from memory, so the next problem's descriptor must go
to another slot. Stock Triton has neither a Python builder for a scratch allocation of a given size, nor one for
``ttng.tensormap_create`` into a given address or ``ttng.reinterpret_tensor_descriptor`` from one; it does have
``tt.make_tensor_descriptor``, which writes a descriptor into 128 bytes of global scratch of its own (one region
per op, per program; ``triton.set_allocator``) and yields it.

How: slot ``k`` of an ``allocate_tensor_descriptor`` is the scratch of a ``tt.make_tensor_descriptor`` made for
``k``. ``make_tensor_descriptor(desc_ptr=slots[i], ...)`` emits one such op per slot, guarded so that only the one
for ``i`` runs (``scf.if`` on ``i``; just the one op when ``i`` is a compile-time int), so a make writes only the
memory of slot ``i`` and descriptors still read from the other slots stay intact, as in TLX. A write to slot
``k`` never reuses the memory of another slot, so no copy in flight can see its descriptor change earlier than
in TLX. ``reinterpret_tensor_descriptor(slots[i], ...)`` then returns the descriptor that the last make into
``slots[i]`` (the same slot array, the same index value or constant) yielded, which reads exactly the memory that
make wrote. What cannot be resolved while tracing is a compile error naming the op: reading a slot no make in
scope wrote (another index expression, a make in a loop that does not enclose the read, a slot passed through a
function call), or with another block shape or element type than the make's. One case is left to Triton's IR
verifier: a make inside an ``if`` read after the ``if`` (the code generator traces an ``if`` body in a block of the
enclosing region, so the scope check cannot see it; the verifier then says the descriptor does not dominate
its use).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import triton.language as tl

from utlx.compiler.common import values
from utlx.compiler.common.args import _c, _show
from utlx.compiler.common.errors import UtlxCompileError
from utlx.language import types as tlx_types
from utlx.language._dispatch import register_compiler_impl

from .targets import NVIDIA

#: Bytes of one TMA descriptor (a CUtensorMap), the stride of TLX's descriptor pointer.
DESCRIPTOR_BYTES = 128

_IDS = itertools.count()


@dataclass
class _Written:
    """The descriptor the last make into a slot yielded, and the region it was made in (for the scope check)."""

    desc: Any
    region: Any


#: (slot array uid, index key) -> what the last make into that slot yielded (uids are unique per process).
_WRITTEN: dict[tuple[int, tuple], _Written] = {}


class _SlotsType(values.HandleType):
    """Type of a :class:`DescriptorSlots`: its number of slots and which allocation it is (Triton 3.6's code
    generator rebuilds the values a loop uses from their types)."""

    def __init__(self, num: int, uid: int) -> None:
        super().__init__("desc_slots", num=num)
        self.uid = uid

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _SlotsType) and (self.num, self.uid) == (other.num, other.uid)

    def __hash__(self) -> int:
        return hash(("desc_slots", self.num, self.uid))

    def mangle(self) -> str:
        return f"Udesc_slots{self.num}u{self.uid}"

    def _unflatten_ir(self, handles: list, cursor: int):
        return DescriptorSlots(handles[cursor], self), cursor + 1


class DescriptorSlots(values.Handle):
    """``allocate_tensor_descriptor(num)``: ``num`` descriptor slots; ``slots[i]`` or ``slots + i`` is slot ``i``."""

    @property
    def uid(self) -> int:
        return self.type.uid

    def __getitem__(self, idx: Any, _semantic: Any = None) -> DescriptorSlot:
        return _slot_of(self, idx, "allocate_tensor_descriptor slots[i]")

    def __add__(self, idx: Any, _semantic: Any = None) -> DescriptorSlot:
        return _slot_of(self, idx, "allocate_tensor_descriptor slots + i")


class DescriptorSlot(values.Handle):
    """Slot ``index`` of a :class:`DescriptorSlots` (``index``: an int, or an int32 scalar known at run time)."""

    slots: DescriptorSlots
    index: Any


tlx_types.register_value_class(tlx_types.tensor_descriptor_ptr, DescriptorSlots)
tlx_types.register_value_class(tlx_types.tensor_descriptor_ptr, DescriptorSlot)


def _slot_of(slots: DescriptorSlots, idx: Any, op: str) -> DescriptorSlot:
    i = _c(idx)
    if isinstance(i, bool) or not (isinstance(i, int) or (isinstance(i, tl.tensor) and i.dtype.is_int()
                                                          and not i.type.is_block())):
        raise UtlxCompileError(op, f"a descriptor slot index must be an int or an integer scalar, got {_show(idx)}")
    if isinstance(i, int) and not 0 <= i < slots.type.num:
        raise UtlxCompileError(op, f"slot {i} is out of range for {slots.type.num} descriptor slots")
    slot = DescriptorSlot(slots.handle, values.HandleType("desc_slot", num=slots.type.num))
    slot.slots, slot.index = slots, i
    return slot


def _key(index: Any) -> tuple:
    return ("const", index) if isinstance(index, int) else ("value", index.handle.id())


def _as_slot(op: str, desc_ptr: Any) -> DescriptorSlot:
    ptr = _c(desc_ptr)
    if isinstance(ptr, DescriptorSlots):
        return _slot_of(ptr, 0, op)
    if not isinstance(ptr, DescriptorSlot):
        raise UtlxCompileError(op, f"'desc_ptr' must be a slot of tlx.allocate_tensor_descriptor (slots[i]), got "
                               f"{_show(ptr)}")
    return ptr


def _region(_semantic: Any) -> Any:
    return _semantic.builder.get_insertion_block().get_parent()


def _encloses(outer: Any, inner: Any) -> bool:
    """Is region ``outer`` ``inner`` or one of its ancestors? (The code generator's first pass over a ``while``
    body, which it throws away, runs in an extra block of the enclosing region: the same answer.)"""
    region = inner
    while region is not None:
        if region.id() == outer.id():
            return True
        region = region.get_parent_region()
    return False


@register_compiler_impl("allocate_tensor_descriptor", *NVIDIA)
def allocate_tensor_descriptor(_semantic: Any, num: Any) -> DescriptorSlots:
    """``num`` slots for device-side descriptors (see the module doc: each is a ``tt.make_tensor_descriptor``'s
    scratch, made where a descriptor is written into it)."""
    op = "allocate_tensor_descriptor"
    n = _c(num)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise UtlxCompileError(op, f"'num' must be a compile-time int >= 1, got {_show(n)}")
    return DescriptorSlots(_semantic.builder.get_int32(0), _SlotsType(n, next(_IDS)))


def make_into_slot(_semantic: Any, desc_ptr: Any, make: Any) -> Any:
    """``make_tensor_descriptor(desc_ptr=slots[i], ...)``: ``make()`` (a ``tt.make_tensor_descriptor``) once per
    slot, only slot ``i``'s running; returns the descriptor of slot ``i`` and remembers it for reinterpret."""
    op = "make_tensor_descriptor"
    slot = _as_slot(op, desc_ptr)
    if isinstance(slot.index, int):
        desc = make()
    else:
        desc = _build_chain(_semantic, slot.index, slot.slots.type.num, make)
    _WRITTEN[(slot.slots.uid, _key(slot.index))] = _Written(desc, _region(_semantic))
    return desc


def _build_chain(_semantic: Any, index: Any, num: int, make: Any) -> Any:
    """``if i == 0: make() elif i == 1: make() ... else: make()``, each a descriptor op of its own (its slot)."""
    b = _semantic.builder
    if num == 1:
        return make()
    here = b.get_insertion_point()
    probe_block = b.create_block()  # (Triton's create_block also moves the insertion point into it)
    b.set_insertion_point_to_start(probe_block)
    probe = make()  # only for its flattened types; the block is thrown away
    b.restore_insertion_point(here)
    types: list[Any] = []
    probe.type._flatten_ir_types(b, types)
    probe_block.erase()
    return _chain(_semantic, index, 0, num, make, types, probe.type)


def _make_slot(_semantic: Any, k: int, make: Any) -> Any:
    """``make()`` for slot ``k`` of a chain. The branches of the chain would be identical ops, which MLIR merges
    into one block once the ``scf.if``s become branches (one scratch region for every slot): an opaque marker
    naming the slot keeps each branch its own."""
    b = _semantic.builder
    b.create_inline_asm(f"mov.u32 $0, {k}; // utlx-descriptor-slot {k}", "=r", [], [b.get_int32_ty()], False, 1)
    return make()


def _chain(_semantic: Any, index: Any, k: int, num: int, make: Any, types: list[Any], desc_type: Any) -> Any:
    b = _semantic.builder
    if k == num - 1:
        return _make_slot(_semantic, k, make)
    cond = _semantic.equal(index, _semantic.to_tensor(k))
    if_op = b.create_if_op(types, cond.handle, True)
    here = b.get_insertion_point()
    for block, branch in ((if_op.get_then_block(), lambda: _make_slot(_semantic, k, make)),
                          (if_op.get_else_block(), lambda: _chain(_semantic, index, k + 1, num, make, types,
                                                                  desc_type))):
        b.set_insertion_point_to_start(block)
        handles: list[Any] = []
        branch()._flatten_ir(handles)
        b.create_yield_op(handles)
    b.restore_insertion_point(here)
    results = [if_op.get_result(i) for i in range(len(types))]
    desc, _ = desc_type._unflatten_ir(results, 0)
    return desc


@register_compiler_impl("reinterpret_tensor_descriptor", *NVIDIA)
def reinterpret_tensor_descriptor(_semantic: Any, desc_ptr: Any, block_shape: Any, dtype: Any) -> Any:
    """The descriptor the last ``make_tensor_descriptor`` into ``desc_ptr`` wrote (see the module doc)."""
    op = "reinterpret_tensor_descriptor"
    slot = _as_slot(op, desc_ptr)
    written = _WRITTEN.get((slot.slots.uid, _key(slot.index)))
    where = f"slot {slot.index}" if isinstance(slot.index, int) else "this slot (its index value)"
    if written is None or not _encloses(written.region, _region(_semantic)):
        raise UtlxCompileError(op, f"reads {where} of a tlx.allocate_tensor_descriptor, but no "
                               f"tlx.make_tensor_descriptor into the same slot (the same slot array and the same "
                               f"index value) comes before it in an enclosing scope; stock Triton cannot read a "
                               f"descriptor back from memory, so utlx resolves the read while compiling",
                               hint="index both calls with the same variable, and make the descriptor in the block "
                               "that contains the reinterpret (or outside it)")
    desc = written.desc
    shape = [int(s) for s in _c(block_shape)]
    want = _c(dtype)
    if list(desc.block_shape) != shape or desc.dtype != want:
        raise UtlxCompileError(op, f"block_shape {shape} / dtype {want} differ from the descriptor made into "
                               f"{where} ({list(desc.block_shape)} / {desc.dtype})")
    return desc
