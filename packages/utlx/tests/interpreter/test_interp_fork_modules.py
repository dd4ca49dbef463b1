"""The fork's modules outside tlx (``inline_ptx_lib``, ``subtile_ops``) under the interpreter: their arithmetic
against numpy on fresh random data."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import triton
import triton.language as tl
import utlx
from triton.language.extra.cuda.inline_ptx_lib import (  # the fork's module path, as its tutorials import it
    _fma_f32x2,
    _mul_f32x2,
    _reduce_fadd2,
    _sub_f32x2,
    tanh_approx_fp32,
)
from triton.language.extra.subtile_ops import _join_n_2D, _split_n_2D

torch = pytest.importorskip("torch")


@triton.jit
def _packed(x_ptr, y_ptr, out_ptr, sums_ptr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, _fma_f32x2(_mul_f32x2(x, y), _sub_f32x2(x, y), tanh_approx_fp32(x)))
    s0, s1 = _reduce_fadd2(x, y, y, x)
    tl.store(sums_ptr + offs, s0 - s1)


@triton.jit
def _split_join(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, 16)[:, None] * 64 + tl.arange(0, 64)[None, :]
    parts = _split_n_2D(tl.load(x_ptr + offs), N)
    tl.store(out_ptr + offs, _join_n_2D((parts[1], parts[0]) + parts[2:]))  # noqa: RUF005  (no starred tuples in kernels)


def test_inline_ptx_lib_computes_the_fp32_arithmetic():
    gen = torch.Generator().manual_seed(np.random.randint(2**31))
    x, y = torch.randn(64, generator=gen), torch.randn(64, generator=gen)
    out, sums = torch.empty(64), torch.empty(64)
    _packed[(1,)](x, y, out, sums)
    torch.testing.assert_close(out, x * y * (x - y) + torch.tanh(x), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(sums, torch.zeros(64))  # (x + y) - (y + x)


@pytest.mark.parametrize("n", [2, 4])
def test_split_and_join_are_inverse_column_blocks(n):
    x = torch.randn(16, 64, generator=torch.Generator().manual_seed(np.random.randint(2**31)))
    out = torch.empty_like(x)
    _split_join[(1,)](x, out, n)
    w = 64 // n
    want = torch.cat([x[:, w:2 * w], x[:, :w], *[x[:, i * w:(i + 1) * w] for i in range(2, n)]], dim=1)
    torch.testing.assert_close(out, want, rtol=0, atol=0)


def test_the_modules_resolve_to_utlx():
    assert importlib.import_module("triton.language.extra.subtile_ops") is utlx.language.subtile_ops
