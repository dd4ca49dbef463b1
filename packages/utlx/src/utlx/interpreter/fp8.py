"""Float -> FP8 conversion under the interpreter, as the GPU rounds it.

Why: stock Triton's interpreter (3.6-3.9 ``_convert_float``) rounds a downcast by adding the cut-off bit to the
mantissa without carrying into the exponent and without ties-to-even, so e.g. ``7.9 -> e4m3`` gives 4.0 and
``100 -> e4m3`` gives 104 (the GPU: 8 and 96). MXFP8 kernels quantize every element this way, so their
interpreted results were off by whole binades. NVIDIA's conversion (``cvt.rn.satfinite.e4m3x2/e5m2x2``) rounds to
nearest, ties to even, and saturates to the largest finite value; NaN stays NaN.

How: every FP8 code's value is tabulated once; a value is encoded as the nearer of its two neighbouring codes
(the even code on a tie), after saturating its magnitude.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
from triton.language import core as tl

#: FP8 dtype -> (mantissa bits, exponent bias, largest finite code, NaN code)
FORMATS: dict[Any, tuple[int, int, int, int]] = {
    tl.float8e4nv: (3, 7, 0x7E, 0x7F),
    tl.float8e5: (2, 15, 0x7B, 0x7E),
}


@cache
def _values(dtype: Any) -> np.ndarray:
    """Magnitude of each positive finite code ``0 .. largest`` (increasing)."""
    mant, bias, largest, _ = FORMATS[dtype]
    codes = np.arange(largest + 1)
    exp, frac = codes >> mant, codes & ((1 << mant) - 1)
    return np.where(exp == 0, frac / 2.0 ** mant * 2.0 ** (1 - bias),
                    (1 + frac / 2.0 ** mant) * 2.0 ** (exp.astype(np.float64) - bias))


def encode(values: np.ndarray, dtype: Any) -> np.ndarray:
    """uint8 FP8 codes of float ``values``: round to nearest even, saturating, NaN -> NaN."""
    _, _, largest, nan_code = FORMATS[dtype]
    table = _values(dtype)
    x = np.asarray(values, dtype=np.float64)
    mag = np.minimum(np.abs(np.nan_to_num(x, nan=0.0)), table[-1])
    hi = np.clip(np.searchsorted(table, mag), 1, largest)
    lo = hi - 1
    d_lo, d_hi = mag - table[lo], table[hi] - mag
    code = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0)), hi, lo)
    code = np.where(np.isnan(x), nan_code, code) | np.where(np.signbit(x), 0x80, 0)
    return code.astype(np.uint8)


def _as_float(data: np.ndarray, dtype: Any) -> np.ndarray | None:
    if dtype == tl.float32 or dtype == tl.float16:
        return np.asarray(data).astype(np.float64)
    if dtype == tl.bfloat16:
        return (np.asarray(data).astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return None


def create_fp_to_fp(original: Callable[..., Any]) -> Callable[..., Any]:
    """``InterpreterBuilder.create_fp_to_fp`` with GPU rounding for fp32/fp16/bf16 -> FP8 (round to nearest)."""

    def create(self: Any, src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        dst = dst_type.scalar
        rtz = rounding_mode is not None and "RTZ" in str(rounding_mode).upper()
        values = _as_float(src.data, src.dtype.scalar) if dst in FORMATS and not rtz else None
        if values is None:
            return original(self, src, dst_type, rounding_mode)
        return type(src)(encode(values, dst), dst)

    create.__wrapped__ = original  # type: ignore[attr-defined]
    return create


@cache
def _decode_table(dtype: Any) -> np.ndarray:
    """float32 value of each of the 256 codes of ``dtype`` (e5m2: the codes above the largest finite one are
    inf then NaN; e4m3fn: only its NaN code is not finite)."""
    _, _, largest, nan_code = FORMATS[dtype]
    mag = np.full(128, np.nan)
    mag[:largest + 1] = _values(dtype)
    if nan_code > largest + 1:  # e5m2: 0x7C is infinity
        mag[largest + 1] = np.inf
    return np.concatenate([mag, -mag]).astype(np.float32)


def decode(codes: np.ndarray, dtype: Any) -> np.ndarray:
    """float32 values of uint8 FP8 ``codes`` (the inverse of :func:`encode` on its range)."""
    return _decode_table(dtype)[np.asarray(codes).view(np.uint8)]


#: e2m1 (fp4) magnitudes of codes 0..7; bit 3 is the sign
E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)


def decode_e2m1(packed: np.ndarray, axis: int) -> np.ndarray:
    """float32 values of e2m1 codes packed two per byte along ``axis`` (the low nibble holds the even element,
    as Triton's and the tcgen05 mxf4 operands pack them): the result is twice as long along ``axis``."""
    packed = np.moveaxis(np.asarray(packed).view(np.uint8), axis, -1)
    codes = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(*packed.shape[:-1], -1)
    values = np.where(codes & 0x8, -1.0, 1.0).astype(np.float32) * E2M1_VALUES[codes & 0x7]
    return np.moveaxis(values, -1, axis)
