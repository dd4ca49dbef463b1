"""The fork's MXFP8 helpers and ``warp_redux`` (fbtriton's ``mxfp8_utils`` / ``warp_ops`` names), against torch.

utlx writes them with plain Triton ops, so the interpreter runs the same code a GPU compiles. The reference:
scale ``2**(e - 127)`` with ``e`` the E8M0 exponent of ``amax / FP8_MAX`` rounded up to a power of two, values
``x / scale`` saturated and rounded to nearest even in FP8.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra.tlx import mxfp8_utils as mx
from triton.language.extra.tlx import warp_ops

FP8 = {"e4m3": (tl.float8e4nv, torch.float8_e4m3fn, 448.0), "e5m2": (tl.float8e5, torch.float8_e5m2, 57344.0)}


def _e8m0_ref(amax: torch.Tensor, fmax: float) -> torch.Tensor:
    ratio = amax.double() / fmax
    e = torch.ceil(torch.log2(ratio.clamp(min=2.0 ** -127))) + 127
    return e.clamp(0, 254).to(torch.int32)


def _quant_ref(x: torch.Tensor, e: torch.Tensor, fdtype: torch.dtype, fmax: float) -> torch.Tensor:
    inv = torch.pow(2.0, 127 - e.double()).float()
    return (x * inv).clamp(-fmax, fmax).to(fdtype)


@triton.jit
def _amax_kernel(a_ptr, e_ptr, s_ptr, N: tl.constexpr, RCP: tl.constexpr):
    r = tl.arange(0, N)
    e, s = mx._fused_amax_to_e8m0(tl.load(a_ptr + r), RCP)
    tl.store(e_ptr + r, e.to(tl.int32))
    tl.store(s_ptr + r, s)


def test_fused_amax_to_e8m0_rounds_up_to_a_power_of_two_and_saturates():
    amax = torch.tensor([0.0, 1e-45, 448.0, 449.0, 1.0, 3.5, 2.0 ** 100, float("inf"), 224.0, 1e38, 7e-3, 896.0,
                         0.5, 447.0, 1e-40, 2.0 ** -130])
    e, s = torch.zeros(16, dtype=torch.int32), torch.zeros(16)
    _amax_kernel[(1,)](amax, e, s, N=16, RCP=1.0 / 448.0)
    ref = _e8m0_ref(amax, 448.0)
    torch.testing.assert_close(e, ref)
    finite = ref < 254
    torch.testing.assert_close(s[finite].double(), torch.pow(2.0, 127 - ref[finite].double()))
    assert (amax[e < 254] / 448.0 <= torch.pow(2.0, e[e < 254].double() - 127)).all()  # nothing saturates


@triton.jit
def _quant_kernel(x_ptr, v_ptr, s_ptr, M: tl.constexpr, K: tl.constexpr, DT: tl.constexpr, MODE: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)[None, :]
    rs = tl.arange(0, K // 32)[None, :]
    x = tl.load(x_ptr + rm * K + rk)
    if MODE == 0:
        s, v = mx._compute_scale_and_quantize(x, 32, DT)
    elif MODE == 1:
        v, s = mx._to_mxfp8_32x32_block(x, 32, DT)
    else:
        amax = tl.max(tl.abs(tl.reshape(x, [M, K // 32, 32])), axis=2)
        v, s = mx._to_mxfp8_block_with_block_amax(x, amax, 32, DT)
    tl.store(v_ptr + rm * K + rk, v.to(tl.uint8, bitcast=True))
    tl.store(s_ptr + rm * (K // 32) + rs, s)


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
@pytest.mark.parametrize("mode", [0, 1, 2], ids=["per-row", "32x32", "block-amax"])
def test_mxfp8_quantization_matches_torch(fmt, mode):
    tdt, fdtype, fmax = FP8[fmt]
    m, k = 64, 64
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(3)) * torch.logspace(-3, 3, m)[:, None]
    v, s = torch.zeros(m, k, dtype=torch.uint8), torch.zeros(m, k // 32, dtype=torch.uint8)
    _quant_kernel[(1,)](x, v, s, M=m, K=k, DT=tdt, MODE=mode)
    amax = x.abs().reshape(m, k // 32, 32).amax(-1)
    if mode == 1:  # one scale per 32 rows x 32 elements
        amax = amax.reshape(m // 32, 32, k // 32).amax(1, keepdim=True).expand(m // 32, 32, k // 32).reshape(m, -1)
    e = _e8m0_ref(amax, fmax)
    torch.testing.assert_close(s.to(torch.int32), e)
    ref = _quant_ref(x, e.repeat_interleave(32, dim=1), fdtype, fmax)
    assert torch.equal(v, ref.view(torch.uint8))
    if mode == 1:  # rows far below their 32-row block's maximum underflow: the bit equality above is the check
        return
    # and it dequantizes to the input within FP8 precision
    deq = v.view(fdtype).float() * torch.pow(2.0, e.double() - 127).float().repeat_interleave(32, dim=1)
    torch.testing.assert_close(deq, x, rtol=0.13 if fmt == "e5m2" else 0.07, atol=1e-30)


@triton.jit
def _cvt_kernel(x_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    tl.store(o_ptr + r, mx._cvt_e4m3x4_f32(x).to(tl.uint8, bitcast=True))
    tl.store(o_ptr + N + r, mx._cvt_e5m2x4_f32(x).to(tl.uint8, bitcast=True))


def test_cvt_saturates_and_rounds_to_nearest_even():
    x = torch.tensor([0.0, 1.0, -1.0, 500.0, -1e6, 1e6, 0.0625, 17.0, 19.0, 3.3, -0.01, 60000.0, 448.0, 1e-9, 240.0,
                      -70000.0])
    o = torch.zeros(32, dtype=torch.uint8)
    _cvt_kernel[(1,)](x, o, N=16)
    assert torch.equal(o[:16], x.clamp(-448, 448).to(torch.float8_e4m3fn).view(torch.uint8))
    assert torch.equal(o[16:], x.clamp(-57344, 57344).to(torch.float8_e5m2).view(torch.uint8))


@triton.jit
def _redux_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    tl.store(o_ptr + rm * N + rn, warp_ops.warp_redux(tl.load(x_ptr + rm * N + rn), OP))


@pytest.mark.parametrize("op", ["max", "min", "abs_max", "abs_min"])
def test_warp_redux_reduces_each_32_rows_and_broadcasts(op):
    m, n = 128, 8
    x = torch.randn(m, n)
    o = torch.zeros(m, n)
    _redux_kernel[(1,)](x, o, M=m, N=n, OP=op)
    g = x.reshape(m // 32, 32, n)
    g = g.abs() if op.startswith("abs") else g
    red = g.amax(1, keepdim=True) if op.endswith("max") else g.amin(1, keepdim=True)
    assert torch.equal(o, red.expand(m // 32, 32, n).reshape(m, n))
