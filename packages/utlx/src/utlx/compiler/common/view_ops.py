"""Views of shared-memory buffers that move no data (``local_trans``, ``local_reinterpret``, ``local_reshape``,
``subslice``), and indexed reads/writes of one buffer (``local_gather`` / ``local_scatter``).

Why a module of their own: each view is a new memory descriptor over the same bytes (``ttg.memdesc_trans``,
``ttg.memdesc_reinterpret``, ``ttg.memdesc_reshape``, ``ttg.memdesc_subslice``). The trace-time bodies check
the arguments and emit a placeholder; the lowerings below build the descriptor and register themselves for every target
(:func:`utlx.compiler.common.lowering.register_lowering`). ``local_gather``/``local_scatter`` are ``ttg.local_gather`` /
``ttg.local_scatter`` (Triton 3.7+; a compile error naming the op on 3.6). ``local_trans`` is what the
Hopper attention kernels feed to wgmma as ``K^T``: wgmma reads a transposed NVMMA-swizzled buffer directly
(its "transpose B" mode), so no copy is made.
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx import compat
from utlx.language._dispatch import register_compiler_impl

from . import layouts, values
from . import placeholders as placeholder
from .args import _c, _expect, _ints, _shape, _show
from .errors import UtlxCompileError
from .lowering import Lowering, register_lowering
from .mem_ops import _shared_layout_spec
from .placeholders import Placeholder
from .target import from_semantic

# ---------------------------------------------------------------- trace time


@register_compiler_impl("local_trans")
def local_trans(_semantic: Any, input: Any, dims: Any = (1, 0)) -> values.SharedView:
    """``input`` with its dimensions permuted by ``dims`` (a view: no data moves)."""
    op = "local_trans"
    view = _expect(op, input, values.SharedView, "input")
    order = _ints(op, "dims", dims)
    rank = len(view.shape)
    if sorted(order) != list(range(rank)):
        raise UtlxCompileError(op, f"'dims' must be a permutation of 0..{rank - 1} for a buffer of shape "
                               f"{list(view.shape)}, got {_show(dims)}")
    h = placeholder.emit(_semantic, op, {"dims": order}, handles=[view.handle], pure=True)
    return values.make("view", h, shape=[view.shape[d] for d in order], dtype=view.dtype, num=1)


@register_compiler_impl("local_reinterpret")
def local_reinterpret(_semantic: Any, src: Any, dtype: Any, shape: Any = None, layout: Any = None) -> values.Handle:
    """The bytes of ``src`` seen as ``dtype`` (and ``shape``, and shared ``layout``): a view, nothing is converted."""
    op = "local_reinterpret"
    if not isinstance(src, (values.SharedView, values.SharedBuffers)):
        raise UtlxCompileError(op, f"'src' must be a tlx.local_alloc result or a view of one, got {type(src).__name__}")
    new_dtype = _c(dtype)
    if not isinstance(new_dtype, tl.dtype):
        raise UtlxCompileError(op, f"'dtype' must be a tl.dtype, got {new_dtype!r}")
    new_shape = list(src.shape) if _c(shape) is None else _ints(op, "shape", shape)
    old_bytes = _nbytes(list(src.shape), src.dtype)
    new_bytes = _nbytes(new_shape, new_dtype)
    if new_bytes != old_bytes:
        raise UtlxCompileError(op, f"{new_shape} x {new_dtype} is {new_bytes} bytes but the buffer {list(src.shape)} x "
                               f"{src.dtype} is {old_bytes} bytes", hint="keep the byte size of each buffer")
    kind = "buffers" if isinstance(src, values.SharedBuffers) else "view"
    attrs = {"dtype": str(new_dtype), "shape": new_shape}
    spec = _shared_layout_spec(op, _c(layout), new_shape, from_semantic(_semantic))
    if spec is not None:
        attrs["layout"] = spec
    h = placeholder.emit(_semantic, op, attrs, handles=[src.handle], pure=True)
    return values.make(kind, h, shape=new_shape, dtype=new_dtype, num=src.type.num)


@register_compiler_impl("local_reshape")
def local_reshape(_semantic: Any, src: Any, shape: Any) -> values.Handle:
    """``src`` seen with another shape of the same number of elements (``ttg.memdesc_reshape``)."""
    op = "local_reshape"
    if not isinstance(src, (values.SharedView, values.SharedBuffers)):
        raise UtlxCompileError(op, f"'src' must be a tlx.local_alloc result or a view of one, got {type(src).__name__}")
    new_shape = _ints(op, "shape", shape)
    old, new = 1, 1
    for d in src.shape:
        old *= d
    for d in new_shape:
        new *= d
    if old != new:
        raise UtlxCompileError(op, f"cannot reshape {list(src.shape)} ({old} elements) to {new_shape} ({new} elements)")
    kind = "buffers" if isinstance(src, values.SharedBuffers) else "view"
    h = placeholder.emit(_semantic, op, {"shape": new_shape}, handles=[src.handle], pure=True)
    return values.make(kind, h, shape=new_shape, dtype=src.dtype, num=src.type.num)


def _indexed(op: str, view: Any, indices: Any, axis: Any) -> tuple[tl.tensor, int]:
    _expect(op, view, values.SharedView, "src" if op == "local_gather" else "dst")
    idx = _c(indices)
    if not isinstance(idx, tl.tensor) or not idx.type.is_block() or not idx.dtype.is_int():
        raise UtlxCompileError(op, f"'indices' must be an integer tensor, got {_show(idx)}")
    ax = _c(axis)
    if isinstance(ax, bool) or not isinstance(ax, int) or not 0 <= ax < len(view.shape):
        raise UtlxCompileError(op, f"'axis' must be a compile-time int in 0..{len(view.shape) - 1}, got {_show(axis)}")
    if len(_shape(idx)) != len(view.shape):
        raise UtlxCompileError(op, f"'indices' must have the buffer's rank {len(view.shape)}, got shape {_shape(idx)}")
    if not compat.gluon_builder_has("create_local_gather"):
        raise UtlxCompileError(op, f"needs ttg.local_gather/local_scatter, added in Triton 3.7 (this is "
                               f"{compat.TRITON_VERSION_STR})",
                               hint="gather in registers: tl.gather(tlx.local_load(buf), indices, axis)")
    return idx, ax


@register_compiler_impl("local_gather")
def local_gather(_semantic: Any, src: Any, indices: Any, axis: Any, token: Any = None) -> tl.tensor:
    """``result[I] = src[..., indices[I], ...]`` along ``axis`` (``ttg.local_gather``)."""
    idx, ax = _indexed("local_gather", src, indices, axis)
    ret = tl.block_type(src.dtype, _shape(idx))
    h = placeholder.emit(_semantic, "local_gather", {"axis": ax}, handles=[src.handle], tensors=[idx], result=ret)
    return tl.tensor(h, ret)


@register_compiler_impl("local_scatter")
def local_scatter(_semantic: Any, dst: Any, src: Any, indices: Any, axis: Any, token: Any = None) -> None:
    """``dst[..., indices[I], ...] = src[I]`` along ``axis`` (``ttg.local_scatter``)."""
    op = "local_scatter"
    idx, ax = _indexed(op, dst, indices, axis)
    src = _c(src)
    if not isinstance(src, tl.tensor) or _shape(src) != _shape(idx) or src.dtype != dst.dtype:
        raise UtlxCompileError(op, f"'src' must be a {dst.dtype} tensor of the indices' shape {_shape(idx)}, got "
                               f"{_show(src)}")
    placeholder.emit(_semantic, op, {"axis": ax}, handles=[dst.handle], tensors=[src, idx])


@register_compiler_impl("subslice")
def subslice(_semantic: Any, local_allocated_buffer: Any, offset: Any, size: Any) -> values.SharedView:
    """Columns ``[offset, offset + size)`` of a buffer (TLX slices tensor memory so; here shared memory)."""
    from .mem_ops import local_slice

    op = "subslice"
    view = _expect(op, local_allocated_buffer, values.SharedView, "local_allocated_buffer")
    off, n = _c(offset), _c(size)
    for name, v in (("offset", off), ("size", n)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise UtlxCompileError(op, f"'{name}' must be a compile-time int, got {_show(v)}")
    shape = list(view.shape)
    return local_slice(_semantic, view, [0] * (len(shape) - 1) + [off], [*shape[:-1], n])


def _nbytes(shape: list[int], dtype: Any) -> int:
    n = dtype.primitive_bitwidth
    for s in shape:
        n *= s
    return n // 8


# ---------------------------------------------------------------- lowering


def _lower_local_trans(low: Lowering, ph: Placeholder) -> None:
    src = low.handle(ph, 0, "buffer argument")
    f = low.fact(ph, 0)
    order = list(ph.attrs["dims"])
    v = low.builder.create_memdesc_trans(src, order)
    low.real[ph.result.id()] = v
    # The layout of a transposed view is derived by the op; views of it would need it, none exist in TLX.
    low.facts[ph.result.id()] = {**f, "shape": [f["shape"][d] for d in order], "layout": None, "kind": "view"}


def _reinterpreted_layout(layout: Any, dtype: Any, rank: int) -> Any:
    """The source's layout for elements of ``dtype``: NVMMA swizzling is kept, its element width follows."""
    from triton.experimental.gluon import language as ttgl

    if isinstance(layout, ttgl.NVMMASharedLayout):
        return ttgl.NVMMASharedLayout(swizzle_byte_width=layout.swizzle_byte_width,
                                      element_bitwidth=dtype.primitive_bitwidth, rank=rank,
                                      transposed=layout.transposed)
    if isinstance(layout, ttgl.SwizzledSharedLayout) and len(layout.order) != rank:
        return ttgl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=list(range(rank - 1, -1, -1)))
    return layout


def _lower_local_reinterpret(low: Lowering, ph: Placeholder) -> None:
    src = low.handle(ph, 0, "buffer argument")
    f = low.fact(ph, 0)
    if f.get("layout") is None and not ph.attrs.get("layout"):
        raise UtlxCompileError(ph.name, f"cannot reinterpret a transposed view; reinterpret the buffer first, then "
                               f"transpose it ({ph.describe()})")
    dtype = tl.dtype(ph.attrs["dtype"])
    shape = list(ph.attrs["shape"])
    multi = f.get("kind") == "buffers"
    full = [f["alloc"][0], *shape] if multi else shape
    if ph.attrs.get("layout"):
        layout = layouts.from_spec(ph.attrs["layout"])
    else:
        layout = _reinterpreted_layout(f["layout"], dtype, len(full) - (1 if multi else 0))
    ty = layouts.memdesc_type(dtype, full, layout, full).to_ir(low.builder)
    v = low.builder.create_memdesc_reinterpret(ty, src)
    low.real[ph.result.id()] = v
    low.facts[ph.result.id()] = {**f, "dtype": dtype, "shape": shape, "layout": layout, "alloc": full}


def _lower_local_reshape(low: Lowering, ph: Placeholder) -> None:
    src = low.handle(ph, 0, "buffer argument")
    f = low.fact(ph, 0)
    shape = list(ph.attrs["shape"])
    multi = f.get("kind") == "buffers"
    v = low.builder.create_memdesc_reshape(src, [f["alloc"][0], *shape] if multi else shape)
    low.real[ph.result.id()] = v
    # Triton infers the reshaped view's layout; views of it take it from the IR type, none are made here.
    low.facts[ph.result.id()] = {**f, "shape": shape, "layout": low.builder.get_gluon_layout_from_memdesc(v),
                                 "alloc": [f["alloc"][0], *shape] if multi else shape}


def _lower_local_gather(low: Lowering, ph: Placeholder) -> None:
    src = low.handle(ph, 0, "source buffer")
    v = low.builder.create_local_gather(ph.result.get_type(), src, ph.tensors[0], int(ph.attrs["axis"]))
    ph.result.replace_all_uses_with(v)


def _lower_local_scatter(low: Lowering, ph: Placeholder) -> None:
    dst = low.handle(ph, 0, "destination buffer")
    low.builder.create_local_scatter(dst, ph.tensors[0], ph.tensors[1], int(ph.attrs["axis"]))


register_lowering("local_trans")(_lower_local_trans)
register_lowering("local_reinterpret")(_lower_local_reinterpret)
register_lowering("local_reshape")(_lower_local_reshape)
register_lowering("local_gather")(_lower_local_gather)
register_lowering("local_scatter")(_lower_local_scatter)
