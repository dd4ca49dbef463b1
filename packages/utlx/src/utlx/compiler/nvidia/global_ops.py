"""NVIDIA's TLX ops between shared and global memory that stock Triton has no single op for.

- ``async_store(dst, src, size)``: TLX issues one ``cp.async.bulk`` shared -> global copy. Stock Triton
  has no NVIDIA op for it, so utlx reads the buffer into registers (``local_load``) and writes the first
  ``size`` bytes with a masked ``tl.store``. The store is synchronous, which is stronger than TLX's
  (complete before ``async_descriptor_store_wait``), so kernels that wait stay correct.
- ``make_tensor_descriptor(None, base, shape, strides, block_shape)``: Triton's own device-side
  descriptor (``tt.make_tensor_descriptor``; the host must call ``triton.set_allocator``); into a slot of
  ``allocate_tensor_descriptor``: :mod:`.desc_slots`.
- ``async_descriptor_prefetch_tensor``: an L2 prefetch hint with no effect on results. Stock Triton has
  no TMA prefetch op; utlx checks the arguments and emits nothing.
- ``prefetch(pointer, level, mask)``: one ``prefetch.global.L1/L2`` per element (inline PTX, predicated by the
  mask). ``tensormap=True`` (prefetching a TMA descriptor) is not supported. (AMD's body: ``utlx.compiler.amd``.)
"""

from __future__ import annotations

from typing import Any

import triton.language as tl
from triton.language import core as tlc

from utlx.compiler.common import values
from utlx.compiler.common.args import _c, _expect, _show
from utlx.compiler.common.errors import UtlxCompileError
from utlx.compiler.common.global_ops import check_prefetch
from utlx.compiler.common.mem_ops import local_load
from utlx.language._dispatch import register_compiler_impl

from . import desc_slots
from .targets import NVIDIA


@register_compiler_impl("async_store", *NVIDIA)
def async_store(_semantic: Any, dst_global_ptr: Any, src_smem: Any, size: Any) -> None:
    """Copy the first ``size`` bytes of buffer ``src_smem`` to ``dst_global_ptr`` (see the module doc)."""
    op = "async_store"
    view = _expect(op, src_smem, values.SharedView, "src_smem")
    ptr = dst_global_ptr
    if not isinstance(ptr, tl.tensor) or ptr.type.is_block() or not ptr.dtype.is_ptr():
        raise UtlxCompileError(op, f"'dst_global_ptr' must be a scalar pointer, got {_show(ptr)}")
    numel = 1
    for s in view.shape:
        numel *= s
    if numel & (numel - 1):
        raise UtlxCompileError(op, f"the buffer has {numel} elements; utlx copies power-of-two buffers only",
                               hint="slice the buffer (tlx.local_slice) to a power-of-two number of elements")
    elem_bytes = max(1, view.dtype.primitive_bitwidth // 8)
    n = _c(size)
    if isinstance(n, int) and not isinstance(n, bool):
        if n <= 0 or n % 16 or n > numel * elem_bytes:
            raise UtlxCompileError(op, f"'size' must be a positive multiple of 16 bytes within the buffer's "
                                   f"{numel * elem_bytes} bytes, got {n}")
    data = tl.reshape(local_load(_semantic, view), [numel], _semantic=_semantic)
    dst = ptr
    if ptr.dtype.element_ty != view.dtype:
        dst = _semantic.bitcast(ptr, tl.pointer_type(view.dtype, ptr.dtype.address_space))
    # Through the tensor operators (builtins): their semantic signatures differ between Triton versions.
    offs = tl.arange(0, numel, _semantic=_semantic)
    mask = offs.__mul__(elem_bytes, _semantic=_semantic).__lt__(size, _semantic=_semantic)
    tl.store(dst.__add__(offs, _semantic=_semantic), data, mask=mask, _semantic=_semantic)


@register_compiler_impl("make_tensor_descriptor", *NVIDIA)
def make_tensor_descriptor(_semantic: Any, desc_ptr: Any, base: Any, shape: Any, strides: Any, block_shape: Any,
                           padding_option: Any = "zero") -> Any:
    """A device-side TMA descriptor over ``base`` (Triton's ``tt.make_tensor_descriptor``)."""
    op = "make_tensor_descriptor"
    if not isinstance(base, tl.tensor) or not base.dtype.is_ptr():
        raise UtlxCompileError(op, f"'base' must be a pointer, got {_show(base)}")

    def make() -> Any:
        return _semantic.make_tensor_descriptor(base, list(_c(shape)), list(_c(strides)), list(_c(block_shape)),
                                                str(_c(padding_option)))

    if _c(desc_ptr) is not None:  # into a slot of allocate_tensor_descriptor (desc_slots: one descriptor per slot)
        return desc_slots.make_into_slot(_semantic, desc_ptr, make)
    return make()


@register_compiler_impl("async_descriptor_prefetch_tensor", *NVIDIA)
def async_descriptor_prefetch_tensor(_semantic: Any, desc: Any, offsets: Any, pred: Any = None,
                                     eviction_policy: Any = "") -> None:
    """An L2 prefetch hint: arguments checked, nothing emitted (see the module doc)."""
    op = "async_descriptor_prefetch_tensor"
    if not isinstance(desc, tlc.tensor_descriptor_base):
        raise UtlxCompileError(op, f"'desc' must be a tensor descriptor, got {type(desc).__name__}")
    offs = _c(offsets)
    offs = list(offs) if isinstance(offs, (list, tuple)) else [offs]
    if len(offs) != len(desc.block_shape):
        raise UtlxCompileError(op, f"'offsets' needs {len(desc.block_shape)} coordinates, got {len(offs)}")
    if str(_c(eviction_policy) or "") not in ("", "evict_first", "evict_last"):
        raise UtlxCompileError(op, f"eviction_policy must be '', 'evict_first' or 'evict_last', got "
                               f"{_show(eviction_policy)}")


@register_compiler_impl("prefetch", *NVIDIA)
def prefetch(_semantic: Any, pointer: Any, level: Any = "L2", mask: Any = None, tensormap: Any = False) -> None:
    """Prefetch hint for the addresses ``pointer`` (see the module doc)."""
    lvl, ptr = check_prefetch(_semantic, pointer, level, tensormap)
    m = _c(mask)
    m = _semantic.to_tensor(True) if m is None else (m if isinstance(m, tl.tensor) else _semantic.to_tensor(m))
    ptr, m = _semantic.broadcast_impl_value(ptr, m)
    m32 = _semantic.cast(m, tl.int32)
    b = _semantic.builder
    ty = ptr.type.with_element_ty(tl.int32) if ptr.type.is_block() else tl.int32
    text = f"{{ .reg .pred p; setp.ne.b32 p, $2, 0; @p prefetch.global.{lvl} [$1]; mov.u32 $0, 0; }}"
    b.create_inline_asm(text, "=r,l,r", [ptr.handle, m32.handle], [ty.to_ir(b)], False, 1)
