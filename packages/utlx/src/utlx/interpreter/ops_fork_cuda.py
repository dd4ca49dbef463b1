"""CPU bodies of the fork's ``inline_ptx_lib`` ops: the fp32 arithmetic the packed PTX computes."""

from __future__ import annotations

from typing import Any

import numpy as np
from triton.language import core as tl

from utlx import compat as _compat
from utlx.language._dispatch import register_interpreter_impl as impl


def _f32(value: Any) -> np.ndarray:
    return np.asarray(_compat.tensor_data(value) if isinstance(value, tl.tensor) else value, dtype=np.float32)


def _out(data: np.ndarray) -> tl.tensor:
    return _compat.make_tensor(np.asarray(data, dtype=np.float32), tl.float32)


@impl("_mul_f32x2")
def _mul_f32x2(_semantic: Any, a: Any, b: Any) -> tl.tensor:
    return _out(_f32(a) * _f32(b))


@impl("_sub_f32x2")
def _sub_f32x2(_semantic: Any, a: Any, b: Any) -> tl.tensor:
    return _out(_f32(a) - _f32(b))


@impl("_fma_f32x2")
def _fma_f32x2(_semantic: Any, a: Any, b: Any, c: Any) -> tl.tensor:
    # fused: one rounding of the exact product-sum (float64 holds the fp32 product exactly)
    exact = _f32(a).astype(np.float64) * _f32(b).astype(np.float64) + _f32(c).astype(np.float64)
    return _out(exact.astype(np.float32))


@impl("_reduce_fadd2")
def _reduce_fadd2(_semantic: Any, p0a: Any, p1a: Any, p0b: Any, p1b: Any) -> tuple[tl.tensor, tl.tensor]:
    return _out(_f32(p0a) + _f32(p0b)), _out(_f32(p1a) + _f32(p1b))


@impl("tanh_approx_fp32")
def tanh_approx_fp32(_semantic: Any, x: Any) -> tl.tensor:
    return _out(np.tanh(_f32(x)))
