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
from utlx.language import warp_ops as _warp

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


# --------------------------------------------------------------------------------------------------------------
# The fork's finer-grained helpers (fbtriton's mxfp8_utils), same contracts, written with plain Triton ops.


@triton.jit
def _fused_amax_to_e8m0(amax, max_norm_rcp):
    """(E8M0 exponent as uint32, 1 / scale as float32) for block maxima ``amax``.

    The scale is ``amax * max_norm_rcp`` rounded UP to a power of two and saturated to the finite E8M0 range
    (PTX ``cvt.rp.satfinite.ue8m0x2.f32``: exponents 0..254, NaN -> 255); ``1 / scale`` is ``2**(127 - (e - 127))``,
    built from its bits (exponent field ``254 - e``), so it is exact.
    """
    bits = (amax * max_norm_rcp).to(tl.uint32, bitcast=True) & 0x7FFFFFFF
    field = bits >> 23
    mantissa = bits & 0x7FFFFF
    # normal: keep the exponent, one more when any mantissa bit is set; subnormal: 2**-127 (0) or 2**-126 (1)
    up = tl.where(field == 0, (mantissa > 0x400000).to(tl.uint32), field + (mantissa != 0).to(tl.uint32))
    nan = (field == 0xFF) & (mantissa != 0)
    e8m0 = tl.where(nan, 255, tl.minimum(up, 254)).to(tl.uint32)
    inv_scale = ((254 - e8m0) << 23).to(tl.float32, bitcast=True)
    return e8m0, inv_scale


@triton.jit
def _cvt_e4m3x4_f32(a):
    """float32 -> FP8 E4M3, round to nearest even, saturating to +-448 (``cvt.rn.satfinite.e4m3x2``)."""
    return tl.clamp(a, -448.0, 448.0).to(tl.float8e4nv, fp_downcast_rounding="rtne")


@triton.jit
def _cvt_e5m2x4_f32(a):
    """float32 -> FP8 E5M2, round to nearest even, saturating to +-57344 (``cvt.rn.satfinite.e5m2x2``)."""
    return tl.clamp(a, -57344.0, 57344.0).to(tl.float8e5, fp_downcast_rounding="rtne")


@triton.jit
def _amax_to_e8m0_and_quantize(data_input, block_amax, VEC_SIZE: tl.constexpr, dtype: tl.constexpr):
    """(E8M0 scales ``[M, K // VEC_SIZE]`` uint8, FP8 data ``[M, K]``) for float32 ``data_input`` whose block maxima
    ``block_amax`` (``[M, K // VEC_SIZE]``) the caller already has."""
    BLOCK_M: tl.constexpr = data_input.shape[0]
    BLOCK_K: tl.constexpr = data_input.shape[1]
    NUM_SCALES: tl.constexpr = BLOCK_K // VEC_SIZE
    if dtype == tl.float8e4nv:
        FLOAT_MAX: tl.constexpr = 448.0
    else:
        tl.static_assert(dtype == tl.float8e5, "MXFP8: dtype must be tl.float8e4nv or tl.float8e5")
        FLOAT_MAX: tl.constexpr = 57344.0
    e8m0, inv_scale = _fused_amax_to_e8m0(block_amax, 1.0 / FLOAT_MAX)
    blocks = tl.reshape(data_input, [BLOCK_M, NUM_SCALES, VEC_SIZE]) * tl.reshape(inv_scale, [BLOCK_M, NUM_SCALES, 1])
    if dtype == tl.float8e4nv:
        values = _cvt_e4m3x4_f32(blocks)
    else:
        values = _cvt_e5m2x4_f32(blocks)
    return e8m0.to(tl.uint8), tl.reshape(values, [BLOCK_M, BLOCK_K])


@triton.jit
def _compute_scale_and_quantize(data_block, VEC_SIZE: tl.constexpr, dtype: tl.constexpr):
    """(E8M0 scales, FP8 data) of ``data_block``, one scale per ``VEC_SIZE`` elements of a row."""
    BLOCK_M: tl.constexpr = data_block.shape[0]
    NUM_SCALES: tl.constexpr = data_block.shape[1] // VEC_SIZE
    amax = tl.max(tl.abs(tl.reshape(data_block, [BLOCK_M, NUM_SCALES, VEC_SIZE])), axis=2)
    return _amax_to_e8m0_and_quantize(data_block, amax, VEC_SIZE, dtype)


@triton.jit
def _to_mxfp8_32x32_block(data_input, VEC_SIZE: tl.constexpr, dtype: tl.constexpr):
    """(FP8 data, E8M0 scales) with one scale per 32 x 32 block (32 rows of a warp x 32 elements), replicated to
    each row of the block: the scales have shape ``[M, K // 32]``."""
    BLOCK_M: tl.constexpr = data_input.shape[0]
    NUM_SCALES: tl.constexpr = data_input.shape[1] // VEC_SIZE
    tl.static_assert(VEC_SIZE == 32, "MXFP8: VEC_SIZE must be 32")
    tl.static_assert(BLOCK_M % 32 == 0, "MXFP8 32x32: the row count must be a multiple of 32")
    row_amax = tl.max(tl.abs(tl.reshape(data_input, [BLOCK_M, NUM_SCALES, VEC_SIZE])), axis=2)
    scales, values = _amax_to_e8m0_and_quantize(data_input, _warp.warp_redux(row_amax, "max"), VEC_SIZE, dtype)
    return values, scales


@triton.jit
def _to_mxfp8_block_with_block_amax(data_input, block_amax, VEC_SIZE: tl.constexpr, dtype: tl.constexpr):
    """(FP8 data, E8M0 scales) of ``data_input`` from precomputed block maxima (the fork's blockscaled variant)."""
    tl.static_assert(VEC_SIZE == 32, "MXFP8: VEC_SIZE must be 32")
    tl.static_assert(data_input.shape[1] % VEC_SIZE == 0, "MXFP8: the row length must be a multiple of VEC_SIZE")
    scales, values = _amax_to_e8m0_and_quantize(data_input, block_amax, VEC_SIZE, dtype)
    return values, scales


__all__ = ["E4M3_MAX", "E5M2_MAX", "_to_mxfp8_block"]
