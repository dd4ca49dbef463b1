"""How Triton would vectorise each AMD copy of a TLX kernel: measured with Triton's own analysis, on a clone.

Why: AMD buffer loads/stores and direct-to-LDS copies are only as wide as the register layout of their
offsets allows (one element per thread in the layout the TTIR -> TTGIR conversion gives them: ``v1``'s
128 ``buffer_load_ushort``), and a direct-to-LDS copy must move 4 or 16 bytes per lane from consecutive
addresses of a buffer laid out in the same order as global memory. Which width and order are legal depends
on Triton's axis analysis of the pointers (contiguity, divisibility, the mask's constancy): information with
no Python binding. Triton's ``tritongpu-coalesce`` pass turns exactly that analysis into a blocked layout for
every ``tt.load``. So, for each AMD copy placeholder:

1. clone the module (text round trip) and, right after each copy placeholder, add a masked ``tt.load`` of
   the pointers it addresses (``async_load``: its pointer tensor; buffer ops: ``splat(base) + offsets``),
   tagged with a string attribute naming the placeholder, and a store that keeps it alive;
2. run ``tritongpu-coalesce`` on the clone;
3. read back each tagged load's pointer layout: ``sizePerThread`` along the fastest dimension is the vector
   width, ``order`` the order of global memory.

The lowering then builds each copy in that layout, and gives buffers written by direct-to-LDS copies a
shared layout in that order. The clone is thrown away.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from utlx import compat
from utlx.compiler.common import placeholders as placeholder
from utlx.compiler.common.clone import clone
from utlx.compiler.common.placeholders import Placeholder, dtype_of_name

#: The AMD copy placeholders whose register layout the probe measures.
PROBED_OPS = ("async_load", "buffer_load_to_local", "buffer_load", "buffer_store", "buffer_atomic_add")
PROBE_ATTR = "utlx.probe"


@dataclass(frozen=True)
class CopyLayout:
    """What coalescing chose for one copy: the Gluon blocked layout, and its fastest-first order."""

    layout: Any  # ttgl.BlockedLayout
    order: tuple[int, ...]
    vector: int  # elements per thread along order[0]


def pointer_operands(ph: Placeholder) -> tuple[Any | None, Any | None, Any | None]:
    """(scalar base, offsets, mask) of a buffer-op placeholder, or (None, pointer tensor, mask) of an
    ``async_load`` placeholder (operand positions: ``utlx.compiler.amd.ops`` and ``ops.async_load``)."""
    a = ph.attrs
    if ph.name == "async_load":
        return None, ph.tensors[0], ph.tensors[1] if a.get("mask") else None
    if ph.name == "buffer_load_to_local":
        return ph.handles[1], ph.tensors[0], ph.tensors[1] if a.get("mask") else None
    if ph.name == "buffer_load":
        return ph.handles[0], ph.tensors[0], ph.tensors[1] if a.get("mask") else None
    # buffer_store / buffer_atomic_add: (value, offsets, mask?)
    return ph.handles[0], ph.tensors[1], ph.tensors[2] if a.get("mask") else None


def pointer_tensor(gb: Any, base: Any, offsets: Any, elem: Any, shape: list[int]) -> Any:
    """``splat(base) + offsets`` in the offsets' layout."""
    import triton.language as tl

    from utlx.compiler.common import layouts

    layout = gb.get_gluon_layout_from_tensor(offsets)
    ty = layouts.distributed_type(tl.pointer_type(elem), shape, layout).to_ir(gb)
    return gb.create_addptr(gb.create_splat(ty, base), offsets)


#: Placeholders whose result is their first operand's value (``assume_uniform``: the scalar handle;
#: ``require_layout``: the tensor). Still opaque inline asm in the clone, so the probe looks through them.
PASS_THROUGH = ("assume_uniform", "require_layout")


def _through(value: Any, passing: dict[int, Any]) -> Any:
    while value is not None and value.id() in passing:
        value = passing[value.id()]
    return value


def _add_probe(gb: Any, ph: Placeholder, index: int, passing: dict[int, Any]) -> None:

    base, offsets, mask = (_through(v, passing) for v in pointer_operands(ph))
    ptr = offsets if base is None else pointer_tensor(gb, base, offsets, dtype_of_name(ph.attrs["dtype"]),
                                                      list(ph.attrs["shape"]))
    loaded = compat.create_global_load(gb, ptr, mask, None)
    loaded.set_attr(PROBE_ATTR, gb.get_string_attr(str(index)))
    compat.create_global_store(gb, ptr, loaded, mask)


def probe(module: Any, found: list[Placeholder]) -> dict[int, CopyLayout]:
    """``{index of the copy among the PROBED_OPS placeholders of found (program order): CopyLayout}``."""
    from triton._C.libtriton import ir, passes

    copies = [ph for ph in found if ph.name in PROBED_OPS]
    if not copies:
        return {}
    copy = clone(module, str(module))
    cloned = [ph for ph in placeholder.collect(copy) if ph.name in PROBED_OPS]
    if [ph.uid for ph in cloned] != [ph.uid for ph in copies]:  # the text round trip must keep the order
        return {}
    gb = compat.make_gluon_builder(copy.context)
    passing = {ph.result.id(): (ph.handles + ph.tensors)[0] for ph in placeholder.collect(copy)
               if ph.name in PASS_THROUGH}
    for index, ph in enumerate(cloned):
        gb.set_insertion_point_after(ph.op)
        _add_probe(gb, ph, index, passing)
    pm = ir.pass_manager(copy.context)
    passes.ttgpuir.add_coalesce(pm)
    compat.run_passes(pm, copy, "utlx-amd-copy-probe")
    out: dict[int, CopyLayout] = {}

    def visit(op: Any) -> None:
        if op.get_name() != "tt.load":
            return
        tag = op.get_str_attr(PROBE_ATTR)
        if not tag:
            return
        layout = gb.get_gluon_layout_from_tensor(op.get_operand(0))
        order = tuple(int(d) for d in getattr(layout, "order", ()) or ())
        spt = list(getattr(layout, "size_per_thread", ()) or ())
        if order and spt:
            out.setdefault(int(tag), CopyLayout(layout, order, int(spt[order[0]])))

    copy.walk(visit)
    return out
