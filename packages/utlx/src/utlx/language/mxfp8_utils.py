"""MXFP8 (OCP microscaling) conversion inside kernels (TLX's ``mxfp8_utils``).

An MXFP8 block is ``VEC_SIZE`` consecutive elements of a row sharing one E8M0 scale (a biased power-of-two
exponent). The scale is the smallest power of two that brings the block's largest magnitude within the
FP8 format's range, so no element saturates except through rounding; elements are stored as
``value / scale`` in FP8.
"""

from __future__ import annotations

import triton
import triton.language as tl

from utlx.language import mem_ops as _mem

#: Largest finite magnitude of each FP8 element format.
E4M3_MAX = 448.0
E5M2_MAX = 57344.0


@triton.jit
def _mxfp8_quantize(data, VEC_SIZE: tl.constexpr, dtype: tl.constexpr):
    """(E8M0 scales ``[ROWS, COLS // VEC_SIZE]`` as uint8, ``data`` in ``dtype``) for float32 ``data``."""
    ROWS: tl.constexpr = data.shape[0]
    COLS: tl.constexpr = data.shape[1]
    tl.static_assert(COLS % VEC_SIZE == 0, "MXFP8: the row length must be a multiple of VEC_SIZE")
    GROUPS: tl.constexpr = COLS // VEC_SIZE
    if dtype == tl.float8e4nv:
        LIMIT: tl.constexpr = 448.0
    else:
        tl.static_assert(dtype == tl.float8e5, "MXFP8: dtype must be tl.float8e4nv or tl.float8e5")
        LIMIT: tl.constexpr = 57344.0
    blocks = tl.reshape(data, [ROWS, GROUPS, VEC_SIZE])
    ratio_bits = (tl.max(tl.abs(blocks), axis=2) / LIMIT).to(tl.uint32, bitcast=True)
    # round the ratio up to a power of two: keep its exponent, one more when any mantissa bit is set
    exponent = ((ratio_bits >> 23) & 0xFF) + ((ratio_bits & 0x7FFFFF) != 0).to(tl.uint32)
    # 1 / scale = 2**(127 - (exponent - 127)), built from its bits: exact and division-free (an all-zero
    # block has exponent 0 and its values stay 0 whatever they are multiplied by)
    inv_scale = ((254 - exponent) << 23).to(tl.float32, bitcast=True)
    scaled = tl.clamp(blocks * tl.reshape(inv_scale, [ROWS, GROUPS, 1]), -LIMIT, LIMIT)
    return exponent.to(tl.uint8), tl.reshape(scaled, [ROWS, COLS]).to(dtype)


@triton.jit
def _to_mxfp8_block(data_input, data_out_tile, scale_out_tile, VEC_SIZE: tl.constexpr, dtype: tl.constexpr):
    """Quantize the float32 tile ``data_input`` to MXFP8: FP8 values into buffer ``data_out_tile``, E8M0
    scales (uint8, one per ``VEC_SIZE`` elements of a row) into buffer ``scale_out_tile``."""
    scales, values = _mxfp8_quantize(data_input, VEC_SIZE, dtype)
    _mem.local_store(data_out_tile, values)
    _mem.local_store(scale_out_tile, scales)


__all__ = ["E4M3_MAX", "E5M2_MAX", "_to_mxfp8_block"]
