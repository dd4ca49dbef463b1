"""CPU bodies of the AMD TLX ops and of the layout ops (``TRITON_INTERPRET=1``).

Why these are short: on the CPU every tensor is a numpy array, so a layout (register or shared) never
changes a value: layout pins, scheduling hints and register-class contracts are identities, and
``assert_same_layout``/``dump_layout`` have nothing to check. The buffer ops are the ordinary pointer ops on
``ptr + offsets`` (masked-off lanes read ``other``, or 0, exactly what a buffer op returns for them), and
``buffer_load_to_local`` is ``async_load`` of those pointers: the copy joins the uncommitted group, so the
hazard checker sees a read before its wait as it does for ``async_load``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from triton.language import core as tl

from utlx import compat as _compat
from utlx.interpreter.errors import UtlxInterpreterError, kernel_location, where
from utlx.interpreter.memory import BufferView
from utlx.interpreter.ops_mem import AsyncToken, _buffer, async_load
from utlx.interpreter.state import current
from utlx.language._dispatch import register_interpreter_impl as impl

_unwrap = tl._unwrap_if_constexpr


def _pointers(_semantic: Any, ptr: Any, offsets: Any, op: str) -> tl.tensor:
    if not isinstance(ptr, tl.tensor) or ptr.type.is_block() or not ptr.dtype.is_ptr():
        raise UtlxInterpreterError(f"{op}: 'ptr' must be a scalar pointer, got {ptr!r}{where(kernel_location(1))}")
    return ptr.__add__(offsets, _semantic=_semantic)


@impl("buffer_load")
def buffer_load(_semantic: Any, ptr: Any, offsets: Any, mask: Any, other: Any, cache: Any, contiguity: Any) -> Any:
    return tl.load(_pointers(_semantic, ptr, offsets, "buffer_load"), mask=mask, other=other, _semantic=_semantic)


@impl("buffer_store")
def buffer_store(_semantic: Any, stored_value: Any, ptr: Any, offsets: Any, mask: Any, cache: Any) -> None:
    tl.store(_pointers(_semantic, ptr, offsets, "buffer_store"), stored_value, mask=mask, _semantic=_semantic)


@impl("buffer_atomic_add")
def buffer_atomic_add(_semantic: Any, ptr: Any, offsets: Any, value: Any, mask: Any, sem: Any, scope: Any,
                      contiguity: Any) -> Any:
    return tl.atomic_add(_pointers(_semantic, ptr, offsets, "buffer_atomic_add"), value, mask=mask, sem=_unwrap(sem),
                         scope=_unwrap(scope), _semantic=_semantic)


@impl("buffer_load_to_local")
def buffer_load_to_local(_semantic: Any, dest: Any, ptr: Any, offsets: Any, mask: Any, other: Any,
                         cache_modifier: Any) -> AsyncToken:
    if mask is not None and other is None:
        other = 0  # masked-off lanes of a buffer copy read 0
    return async_load(_semantic, _pointers(_semantic, ptr, offsets, "buffer_load_to_local"), dest, mask, other,
                      cache_modifier, "", False, False, None, None)


@impl("assume_uniform")
def assume_uniform(_semantic: Any, value: Any) -> Any:
    return value


@impl("zeros")
def zeros(_semantic: Any, shape: Any, dtype: Any, layout: Any) -> tl.tensor:
    dims = [_compat.to_int(s, "zeros shape") for s in _unwrap(shape)]
    dtype = _unwrap(dtype)
    return _compat.make_tensor(np.zeros(dims, dtype=_compat.np_dtype(dtype)), dtype)


def _identity(name: str) -> Any:
    def body(_semantic: Any, *args: Any, **kwargs: Any) -> Any:
        return args[0] if args else next(iter(kwargs.values()))

    body.__name__ = name
    body.__doc__ = f"``{name}``: the value itself (layouts and register hints do not change values)."
    return body


for _name in ("require_layout", "release_layout", "amd_register_resident", "amd_register_handoff",
              "require_amd_wmma_layout"):
    impl(_name)(_identity(_name))
del _name


@impl("amd_mfma_commit")
def amd_mfma_commit(_semantic: Any, value: Any, preserve: Any) -> Any:
    if preserve is None:
        return value
    values = (value,) if isinstance(value, tl.tensor) else tuple(value)
    return (*values, preserve)


@impl("amd_scheduled_mfma")
def amd_scheduled_mfma(_semantic: Any, a: Any, b: Any, acc: Any, accumulator_role: Any, resident_operand: Any,
                       accumulator_register_class: Any, initialize: Any) -> tl.tensor:
    if _unwrap(initialize):
        acc = zeros(_semantic, acc.shape, acc.dtype, None)
    return tl.dot(a, b, acc, out_dtype=acc.dtype, _semantic=_semantic)


@impl("extract_slice")
def extract_slice(_semantic: Any, source: Any, shape: Any, offsets: Any) -> tl.tensor:
    dims = [_compat.to_int(s, "extract_slice shape") for s in _unwrap(shape)]
    offs = [_compat.to_int(o, "extract_slice offsets") for o in _unwrap(offsets)]
    data = _compat.tensor_data(source)
    if len(dims) != data.ndim or len(offs) != data.ndim or any(o < 0 or o + n > m for o, n, m in
                                                               zip(offs, dims, data.shape, strict=True)):
        raise UtlxInterpreterError(f"extract_slice: shape {dims} at offsets {offs} does not fit a tensor of shape "
                                   f"{list(data.shape)}{where(kernel_location())}")
    window = tuple(slice(o, o + n) for o, n in zip(offs, dims, strict=True))
    return _compat.make_tensor(data[window].copy(), source.dtype)


@impl("rematerialized_range")
def rematerialized_range(_semantic: Any, start: Any, end: Any, identity: Any, placement: Any) -> tl.tensor:
    return tl.arange(_unwrap(start), _unwrap(end), _semantic=_semantic)


def _no_op(name: str) -> Any:
    def body(_semantic: Any, *args: Any, **kwargs: Any) -> None:
        return None

    body.__name__ = name
    body.__doc__ = f"``{name}``: a compile-time or scheduling matter; nothing to do on the CPU."
    return body


for _name in ("amd_sched_barrier", "prefetch", "assert_same_layout", "dump_layout", "fence_mbarrier_init_cluster"):
    impl(_name)(_no_op(_name))
del _name


@impl("local_reshape")
def local_reshape(_semantic: Any, src: Any, shape: Any) -> BufferView:
    view = _buffer(src, "local_reshape", "src")
    dims = tuple(_compat.to_int(s, "local_reshape shape") for s in _unwrap(shape))
    if int(np.prod(dims)) != view.data.size:
        raise UtlxInterpreterError(f"local_reshape: {list(dims)} does not have the {view.data.size} elements of "
                                   f"{view.name}{where(kernel_location())}")
    if view.perm is not None or view.reinterpret is not None:
        raise UtlxInterpreterError(f"local_reshape: {view.name} is already a transposed/reinterpreted view")
    return BufferView(view.alloc, view.index, view.slices, None, (view.dtype, dims))


def _indexed(view: BufferView, indices: Any, axis: Any, op: str) -> tuple[np.ndarray, int]:
    idx = _compat.tensor_data(indices).astype(np.int64)
    ax = _compat.to_int(axis, f"{op} axis")
    if idx.ndim != view.data.ndim or not 0 <= ax < idx.ndim:
        raise UtlxInterpreterError(f"{op}: indices of shape {list(idx.shape)} / axis {ax} do not fit {view.name} of "
                                   f"shape {view.shape}{where(kernel_location(1))}")
    if idx.size and (idx.min() < 0 or idx.max() >= view.shape[ax]):
        raise UtlxInterpreterError(f"{op}: an index is outside 0..{view.shape[ax] - 1} along axis {ax} of "
                                   f"{view.name}{where(kernel_location(1))}")
    return idx, ax


@impl("local_gather")
def local_gather(_semantic: Any, src: Any, indices: Any, axis: Any, token: Any) -> tl.tensor:
    view = _buffer(src, "local_gather", "src")
    current().check_read(view, "local_gather", kernel_location())
    idx, ax = _indexed(view, indices, axis, "local_gather")
    return _compat.make_tensor(np.take_along_axis(view.data, idx, axis=ax).copy(), view.dtype)


@impl("local_scatter")
def local_scatter(_semantic: Any, dst: Any, src: Any, indices: Any, axis: Any, token: Any) -> None:
    view = _buffer(dst, "local_scatter", "dst")
    current().check_write(view, "local_scatter", kernel_location())
    idx, ax = _indexed(view, indices, axis, "local_scatter")
    values = _compat.tensor_data(src)
    if values.shape != idx.shape or src.dtype != view.dtype:
        raise UtlxInterpreterError(f"local_scatter: 'src' must be {view.dtype} of the indices' shape "
                                   f"{list(idx.shape)}{where(kernel_location())}")
    np.put_along_axis(view.data, idx, values, axis=ax)


@impl("dot_scaled")
def dot_scaled(_semantic: Any, lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any,
               acc: Any, fast_math: Any, lhs_k_pack: Any, rhs_k_pack: Any, out_dtype: Any, tiles_per_warp: Any) -> Any:
    if _unwrap(tiles_per_warp) is not None:
        raise UtlxInterpreterError(f"dot_scaled: tiles_per_warp needs Meta's fork{where(kernel_location())}")
    return tl.dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc, fast_math, lhs_k_pack,
                         rhs_k_pack, out_dtype, _semantic=_semantic)


def _not_modelled(name: str, why: str) -> Any:
    def body(_semantic: Any, *args: Any, **kwargs: Any) -> None:
        raise UtlxInterpreterError(f"{name}: {why}{where(kernel_location())}")

    body.__name__ = name
    return body


for _name in ("update_tensor_descriptor", "async_amd_descriptor_load", "async_amd_descriptor_load_fused",
              "async_amd_descriptor_store", "amd_descriptor_prefetch_tensor", "async_amd_descriptor_wait"):
    impl(_name)(_not_modelled(_name, "AMD TDM tensor-descriptor copies (gfx1250) are not implemented by utlx"))
del _name
