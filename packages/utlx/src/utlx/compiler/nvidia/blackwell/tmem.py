"""Tensor memory (TMEM): ``local_alloc(..., tlx.storage_kind.tmem)``, its views and slices, and the loads and
stores between TMEM and registers, for Blackwell (sm_100): trace-time bodies and lowerings.

Why separate placeholders: TMEM buffers are TLX ``buffered_tensor``s like shared-memory ones, so the user-facing
ops (``local_alloc``, ``local_view``, ``local_slice``, ``subslice``, ``local_load``, ``local_store``,
``local_reinterpret``) keep their names. On Blackwell targets their bodies registered here look at the storage:
shared memory goes to the common bodies unchanged, tensor memory becomes ``tmem_*`` placeholders lowered to
``ttng.tmem_alloc`` / ``ttg.memdesc_index`` / ``ttng.tmem_subslice`` / ``ttng.tmem_load`` / ``ttng.tmem_store`` /
``ttg.memdesc_reinterpret`` through Gluon (:mod:`.gluon`). Registers meet TMEM in the ``32x32b`` layout of
``tcgen05.ld``/``st`` for the warps of the task that issues them; the value is converted to and from the
layout the rest of the kernel has.

The default TMEM layout is TLX's: blocks of the buffer's own shape (``blockM`` at most 128 rows), packed columns
(``col_stride`` 1), one CTA. ``local_alloc(..., reuse=other)`` sees the columns of another TMEM allocation as
buffers of its own shape and type (``ttg.memdesc_reinterpret`` of the whole allocation): TLX's way of keeping P,
the softmax statistics and S of flash attention in the same columns.
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx.compiler.common import placeholders, values
from utlx.compiler.common.args import _c, _i32, _ints, _shape, _show, _tl_name
from utlx.compiler.common.carried import register_view_root, register_view_step
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.lowering import Lowering, register_lowering
from utlx.compiler.common.mem_ops import _replace
from utlx.compiler.common.placeholders import Placeholder, dtype_of_name
from utlx.compiler.common.target import from_semantic
from utlx.language._dispatch import compiler_impl, register_compiler_impl

from ..targets import BLACKWELL, TMEM_COLUMNS, TMEM_LANES
from ..tasks import current_num_warps
from . import gluon


def is_tmem(value: Any) -> bool:
    """Is ``value`` a TLX buffer (or view) in tensor memory?"""
    return isinstance(value, values.Handle) and getattr(value.type, "storage", "smem") == "tmem"


def _storage_name(storage: Any) -> str:
    return str(_c(storage) or "smem").split(".")[-1]


def _columns(shape: list[int], dtype: Any) -> int:
    """32-bit TMEM columns one buffer of ``shape`` takes (packed: sub-32-bit elements share a column)."""
    return max(1, shape[1] * dtype.primitive_bitwidth // 32)


# ---------------------------------------------------------------- trace time


@register_compiler_impl("local_alloc", *BLACKWELL)
def local_alloc(_semantic: Any, shape: Any, dtype: Any, num: Any, storage: Any = None, layout: Any = None,
                reuse: Any = None) -> values.Handle:
    """``num`` buffers in tensor memory (``storage=tmem``), or in shared memory as on every target."""
    if _storage_name(storage) != "tmem":
        return compiler_impl("local_alloc")(_semantic, shape=shape, dtype=dtype, num=num, storage=storage,
                                            layout=layout, reuse=reuse)
    op = "local_alloc"
    target = from_semantic(_semantic)
    gluon.require_support(op, target)
    shape_l = _ints(op, "shape", shape)
    dtype = _c(dtype)
    if not isinstance(dtype, tl.dtype):
        raise UtlxCompileError(op, f"'dtype' must be a tl.dtype, got {dtype!r}")
    n = _c(num)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise UtlxCompileError(op, f"'num' must be a compile-time int >= 1, got {_show(n)}")
    if len(shape_l) != 2:
        raise UtlxCompileError(op, f"a tensor-memory buffer is 2-D (rows x columns), got shape {shape_l}",
                               target=target.name)
    rows, _ = shape_l
    if rows not in (64, 128) and rows % TMEM_LANES:
        raise UtlxCompileError(op, f"a tensor-memory buffer has 64 or 128 rows (or a multiple of 128), got {rows}",
                               target=target.name, hint="TMEM has 128 lanes per CTA")
    if dtype.primitive_bitwidth not in (8, 16, 32):
        raise UtlxCompileError(op, f"tensor memory holds 8-, 16- or 32-bit elements, got {dtype}", target=target.name)
    cols = n * _columns(shape_l, dtype) * max(1, rows // TMEM_LANES)
    if cols > TMEM_COLUMNS:
        raise UtlxCompileError(op, f"{n} buffer(s) of {shape_l} x {dtype} take {cols} TMEM columns; a CTA has "
                               f"{TMEM_COLUMNS}", target=target.name, hint="allocate fewer or narrower buffers")
    base = _c(reuse)
    handles = []
    spec = False
    if isinstance(base, values.Handle) and base.type.kind == "alias_spec":
        handles, spec = [base.handle], True
    elif base is not None:
        if not is_tmem(base) or not isinstance(base, values.SharedBuffers):
            raise UtlxCompileError(op, f"'reuse' of a tensor-memory allocation must be another TMEM local_alloc, got "
                                   f"{_show(base)}", target=target.name)
        base_cols = base.type.num * _columns(list(base.shape), base.dtype)
        if cols > base_cols:
            raise UtlxCompileError(op, f"{n} buffer(s) of {shape_l} x {dtype} take {cols} TMEM columns, more than the "
                                   f"{base_cols} of the allocation they reuse ({base.type.num} x "
                                   f"{list(base.shape)} x {base.dtype})", target=target.name)
        handles = [base.handle]
    attrs: dict[str, Any] = {"shape": shape_l, "dtype": str(dtype), "num": n, "reuse": bool(handles) and not spec,
                             "spec": spec}
    lay = _c(layout)
    if lay is not None:
        block_m, block_n = getattr(lay, "blockM", None), getattr(lay, "blockN", None)
        if block_m is None or block_n is None:
            raise UtlxCompileError(op, f"'layout' of a tensor-memory buffer must be a tensor_memory_layout_encoding, "
                                   f"got {type(lay).__name__}")
        attrs["block"] = [int(block_m), int(block_n)]
        attrs["col_stride"] = int(getattr(lay, "colStride", 1) or 1)
    h = placeholders.emit(_semantic, "tmem_alloc", attrs, handles=handles)
    return values.make("buffers", h, shape=shape_l, dtype=dtype, num=n, storage="tmem")


@register_compiler_impl("local_view", *BLACKWELL)
def local_view(_semantic: Any, local_allocated_buffers: Any, buffer_idx: Any) -> values.Handle:
    """Buffer ``buffer_idx`` of a TMEM ``local_alloc`` (shared memory and barriers: the common body)."""
    bufs = local_allocated_buffers
    if not is_tmem(bufs) or not isinstance(bufs, values.SharedBuffers):
        return compiler_impl("local_view")(_semantic, local_allocated_buffers=bufs, buffer_idx=buffer_idx)
    op = "local_view"
    idx_c = _c(buffer_idx)
    if isinstance(idx_c, int) and not 0 <= idx_c < bufs.type.num:
        raise UtlxCompileError(op, f"buffer index {idx_c} is out of range for {bufs.type.num} buffers",
                               hint=f"valid indices are 0..{bufs.type.num - 1}")
    idx = _i32(_semantic, buffer_idx, op, "buffer_idx")
    static = idx_c if isinstance(idx_c, int) and not isinstance(idx_c, bool) else None
    h = placeholders.emit(_semantic, "tmem_view", {"index": static}, handles=[bufs.handle, idx], pure=True)
    return values.make("view", h, shape=bufs.shape, dtype=bufs.dtype, num=1, storage="tmem")


def _tmem_view(op: str, value: Any, name: str) -> values.SharedView:
    if not is_tmem(value) or not isinstance(value, values.SharedView):
        raise UtlxCompileError(op, f"'{name}' must be one tensor-memory buffer (tlx.local_view of a TMEM "
                               f"local_alloc), got {type(value).__name__}")
    return value


def _slice(_semantic: Any, op: str, view: values.SharedView, start: int, length: int) -> values.SharedView:
    rows, cols = view.shape
    if start < 0 or length <= 0 or start + length > cols:
        raise UtlxCompileError(op, f"columns [{start}, {start + length}) are outside the buffer's {cols} columns")
    h = placeholders.emit(_semantic, "tmem_slice", {"start": start, "length": length}, handles=[view.handle],
                          pure=True)
    return values.make("view", h, shape=(rows, length), dtype=view.dtype, num=1, storage="tmem")


@register_compiler_impl("local_slice", *BLACKWELL)
def local_slice(_semantic: Any, buffer: Any, offset: Any, shape: Any) -> values.Handle:
    """A column range of one TMEM buffer (TMEM slices along columns only); shared memory: the common body."""
    if not is_tmem(buffer):
        return compiler_impl("local_slice")(_semantic, buffer=buffer, offset=offset, shape=shape)
    op = "local_slice"
    view = _tmem_view(op, buffer, "buffer")
    off, shp = _ints(op, "offset", offset), _ints(op, "shape", shape)
    if len(off) != 2 or len(shp) != 2 or off[0] != 0 or shp[0] != view.shape[0]:
        raise UtlxCompileError(op, f"a tensor-memory slice keeps every row and takes a column range: offset "
                               f"[0, c] and shape [{view.shape[0]}, n], got offset {off} and shape {shp}")
    return _slice(_semantic, op, view, off[1], shp[1])


@register_compiler_impl("subslice", *BLACKWELL)
def subslice(_semantic: Any, local_allocated_buffer: Any, offset: Any, size: Any) -> values.Handle:
    """Columns ``[offset, offset + size)`` of one TMEM buffer (``ttng.tmem_subslice``)."""
    op = "subslice"
    view = _tmem_view(op, local_allocated_buffer, "local_allocated_buffer")
    start, length = _c(offset), _c(size)
    for name, v in (("offset", start), ("size", length)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise UtlxCompileError(op, f"'{name}' must be a compile-time int, got {_show(v)}")
    return _slice(_semantic, op, view, start, length)


@register_compiler_impl("local_reinterpret", *BLACKWELL)
def local_reinterpret(_semantic: Any, src: Any, dtype: Any, shape: Any = None, layout: Any = None) -> values.Handle:
    """The same TMEM columns seen with another element type (and shape); shared memory: the common body."""
    if not is_tmem(src):
        return compiler_impl("local_reinterpret")(_semantic, src=src, dtype=dtype, shape=shape, layout=layout)
    op = "local_reinterpret"
    view = _tmem_view(op, src, "src")
    new_dtype = _c(dtype)
    if not isinstance(new_dtype, tl.dtype):
        raise UtlxCompileError(op, f"'dtype' must be a tl.dtype, got {new_dtype!r}")
    new_shape = list(view.shape) if _c(shape) is None else _ints(op, "shape", shape)
    if len(new_shape) != 2 or new_shape[0] != view.shape[0]:
        raise UtlxCompileError(op, f"a tensor-memory view keeps its {view.shape[0]} rows, got shape {new_shape}")
    if _columns(new_shape, new_dtype) > _columns(list(view.shape), view.dtype):
        raise UtlxCompileError(op, f"{new_shape} x {new_dtype} does not fit the columns of {list(view.shape)} x "
                               f"{view.dtype}")
    h = placeholders.emit(_semantic, "tmem_reinterpret", {"dtype": str(new_dtype), "shape": new_shape},
                          handles=[view.handle], pure=True)
    return values.make("view", h, shape=new_shape, dtype=new_dtype, num=1, storage="tmem")


@register_compiler_impl("local_load", *BLACKWELL)
def local_load(_semantic: Any, src: Any, token: Any = None, layout: Any = None, relaxed: Any = False,
               rematerialize_coordinates: Any = False, rematerialize_coordinates_group: Any = None) -> tl.tensor:
    """Read one TMEM buffer into registers (``tcgen05.ld``); shared memory: the common body."""
    if not is_tmem(src):
        return compiler_impl("local_load")(_semantic, src=src, token=token, layout=layout, relaxed=relaxed,
                                           rematerialize_coordinates=rematerialize_coordinates,
                                           rematerialize_coordinates_group=rematerialize_coordinates_group)
    view = _tmem_view("local_load", src, "src")
    ret_ty = tl.block_type(view.dtype, list(view.shape))
    h = placeholders.emit(_semantic, "tmem_load", {"nw": current_num_warps(_semantic)}, handles=[view.handle],
                          result=ret_ty)
    return tl.tensor(h, ret_ty)


@register_compiler_impl("local_store", *BLACKWELL)
def local_store(_semantic: Any, dst: Any, src: Any) -> None:
    """Write a register tensor into one TMEM buffer (``tcgen05.st``); shared memory: the common body."""
    if not is_tmem(dst):
        return compiler_impl("local_store")(_semantic, dst=dst, src=src)
    op = "local_store"
    view = _tmem_view(op, dst, "dst")
    if not isinstance(src, tl.tensor) or not src.type.is_block():
        raise UtlxCompileError(op, f"'src' must be a tensor, got {type(src).__name__}")
    if _shape(src) != list(view.shape):
        raise UtlxCompileError(op, f"shape mismatch: tensor {_shape(src)} vs buffer {list(view.shape)}")
    if src.dtype != view.dtype:
        raise UtlxCompileError(op, f"dtype mismatch: tensor {src.dtype} vs buffer {view.dtype}",
                               hint=f"cast first: x.to({_tl_name(view.dtype)})")
    placeholders.emit(_semantic, "tmem_store", {"nw": current_num_warps(_semantic)}, handles=[view.handle],
                      tensors=[src])
    return None


# ---------------------------------------------------------------- lowerings


def default_layout(shape: list[int], dtype: Any, attrs: dict[str, Any]) -> Any:
    """The TMEM layout of a buffer: the kernel's ``tensor_memory_layout_encoding``, else TLX's default."""
    from utlx import compat

    if dtype in (tl.uint8, tl.int8):  # block-scale factors: TMEM's scales layout (TLX: 8-bit integers)
        return compat.tmem_scales_layout()
    block = attrs.get("block") or [min(shape[0], 128), shape[1]]
    return compat.tmem_layout((int(block[0]), int(block[1])), int(attrs.get("col_stride", 1)))


def _lower_alloc(low: Lowering, ph: Placeholder) -> None:
    from utlx import compat

    a = ph.attrs
    dtype, shape = dtype_of_name(a["dtype"]), list(a["shape"])
    layout = default_layout(shape, dtype, a)
    full = [a["num"], *shape]
    if dtype in (tl.uint8, tl.int8):  # in a storage_alias_spec too: TMEM of its own (alias.is_own)
        _lower_scales_alloc(low, ph, dtype, shape, layout)
        return
    if a.get("spec"):  # a member of a storage_alias_spec: its buffers are views of the spec's region (alias.py)
        place = low.vendor.get("tmem_alias", {}).get(ph.result.id())
        if place is None:
            raise UtlxCompileError("local_alloc", f"this allocation of a storage_alias_spec is in no reuse tree: "
                                   f"name it in spec.set_buffer_overlap(...) ({ph.describe()})")
        region = low.handle(ph, 0, "storage_alias_spec")
        low.real[ph.result.id()] = region
        low.facts[ph.result.id()] = {"dtype": dtype, "shape": shape, "layout": layout, "alloc": full,
                                     "kind": "buffers", "storage": "tmem", "alias": place, "region": region,
                                     "region_fact": low.fact(ph, 0), "root": low.fact(ph, 0).get("root")}
        return
    if a.get("reuse"):  # the same TMEM columns as the allocation it reuses, seen as other buffers
        base = gluon.tmem(low, ph, 0, "reused allocation")
        # A narrower reuser (bf16 P over fp32 S of the same shape) sees the base's columns as more buffers of its
        # own: Triton's reinterpret keeps the storage size; buffers past ``num`` are never indexed.
        per_buf = _columns(shape, dtype) * max(1, shape[0] // TMEM_LANES)
        base_cols = _columns(list(base.shape[1:]), base.dtype) * max(1, base.shape[1] // TMEM_LANES) * base.shape[0]
        if base_cols > a["num"] * per_buf and base_cols % per_buf == 0:
            full = [base_cols // per_buf, *shape]
        desc = compat.tmem_reinterpret(base, dtype, full, layout, gluon.semantic(low))
        root = low.fact(ph, 0).get("root")
    else:
        desc = compat.blackwell().allocate_tensor_memory(dtype, full, layout, _semantic=gluon.semantic(low))
        root = desc.handle
    low.real[ph.result.id()] = desc.handle
    low.facts[ph.result.id()] = {"dtype": dtype, "shape": shape, "layout": layout, "alloc": full, "kind": "buffers",
                                 "storage": "tmem", "root": root}


def _lower_view(low: Lowering, ph: Placeholder) -> None:
    f = low.fact(ph, 0)
    if "scales_of" in f:
        _lower_scales_view(low, ph, f)
        return
    if "alias" in f:
        from .alias import member_view

        index = ph.attrs.get("index")
        if index is None:  # a value the TTIR passes may have folded (a replica id passed to a helper, say)
            index = low.constant_int(ph.handles[1])
        view, fact = member_view(low, ph, f, index if index is not None else ph.handles[1])
        low.real[ph.result.id()] = view.handle
        low.facts[ph.result.id()] = fact
        return
    bufs = gluon.tmem(low, ph, 0, "buffer argument")
    view = bufs.index(gluon.i32(ph.handles[1]), _semantic=gluon.semantic(low))
    f = low.fact(ph, 0)
    low.real[ph.result.id()] = view.handle
    low.facts[ph.result.id()] = {**f, "alloc": list(view.type.alloc_shape), "kind": "view", "layout": view.layout}


def _lower_scales_alloc(low: Lowering, ph: Placeholder, dtype: Any, shape: list[int], layout: Any) -> None:
    """Block-scale buffers (uint8/int8) in TMEM: one allocation per buffer.

    Why: TMEM's scales layout takes no buffer index (Gluon: "Scales don't currently support multibuffering"),
    and stock Triton neither slices it (``ttng.tmem_subslice`` wants the plain TMEM layout) nor reinterprets a
    subview as it. So buffer ``i`` is an allocation of its own (each rounded up to TMEM's 32-column granule) and
    a view needs the buffer index at compile time. Scales members of a ``storage_alias_spec`` are allocated so
    too (``alias.is_own``: they share no columns with the spec, which TLX kernels use for capacity only); when
    that exceeds the 512 columns (Meta's mxfp8 attention: 544) ``alias._check_capacity`` says so.
    """
    from utlx import compat

    sem = gluon.semantic(low)
    parts = [compat.blackwell().allocate_tensor_memory(dtype, shape, layout, _semantic=sem)
             for _ in range(int(ph.attrs["num"]))]
    low.real[ph.result.id()] = parts[0].handle
    low.facts[ph.result.id()] = {"dtype": dtype, "shape": shape, "layout": layout, "alloc": shape, "kind": "view",
                                 "storage": "tmem", "root": parts[0].handle,
                                 "scales_of": [p.handle for p in parts]}


def _lower_scales_view(low: Lowering, ph: Placeholder, f: dict) -> None:
    parts = f["scales_of"]
    index = ph.attrs.get("index")
    if index is None:
        index = low.constant_int(ph.handles[1])
    if index is None:
        if len(parts) != 1:
            raise UtlxCompileError("local_view", f"a tensor-memory scales buffer of several buffers needs an index "
                                   f"known at compile time (TMEM scales cannot be multi-buffered) ({ph.describe()})")
        index = 0  # one buffer: every index is 0
    if not 0 <= int(index) < len(parts):
        raise UtlxCompileError("local_view", f"index {index} is out of range for {len(parts)} scales buffers "
                               f"({ph.describe()})")
    handle = parts[int(index)]
    low.real[ph.result.id()] = handle
    low.facts[ph.result.id()] = {k: v for k, v in f.items() if k != "scales_of"} | {"root": handle}


def _lower_slice(low: Lowering, ph: Placeholder) -> None:
    view = gluon.tmem(low, ph, 0, "buffer argument")
    part = view.slice(int(ph.attrs["start"]), int(ph.attrs["length"]), _semantic=gluon.semantic(low))
    low.real[ph.result.id()] = part.handle
    low.facts[ph.result.id()] = {**low.fact(ph, 0), "shape": list(part.shape), "layout": part.layout,
                                 "alloc": list(part.type.alloc_shape), "kind": "view"}


def _lower_reinterpret(low: Lowering, ph: Placeholder) -> None:
    from utlx import compat

    view = gluon.tmem(low, ph, 0, "buffer argument")
    dtype, shape = dtype_of_name(ph.attrs["dtype"]), list(ph.attrs["shape"])
    layout = default_layout(shape, dtype, {"block": [view.layout.block[0], shape[1]],
                                           "col_stride": view.layout.col_stride})
    new = compat.tmem_reinterpret(view, dtype, shape, layout, gluon.semantic(low))
    low.real[ph.result.id()] = new.handle
    low.facts[ph.result.id()] = {**low.fact(ph, 0), "dtype": dtype, "shape": shape, "layout": layout,
                                 "alloc": list(shape), "kind": "view"}


def _register_layout(low: Lowering, ph: Placeholder, view: Any) -> Any:
    from utlx import compat

    return compat.tmem_reg_layout(view.dtype, list(view.shape), list(view.type.alloc_shape), view.layout,
                                  int(ph.attrs["nw"]))


def _lower_load(low: Lowering, ph: Placeholder) -> None:
    view = gluon.tmem(low, ph, 0, "source buffer")
    loaded = view.load(_register_layout(low, ph, view), _semantic=gluon.semantic(low))
    _replace(ph, low.builder.create_convert_layout(ph.result.get_type(), loaded.handle))


def _lower_store(low: Lowering, ph: Placeholder) -> None:
    from utlx.compiler.common import layouts

    view = gluon.tmem(low, ph, 0, "destination buffer")
    layout = _register_layout(low, ph, view)
    reg_ty = layouts.distributed_type(view.dtype, list(view.shape), layout)
    value = low.builder.create_convert_layout(reg_ty.to_ir(low.builder), ph.tensors[0])
    from triton.experimental.gluon import language as ttgl

    view.store(ttgl.tensor(value, reg_ty), _semantic=gluon.semantic(low))


register_lowering("tmem_alloc")(_lower_alloc)
# Views carried through loops and branches are rebuilt with the carried index (common/carried.py).
register_view_root("tmem_view", dynamic_attrs=("index",))
register_view_step("tmem_slice")
register_view_step("tmem_reinterpret")
register_lowering("tmem_view")(_lower_view)
register_lowering("tmem_slice")(_lower_slice)
register_lowering("tmem_reinterpret")(_lower_reinterpret)
register_lowering("tmem_load")(_lower_load)
register_lowering("tmem_store")(_lower_store)
