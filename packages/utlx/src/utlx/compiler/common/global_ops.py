"""TLX descriptor ops that targets without TMA cannot compile, and the checks ``prefetch`` makes on every vendor.

- ``allocate_tensor_descriptor`` / ``reinterpret_tensor_descriptor``: descriptors stored in, and read back from,
  global memory. NVIDIA targets compile them (``utlx.compiler.nvidia.desc_slots``: one device-side descriptor per
  slot); elsewhere they are compile errors that name the op and the way that compiles.
- ``prefetch``: each vendor's body (``utlx.compiler.nvidia.global_ops``: PTX; ``utlx.compiler.amd.ops``: nothing,
  gfx9 has no prefetch instruction) checks its arguments with :func:`check_prefetch`.

NVIDIA's own global-memory ops (``async_store``, device-side ``make_tensor_descriptor``, the TMA prefetch) are in
``utlx.compiler.nvidia.global_ops``.
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx.language._dispatch import register_compiler_impl

from .args import _c, _show
from .errors import UtlxCompileError
from .target import from_semantic

_DEVICE_DESCRIPTORS_HINT = ("create the descriptor where it is used with tlx.make_tensor_descriptor(None, base, shape, "
                            "strides, block_shape) (or tl.make_tensor_descriptor), or pass it from the host")


@register_compiler_impl("allocate_tensor_descriptor")
def allocate_tensor_descriptor(_semantic: Any, num: Any) -> Any:
    """Not available on this target (see the module doc): a compile error naming the alternative."""
    raise UtlxCompileError("allocate_tensor_descriptor", "global storage for descriptors written and read by the "
                           "kernel cannot be expressed on stock Triton", target=from_semantic(_semantic).name,
                           hint=_DEVICE_DESCRIPTORS_HINT)


@register_compiler_impl("reinterpret_tensor_descriptor")
def reinterpret_tensor_descriptor(_semantic: Any, desc_ptr: Any, block_shape: Any, dtype: Any) -> Any:
    """Not available on this target (see the module doc): a compile error naming the alternative."""
    raise UtlxCompileError("reinterpret_tensor_descriptor", "reading a descriptor back from global memory cannot be "
                           "expressed on stock Triton", target=from_semantic(_semantic).name,
                           hint=_DEVICE_DESCRIPTORS_HINT)


def check_prefetch(_semantic: Any, pointer: Any, level: Any, tensormap: Any) -> tuple[str, Any]:
    """The checks every vendor's ``prefetch`` makes: ``(level, pointer)`` or a compile error naming the argument."""
    op = "prefetch"
    target = from_semantic(_semantic)
    if _c(tensormap):
        raise UtlxCompileError(op, "tensormap=True (prefetching a TMA descriptor) is not supported by utlx" +
                               ("; TMA descriptors do not exist on AMD" if target.is_hip else ""), target=target.name)
    lvl = _c(level)
    if lvl not in ("L1", "L2"):
        raise UtlxCompileError(op, f"level must be 'L1' or 'L2', got {_show(level)}")
    ptr = _c(pointer)
    if not isinstance(ptr, tl.tensor) or not ptr.dtype.is_ptr():
        raise UtlxCompileError(op, f"'pointer' must be a pointer or a tensor of pointers, got {_show(pointer)}")
    return lvl, ptr
