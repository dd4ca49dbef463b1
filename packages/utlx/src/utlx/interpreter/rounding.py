"""Stochastic rounding of float32 values to narrower float formats, on numpy arrays.

Why a model of the rounding and not a cast: ``stoch_round`` (Blackwell ``cvt.rs.satfinite``) rounds each
value to one of its two neighbours in the target format, away from zero when the discarded part of the
value plus the random bits carries into the kept part. Taking the random bits from the bottom of
``rand_bits``, a value ``x`` between neighbours ``lo`` and ``lo + ulp`` becomes ``lo + ulp`` with
probability ``(|x| - |lo|) / ulp``, so rounding is unbiased on average; ``rand_bits == 0`` truncates
toward zero. ``satfinite``: magnitudes beyond the format's largest finite value (infinities included)
become that value; NaN stays NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: ``mantissa`` stored fraction bits, smallest normal exponent, largest finite."""

    name: str
    mantissa: int
    min_exponent: int
    max_finite: float


FORMATS = {
    "fp16": FloatFormat("fp16", 10, -14, 65504.0),
    "bf16": FloatFormat("bf16", 7, -126, float(np.float32(3.3895313892515355e38))),
    "fp8e4nv": FloatFormat("fp8e4nv", 3, -6, 448.0),
    "fp8e5": FloatFormat("fp8e5", 2, -14, 57344.0),
}

#: Random bits one value can use (``rand_bits`` is one uint32 per value).
_RAND_BITS = 32


def stochastic_round(values: np.ndarray, rand_bits: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """``values`` (float32) rounded stochastically to ``fmt``, returned as float32 (exactly representable
    in ``fmt``). The low ``d`` bits of each ``rand_bits`` word are added to the ``d`` bits the rounding
    discards (``d`` is at most 32; for values so small that more are discarded, only the top 32 count)."""
    x = np.asarray(values, dtype=np.float32).astype(np.float64)
    rand = np.asarray(rand_bits).astype(np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    mag = np.abs(x)
    regular = np.isfinite(mag) & (mag > 0)
    safe = np.where(regular, mag, 1.0)
    _, e2 = np.frexp(safe)
    exponent = e2.astype(np.int64) - 1  # exact: 2**exponent <= safe < 2**(exponent + 1)
    kept_exponent = np.maximum(exponent, fmt.min_exponent) - fmt.mantissa  # the format's spacing here: 2**k
    input_exponent = np.maximum(exponent, -126) - 23  # float32's spacing here
    discarded = np.clip(kept_exponent - input_exponent, 0, _RAND_BITS).astype(np.uint64)
    ulp = np.exp2(kept_exponent.astype(np.float64))
    scaled = safe / ulp  # exact: a power-of-two scaling
    kept = np.floor(scaled)
    span = np.uint64(1) << discarded
    fraction = np.floor((scaled - kept) * span.astype(np.float64)).astype(np.uint64)
    carry = (fraction + (rand & (span - np.uint64(1)))) >= span
    rounded = np.minimum((kept + carry) * ulp, fmt.max_finite)
    out = np.where(regular, np.copysign(rounded, x), x)  # zeros keep their sign, NaN stays NaN
    out = np.where(np.isinf(x), np.copysign(fmt.max_finite, x), out)
    return out.astype(np.float32)
