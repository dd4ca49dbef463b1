"""``storage_alias_spec`` over tensor memory: allocations that share TMEM columns as a reuse tree says.

TLX lets several ``local_alloc(..., tlx.storage_kind.tmem, reuse=spec)`` share one region and declares, after the
allocations, how (``spec.set_buffer_overlap(tlx.reuse_group(...))``): the members of a ``shared`` group occupy the
same columns at each buffer index, those of a ``distinct`` group sit side by side, and ``group_size=g`` makes g
consecutive buffers of a member one logical buffer. Flash attention keeps S, then P and the softmax statistics,
in the same columns this way.

How it compiles: the tree fixes a placement, computed once per module before the lowerings (:func:`plan`):
logical buffer ``i`` of the region is a *slot* of ``slot_cols`` 32-bit columns, and buffer ``j`` of a member
starts at column ``(j // g) * slot_cols + offset + (j % g) * cols``. The spec becomes one ``ttng.tmem_alloc``
of ``rows x (slots * slot_cols)`` fp32 columns; a member's buffer is a view of it (``memdesc_reinterpret`` to
the member's element type, then a column ``tmem_subslice``, or for a run-time index a ``[slots, rows, slot]``
reinterpret indexed by it). Shared memory specs are not compiled yet (an error says so).

Block-scales members (uint8/int8) are the exception: stock Triton 3.8/3.9 can neither slice TMEM's scales layout,
reinterpret a subview as it, nor index it, so they cannot be views of the region. They get TMEM of their own
(:func:`is_own`, one allocation per buffer, no region columns). That is equivalent as long as the kernel passes no
data between a scales member and another member through the shared columns (a spec then only saves capacity, as in
Meta's mxfp8 attention); what it costs in columns is checked against the 512 (:func:`_check_capacity`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import triton.language as tl

from utlx.compiler.common import placeholders, values
from utlx.compiler.common.args import _c, _show
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.lowering import Lowering, register_lowering
from utlx.compiler.common.placeholders import Placeholder, dtype_of_name
from utlx.compiler.common.target import from_semantic
from utlx.language import types as tlx_types
from utlx.language._dispatch import dispatch, register_compiler_impl

from ..targets import BLACKWELL, TMEM_COLUMNS
from . import gluon


class AliasSpec(values.Handle):
    """What ``storage_alias_spec(...)`` returns while tracing (a TLX ``storage_alias_spec``)."""

    @tl.core.builtin
    def set_buffer_overlap(self, overlap_def: Any, _semantic: Any = None) -> None:
        return dispatch("set_buffer_overlap", _semantic, spec=self, overlap_def=overlap_def)


values.HANDLE_CLASSES["alias_spec"] = AliasSpec
tlx_types.register_value_class(tlx_types.storage_alias_spec, AliasSpec)


@register_compiler_impl("storage_alias_spec", *BLACKWELL)
def storage_alias_spec(_semantic: Any, storage: Any = None, buffer_size_bytes: Any = None) -> AliasSpec:
    """A tensor-memory region several allocations share (placed by :meth:`set_buffer_overlap`)."""
    op = "storage_alias_spec"
    target = from_semantic(_semantic)
    gluon.require_support(op, target)
    kind = str(_c(storage) or "smem").split(".")[-1]
    if kind != "tmem":
        raise UtlxCompileError(op, f"a {kind} storage_alias_spec is not compiled by utlx yet (tensor memory is)",
                               target=target.name, hint="allocate the shared-memory buffers separately")
    size = _c(buffer_size_bytes)
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        raise UtlxCompileError(op, f"'buffer_size_bytes' must be a positive compile-time int, got {_show(size)}")
    h = placeholders.emit(_semantic, "tmem_alias_spec", {"bytes": size})
    return values.make("alias_spec", h, storage="tmem")


def _tree(op: str, node: Any, leaves: list[values.SharedBuffers]) -> dict[str, Any]:
    node = _c(node)
    if isinstance(node, tlx_types.reuse_group):
        return {"type": node.group_type.value, "size": int(node.group_size),
                "members": [_tree(op, m, leaves) for m in node.args]}
    if isinstance(node, values.SharedBuffers) and node.type.storage == "tmem":
        leaves.append(node)
        return {"leaf": len(leaves) - 1}
    raise UtlxCompileError(op, f"reuse_group members must be tensor-memory local_alloc results or reuse_groups, "
                           f"got {_show(node)}")


@register_compiler_impl("set_buffer_overlap", *BLACKWELL)
def set_buffer_overlap(_semantic: Any, spec: Any, overlap_def: Any) -> None:
    """Declare how the allocations of ``spec`` overlap (the reuse tree is placed before the lowerings)."""
    op = "set_buffer_overlap"
    if not isinstance(spec, AliasSpec):
        raise UtlxCompileError(op, f"expected a tlx.storage_alias_spec, got {_show(spec)}")
    if not isinstance(_c(overlap_def), tlx_types.reuse_group):
        raise UtlxCompileError(op, f"expected a tlx.reuse_group, got {_show(overlap_def)}")
    leaves: list[values.SharedBuffers] = []
    tree = _tree(op, overlap_def, leaves)
    placeholders.emit(_semantic, "tmem_alias_overlap", {"tree": tree},
                      handles=[spec.handle, *[leaf.handle for leaf in leaves]])
    return None


# ---------------------------------------------------------------- placement


@dataclass(frozen=True)
class Placement:
    """Where one member of a spec lives: slot size, slot count and its columns inside a slot."""

    slots: int
    slot_cols: int
    offset: int  # 32-bit columns from the start of a slot
    group: int  # consecutive buffers forming one logical buffer
    cols: int  # 32-bit columns of one buffer


def is_own(ph: Placeholder) -> bool:
    """Does this member get TMEM of its own instead of columns of the spec's region? Block-scales (uint8/int8)
    members do: stock Triton cannot view region columns in TMEM's scales layout (see the module doc)."""
    return dtype_of_name(ph.attrs["dtype"]) in (tl.uint8, tl.int8)


def _cols(ph: Placeholder) -> int:
    if is_own(ph):
        return 0  # takes no region columns
    dtype = dtype_of_name(ph.attrs["dtype"])
    return max(1, ph.attrs["shape"][1] * dtype.primitive_bitwidth // 32)


def _measure(node: dict, members: list[Placeholder]) -> tuple[int, int]:
    """(logical buffers, 32-bit columns per logical buffer) of a reuse-tree node."""
    if "leaf" in node:
        ph = members[node["leaf"]]
        return int(ph.attrs["num"]), _cols(ph)
    parts = [_measure(m, members) for m in node["members"]]
    counts = {c for c, _ in parts}
    if len(counts) != 1:
        raise UtlxCompileError("set_buffer_overlap", f"the members of a reuse_group have different buffer counts "
                               f"{sorted(counts)}; a group lines up buffer i of every member")
    count = counts.pop()
    if count % node["size"]:
        raise UtlxCompileError("set_buffer_overlap", f"group_size={node['size']} does not divide the {count} buffers "
                               "of a reuse_group's members")
    widths = [w for _, w in parts]
    width = sum(widths) if node["type"] == "distinct" else max(widths)
    return count // node["size"], width * node["size"]


def _place(node: dict, members: list[Placeholder], offset: int, group: int, out: dict[int, tuple[int, int]]) -> None:
    """Each leaf's (offset in a slot, buffers per logical buffer), walking the tree from ``offset``."""
    if "leaf" in node:
        out[node["leaf"]] = (offset, group)
        return
    inner = group * node["size"]
    for member in node["members"]:
        _place(member, members, offset, inner, out)
        if node["type"] == "distinct":
            offset += _measure(member, members)[1] * node["size"]


def plan(low: Lowering, found: list[Placeholder]) -> None:
    """Place every tensor-memory spec's members (``low.vendor['tmem_alias']``: alloc result id -> Placement)."""
    allocs = {ph.result.id(): ph for ph in found if ph.name == "tmem_alloc"}
    placements: dict[int, Placement] = {}
    sizes: dict[int, tuple[int, int]] = {}
    rows: dict[int, int] = {}
    for ph in found:
        if ph.name != "tmem_alias_overlap":
            continue
        members = []
        for h in ph.handles[1:]:
            member = allocs.get(h.id())
            if member is None or not member.attrs.get("spec") or member.handles[0].id() != ph.handles[0].id():
                raise UtlxCompileError("set_buffer_overlap", f"every member must be allocated with reuse= this spec "
                                       f"({ph.describe()})")
            members.append(member)
        tree = ph.attrs["tree"]
        slots, slot_cols = _measure(tree, members)
        where: dict[int, tuple[int, int]] = {}
        _place(tree, members, 0, 1, where)
        for i, member in enumerate(members):
            offset, group = where[i]
            if not is_own(member):
                placements[member.result.id()] = Placement(slots, slot_cols, offset, group, _cols(member))
        heights = {int(m.attrs["shape"][0]) for m in members if not is_own(m)}
        if len(heights) != 1:
            raise UtlxCompileError("set_buffer_overlap", f"tensor-memory members of one spec have the same rows, got "
                                   f"{sorted(heights)} ({ph.describe()})")
        sizes[ph.handles[0].id()] = (slots, slot_cols)
        rows[ph.handles[0].id()] = heights.pop()
    low.vendor["tmem_alias"] = placements
    low.vendor["tmem_alias_size"] = sizes
    low.vendor["tmem_alias_rows"] = rows
    _check_capacity(list(allocs.values()), sizes)
    _check_written_through_itself(allocs, found)


#: placeholder -> indices of the handles it writes / reads in tensor memory
_WRITES = {"tmem_copy": (1,), "tmem_store": (0,)}
_READS = {"tmem_load": (0,), "tcgen05_mma_scaled": (0, 3, 4)}
_VIEWS = ("tmem_view", "tmem_slice", "tmem_reinterpret")


def _check_written_through_itself(allocs: dict[int, Placeholder], found: list[Placeholder]) -> None:
    """Refuse a scales member of a spec that the kernel reads but never writes through itself: its data would come
    through the spec's shared columns from another member, which its own allocation (:func:`is_own`) lacks."""
    own = {i: ph for i, ph in allocs.items() if ph.attrs.get("spec") and is_own(ph)}
    if not own:
        return
    root: dict[int, int] = {i: i for i in own}
    for ph in found:  # views come after what they view: one pass resolves chains
        if ph.name in _VIEWS and ph.handles and ph.handles[0].id() in root:
            root[ph.result.id()] = root[ph.handles[0].id()]
    written, read = set(), {}
    for ph in found:
        for i in _WRITES.get(ph.name, ()):
            if i < len(ph.handles) and ph.handles[i].id() in root:
                written.add(root[ph.handles[i].id()])
        for i in _READS.get(ph.name, ()):
            if i < len(ph.handles) and ph.handles[i].id() in root:
                read.setdefault(root[ph.handles[i].id()], ph)
    for alloc_id, reader in read.items():
        if alloc_id not in written:
            raise UtlxCompileError(
                "storage_alias_spec", f"a block-scales member ({own[alloc_id].describe()}) is read "
                f"({reader.describe()}) but never written through itself: its data would come through the spec's "
                f"shared columns, and utlx gives block-scales members tensor memory of their own (stock Triton "
                f"cannot view the spec's columns in TMEM's scales layout)",
                hint="write the scales with tlx.tmem_copy or tlx.local_store")


def _granules(cols: int) -> int:
    """Columns an allocation of ``cols`` 32-bit columns takes (Triton's TMEM allocator aligns each to 4)."""
    return -(-cols // 4) * 4


def _check_capacity(allocs: list[Placeholder], regions: dict[int, tuple[int, int]]) -> None:
    """Refuse, naming why, a kernel whose block-scales spec members (own TMEM, :func:`is_own`) push it past the 512
    columns. TLX allocations live for the whole kernel (that is what a storage_alias_spec shares), so the
    columns add up; without this, Triton's allocator fails later with a bare "out of resource: tensor memory"."""

    own = [ph for ph in allocs if ph.attrs.get("spec") and is_own(ph)]
    if not own:
        return
    total = sum(_granules(slots * slot_cols) for slots, slot_cols in regions.values())
    for ph in allocs:
        if ph.attrs.get("reuse") or (ph.attrs.get("spec") and not is_own(ph)):
            continue  # columns of another allocation / of a spec's region (counted above)
        cols = _cols_of(ph)
        if is_own(ph):  # one allocation per buffer (tmem._lower_scales_alloc)
            total += int(ph.attrs["num"]) * _granules(max(1, cols))
        else:
            total += _granules(int(ph.attrs["num"]) * max(1, cols))
    if total > TMEM_COLUMNS:
        extra = sum(int(ph.attrs["num"]) * _granules(max(1, _cols_of(ph))) for ph in own)
        buffers = sum(int(ph.attrs["num"]) for ph in own)
        raise UtlxCompileError(
            "storage_alias_spec", f"its block-scales members (uint8/int8) need tensor memory of their own ({len(own)} "
            f"member(s), {buffers} allocations, {extra} columns): stock Triton cannot view the spec's columns in "
            f"TMEM's scales layout; with them the kernel needs {total} of the {TMEM_COLUMNS} TMEM columns "
            f"({own[0].describe()})",
            hint="allocate the scales outside the spec, or fewer/narrower tensor-memory buffers")


def _cols_of(ph: Placeholder) -> int:
    return dtype_of_name(ph.attrs["dtype"]).primitive_bitwidth * int(ph.attrs["shape"][1]) // 32


# ---------------------------------------------------------------- lowerings


def _lower_spec(low: Lowering, ph: Placeholder) -> None:
    from utlx import compat

    size = low.vendor.get("tmem_alias_size", {}).get(ph.result.id())
    if size is None:
        raise UtlxCompileError("storage_alias_spec", f"its allocations were never placed: call "
                               f"spec.set_buffer_overlap(tlx.reuse_group(...)) after them ({ph.describe()})")
    slots, slot_cols = size
    rows = low.vendor.get("tmem_alias_rows", {}).get(ph.result.id(), 128)
    total = slots * slot_cols
    layout = _layout(tl.float32, rows, total)
    region = compat.blackwell().allocate_tensor_memory(tl.float32, [rows, total], layout, _semantic=gluon.semantic(low))
    low.real[ph.result.id()] = region.handle
    low.facts[ph.result.id()] = {"dtype": tl.float32, "shape": [rows, total], "layout": layout, "alloc": [rows, total],
                                 "kind": "view", "storage": "tmem", "root": region.handle}
    if ph.attrs.get("bytes") is not None and total * 4 * rows > int(ph.attrs["bytes"]):
        raise UtlxCompileError("storage_alias_spec", f"the reuse tree needs {total * 4 * rows} bytes, more than its "
                               f"buffer_size_bytes={ph.attrs['bytes']} ({ph.describe()})")


def member_view(low: Lowering, ph: Placeholder, fact: dict, index: Any) -> tuple[Any, dict]:
    """Buffer ``index`` of a spec member (``index``: an int, or an i32 ``ir.value`` when only known at run time)."""
    from utlx import compat

    place: Placement = fact["alias"]
    region = gluon.tmem_value(fact["region"], fact["region_fact"])
    dtype, shape = fact["dtype"], list(fact["shape"])
    per_col = max(1, 32 // dtype.primitive_bitwidth)  # elements of this type in one 32-bit column (packed)
    sem = gluon.semantic(low)
    rows = shape[0]
    if isinstance(index, int):
        col = (index // place.group) * place.slot_cols + place.offset + (index % place.group) * place.cols
        wide_n = region.shape[1] * per_col
        wide = compat.tmem_reinterpret(region, dtype, [rows, wide_n], _layout(dtype, rows, wide_n), sem)
        view = wide.slice(col * per_col, shape[1], _semantic=sem)
    else:
        if place.group != 1:
            raise UtlxCompileError("local_view", f"a buffer of a storage_alias_spec member grouped by "
                                   f"group_size={place.group} needs a compile-time index ({ph.describe()})")
        slot_n = place.slot_cols * per_col
        stacked = compat.tmem_reinterpret(region, dtype, [place.slots, rows, slot_n], _layout(dtype, rows, slot_n), sem)
        row = stacked.index(gluon.i32(index), _semantic=sem)
        view = row.slice(place.offset * per_col, shape[1], _semantic=sem)
    out = {"dtype": dtype, "shape": list(view.shape), "layout": view.layout, "alloc": list(view.type.alloc_shape),
           "kind": "view", "storage": "tmem", "root": fact["root"]}
    return view, out


def _layout(dtype: Any, rows: int, columns: int) -> Any:
    """The TMEM layout a member's view of the region has: scales for 8-bit integers, else blocks of at most
    128 rows x 256 elements (the largest TMEM block Triton's layouts take), packed."""
    from utlx import compat

    if dtype in (tl.uint8, tl.int8):
        return compat.tmem_scales_layout()
    return compat.tmem_layout((min(rows, 128), min(columns, 256)), 1)


register_lowering("tmem_alias_spec")(_lower_spec)
register_lowering("tmem_alias_overlap")(lambda low, ph: None)
