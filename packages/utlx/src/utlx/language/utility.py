"""Small helpers of the TLX surface: dtypes, ids, clocks, stochastic rounding.

``dtype_of``, ``size_of`` and ``get_fp8_format_name`` do not depend on the target, so default implementations
for both paths are registered here (a compiler module may still override them by registering again).
"""

from __future__ import annotations

from typing import Any

from triton.language import core as tl

from utlx.language._dispatch import register_compiler_impl, register_interpreter_impl
from utlx.language._op import op


@op
def dtype_of(v, _semantic=None):
    """Element dtype of a pointer tensor, a tensor, or a tensor descriptor (e.g. ``tl.float16``)."""


@op
def size_of(dtype, _semantic=None):
    """Size in bytes of ``dtype``, as a ``tl.constexpr``."""


@op
def get_fp8_format_name(dtype, _semantic=None):
    """The scaled-MMA format name of an FP8 dtype, as a ``tl.constexpr``: "e5m2" (``tl.float8e5``) or
    "e4m3" (``tl.float8e4nv``)."""


@op
def async_task_replica_id(_semantic=None):
    """Index of the running replica of the enclosing ``async_task(replicate=n)`` (0 for the first), a
    ``tl.constexpr``: each replica is its own copy of the task body."""


@op
def thread_id(axis, _semantic=None):
    """Id of the current thread along ``axis`` (0, 1 or 2) of the CTA."""


@op
def clock64(_semantic=None):
    """Current 64-bit clock counter (for timing code regions)."""


@op
def stoch_round(src, dst_ty, rand_bits, _semantic=None):
    """Convert float32 ``src`` to ``dst_ty`` (fp8 e5m2/e4m3, fp16, bf16) with stochastic rounding: the
    ``rand_bits`` (uint32, same shape) are added below the kept mantissa bits before truncation
    (Blackwell ``cvt.rs.satfinite``)."""


@op
def cluster_cta_rank(_semantic=None):
    """Rank of this CTA within its cluster."""


@op
def cluster_size_1d(_semantic=None):
    """Number of CTAs in the cluster."""


def _dtype_of(_semantic: Any, v: Any) -> tl.dtype:
    v = tl._unwrap_if_constexpr(v)
    if isinstance(v, tl.tensor):
        dtype = v.type.scalar if hasattr(v.type, "scalar") else v.type
        if dtype.is_ptr():
            dtype = dtype.element_ty
        return dtype
    if isinstance(v, tl.tensor_descriptor_base):
        return v.dtype
    raise TypeError(f"utlx.dtype_of: expected a tensor, pointer or tensor descriptor, got {type(v).__name__}")


_FP8_FORMAT_NAMES = {"fp8e5": "e5m2", "fp8e4nv": "e4m3"}


def _get_fp8_format_name(_semantic: Any, dtype: Any) -> tl.constexpr:
    dtype = tl._unwrap_if_constexpr(dtype)
    name = _FP8_FORMAT_NAMES.get(getattr(dtype, "name", None))
    if name is None:
        raise TypeError(f"utlx.get_fp8_format_name: expected tl.float8e5 or tl.float8e4nv, got {dtype!r}")
    return tl.constexpr(name)


def _size_of(_semantic: Any, dtype: Any) -> tl.constexpr:
    dtype = tl._unwrap_if_constexpr(dtype)
    if not isinstance(dtype, tl.dtype):
        raise TypeError(f"utlx.size_of: expected a dtype, got {type(dtype).__name__}")
    return tl.constexpr(dtype.primitive_bitwidth // 8)


for _register in (register_compiler_impl, register_interpreter_impl):
    _register("dtype_of")(_dtype_of)
    _register("size_of")(_size_of)
    _register("get_fp8_format_name")(_get_fp8_format_name)
del _register

__all__ = [
    "async_task_replica_id",
    "clock64",
    "cluster_cta_rank",
    "cluster_size_1d",
    "dtype_of",
    "get_fp8_format_name",
    "size_of",
    "stoch_round",
    "thread_id",
]
