"""Argument helpers shared by the compile-path bodies of every vendor: unwrap, describe, check.

Why here: every trace-time body checks its arguments the same way (constexprs unwrapped, shapes as ints, errors
that name the op and the argument), and these checks run while Triton traces the kernel, so a
``UtlxCompileError`` comes out as a ``CompilationError`` at the user's line.
"""

from __future__ import annotations

from typing import Any

import triton.language as tl
from tritonx.dsl import describe_value, unwrap

from . import values
from .errors import UtlxCompileError

#: Unwrap ``constexpr`` (recursively for tuples/lists): ``tritonx.dsl``'s own helper.
_c = unwrap


def _shape(t: Any) -> list[int]:
    """``t.shape`` as plain ints (tensor shapes hold ``constexpr``s, which print badly). Not ``tritonx.dsl``'s
    ``shape_of``: this also reads the shapes of utlx's buffer and view values, which are no ``tl`` tensors."""
    return [int(_c(s)) for s in t.shape]


def _show(x: Any) -> str:
    """A readable description of an argument for an error message (runtime tensors have no useful repr): how
    ``tritonx.dsl`` describes a value, saying why a tensor is refused where a compile-time value is wanted."""
    x = _c(x)
    if isinstance(x, tl.tensor):
        return f"{describe_value(x)} (not a compile-time value)"
    if isinstance(x, (tuple, list)):
        return "(" + ", ".join(_show(v) for v in x) + ")"
    return describe_value(x)

_CONSTEXPR_HINT = "declare the kernel parameter as tl.constexpr (or use a literal)"


def _ints(op: str, name: str, x: Any) -> list[int]:
    x = _c(x)
    if isinstance(x, int):
        x = (x,)
    try:
        out = [int(_c(v)) for v in x]
    except (TypeError, ValueError):
        raise UtlxCompileError(op, f"'{name}' must be a tuple of compile-time ints, got {_show(x)}",
                               hint=_CONSTEXPR_HINT) from None
    if any(v <= 0 for v in out) and name == "shape":
        raise UtlxCompileError(op, f"'{name}' must be positive, got {out}")
    return out


def _i32(_semantic: Any, x: Any, op: str, name: str) -> Any:
    """An i32 scalar ``ir.value`` for an int, constexpr or scalar tensor."""
    x = tl.core._unwrap_if_constexpr(x)
    if isinstance(x, bool):
        x = int(x)
    if isinstance(x, int):
        return _semantic.builder.get_int32(x)
    if isinstance(x, tl.tensor):
        if x.type.is_block():
            raise UtlxCompileError(op, f"'{name}' must be a scalar, got a tensor of shape {list(x.shape)}")
        if not x.dtype.is_int():
            raise UtlxCompileError(op, f"'{name}' must be an integer, got {x.dtype}")
        if x.dtype != tl.int32:
            x = _semantic.cast(x, tl.int32)
        return x.handle
    raise UtlxCompileError(op, f"'{name}' must be an int or an integer scalar, got {type(x).__name__}")


def _i1(_semantic: Any, x: Any, op: str, name: str) -> Any:
    x = tl.core._unwrap_if_constexpr(x)
    if x is None:
        return _semantic.builder.get_int1(True)
    if isinstance(x, (bool, int)):
        return _semantic.builder.get_int1(bool(x))
    if isinstance(x, tl.tensor) and not x.type.is_block():
        if x.dtype != tl.int1:
            x = _semantic.not_equal(x, _semantic.to_tensor(0)) if x.dtype.is_int() else x
        return x.handle
    raise UtlxCompileError(op, f"'{name}' must be a boolean scalar, got {type(x).__name__}")


def _expect(op: str, value: Any, cls: type, name: str) -> Any:
    if not isinstance(value, cls):
        want = {values.SharedBuffers: "the result of tlx.local_alloc", values.SharedView: "a tlx.local_view",
                values.Barriers: "the result of tlx.alloc_barriers",
                values.BarrierView: "one barrier (tlx.local_view of tlx.alloc_barriers)"}.get(cls, cls.__name__)
        raise UtlxCompileError(op, f"'{name}' must be {want}, got {type(value).__name__}")
    return value


def _tl_name(dtype: Any) -> str:
    """``tl.float16`` for fp16: the spelling a user types."""
    for name in ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                 "float8e4nv", "float8e5"):
        if getattr(tl, name, None) == dtype:
            return f"tl.{name}"
    return str(dtype)


def _dtype_size(dtype: Any) -> int:
    return max(1, dtype.primitive_bitwidth // 8)
