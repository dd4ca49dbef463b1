"""Block-scaled tcgen05 MMAs under the interpreter: ``tmem_copy`` unpacks TMA's packed-block scales (torchao's
``to_blocked`` swizzle) into a rows x K/32 tensor-memory scales buffer, and ``async_dot_scaled`` computes
``(A * 2^(sA-127)) @ (B * 2^(sB-127))`` for e4m3/e5m2/e2m1 operands in shared or tensor memory, checked against
a float32 torch dequantization (torch's fp8 casts, torchao's fp4 decoding); misuse raises a one-line error."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
import triton.language.extra.tlx as tlx
from torchao.prototype.mx_formats.kernels import f4_unpacked_to_f32, unpack_uint4
from torchao.prototype.mx_formats.utils import to_blocked
from utlx.interpreter import UtlxHazardError, UtlxInterpreterError
from utlx_interp_host import utlx_error as _cause

M, N, K = 128, 128, 256


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _scales(rows: int, k: int, seed: int) -> torch.Tensor:
    """Random e8m0 scale codes 2^-6 .. 2^6 (rows x k/32)."""
    return torch.randint(121, 134, (rows, k // 32), generator=_gen(seed), dtype=torch.uint8)


def _packed(scales: torch.Tensor) -> torch.Tensor:
    """``scales`` in TMA's packed block layout [1, rows/128, cols/4, 2, 256] (torchao's swizzle)."""
    rows, cols = scales.shape
    return to_blocked(scales).reshape(1, rows // 128, cols // 4, 2, 256).contiguous()


def _dequant(values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    return values * torch.exp2(scales.float() - 127).repeat_interleave(32, dim=1)


# ------------------------------------------------------------------------------------------------- tmem_copy


@triton.jit
def _copy_scales(src_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    R: tl.constexpr = ROWS // 128
    C: tl.constexpr = COLS // 4
    smem = tlx.local_alloc((1, R, C, 2, 256), tl.uint8, 1)[0]
    tlx.local_store(smem, tl.reshape(tl.load(src_ptr + tl.arange(0, ROWS * COLS)), (1, R, C, 2, 256)))
    tmem = tlx.local_alloc((ROWS, COLS), tl.uint8, 1, tlx.storage_kind.tmem)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.tmem_copy(smem, tmem)
    tlx.tcgen05_commit(bar)
    tlx.barrier_wait(bar, 0)
    rr = tl.arange(0, ROWS)
    rc = tl.arange(0, COLS)
    tl.store(out_ptr + rr[:, None] * COLS + rc[None, :], tlx.local_load(tmem))


def test_tmem_copy_unpacks_the_packed_block_layout():
    scales = torch.randint(0, 256, (256, 8), generator=_gen(3), dtype=torch.uint8)
    out = torch.zeros_like(scales)
    _copy_scales[(1,)](_packed(scales), out, ROWS=256, COLS=8)
    assert torch.equal(out, scales)


@triton.jit
def _copy_then_load_early(src_ptr, out_ptr):
    smem = tlx.local_alloc((1, 1, 1, 2, 256), tl.uint8, 1)[0]
    tlx.local_store(smem, tl.reshape(tl.load(src_ptr + tl.arange(0, 512)), (1, 1, 1, 2, 256)))
    tmem = tlx.local_alloc((128, 4), tl.uint8, 1, tlx.storage_kind.tmem)[0]
    tlx.tmem_copy(smem, tmem)
    rr = tl.arange(0, 128)
    tl.store(out_ptr + rr[:, None] * 4 + tl.arange(0, 4)[None, :], tlx.local_load(tmem))


def test_reading_a_tmem_copy_before_its_commit_is_caught():
    with pytest.raises(Exception) as info:
        _copy_then_load_early[(1,)](torch.zeros(512, dtype=torch.uint8), torch.zeros(128, 4, dtype=torch.uint8))
    err = _cause(info)
    assert isinstance(err, UtlxHazardError)
    assert "tmem_copy" in str(err) and "_copy_then_load_early" in str(err)


# ------------------------------------------------------------------------------------------ async_dot_scaled


@triton.jit
def _scaled_gemm(a_ptr, b_ptr, as_ptr, bs_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                 KA: tl.constexpr, KB: tl.constexpr, FMT_A: tl.constexpr, FMT_B: tl.constexpr,
                 A_TMEM: tl.constexpr, SCALES_TMEM: tl.constexpr, ACCUMULATE: tl.constexpr):
    """c = (A * sA) @ (B * sB)^T (ACCUMULATE: issued twice, the second accumulating, c = 2 x that).

    A is M x KA (KA = K, or K/2 packed fp4), B is N x KB given to the MMA transposed; scales come packed (TMA's
    layout) and are used from shared memory or, SCALES_TMEM, copied into tensor memory first."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    ra = tl.arange(0, KA)
    rb = tl.arange(0, KB)
    a_vals = tl.load(a_ptr + rm[:, None] * KA + ra[None, :])
    b_s = tlx.local_alloc((N, KB), b_ptr.dtype.element_ty, 1)[0]
    tlx.local_store(b_s, tl.load(b_ptr + rn[:, None] * KB + rb[None, :]))
    if A_TMEM:
        a_buf = tlx.local_alloc((M, KA), a_ptr.dtype.element_ty, 1, tlx.storage_kind.tmem)[0]
    else:
        a_buf = tlx.local_alloc((M, KA), a_ptr.dtype.element_ty, 1)[0]
    tlx.local_store(a_buf, a_vals)
    SC: tl.constexpr = K // 32 // 4
    as_s = tlx.local_alloc((1, M // 128, SC, 2, 256), tl.uint8, 1)[0]
    bs_s = tlx.local_alloc((1, N // 128, SC, 2, 256), tl.uint8, 1)[0]
    tlx.local_store(as_s, tl.reshape(tl.load(as_ptr + tl.arange(0, M * K // 32)), (1, M // 128, SC, 2, 256)))
    tlx.local_store(bs_s, tl.reshape(tl.load(bs_ptr + tl.arange(0, N * K // 32)), (1, N // 128, SC, 2, 256)))
    tlx.fence_async_shared()
    acc = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)[0]
    bar = tlx.alloc_barriers(1)[0]
    if SCALES_TMEM:
        as_t = tlx.local_alloc((M, K // 32), tl.uint8, 1, tlx.storage_kind.tmem)[0]
        bs_t = tlx.local_alloc((N, K // 32), tl.uint8, 1, tlx.storage_kind.tmem)[0]
        tlx.tmem_copy(as_s, as_t)
        tlx.tmem_copy(bs_s, bs_t)
        a_scale = as_t
        b_scale = bs_t
    else:
        a_scale = as_s
        b_scale = bs_s
    tlx.async_dot_scaled(a_buf, tlx.local_trans(b_s), acc, a_scale, FMT_A, b_scale, FMT_B, use_acc=False,
                         mBarriers=[bar])
    if ACCUMULATE:
        tlx.async_dot_scaled(a_buf, tlx.local_trans(b_s), acc, a_scale, FMT_A, b_scale, FMT_B, use_acc=True,
                             mBarriers=[bar])
        tlx.barrier_wait(bar, 1)
    else:
        tlx.barrier_wait(bar, 0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tlx.local_load(acc))


_FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def _operand(fmt: str, rows: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(kernel data, its float32 values) of a rows x K operand in ``fmt``."""
    if fmt == "e2m1":
        packed = torch.randint(0, 256, (rows, K // 2), generator=_gen(seed), dtype=torch.uint8)
        return packed, f4_unpacked_to_f32(unpack_uint4(packed).view(rows, K))
    data = (torch.randn((rows, K), generator=_gen(seed)) * 2).to(_FP8[fmt])
    return data, data.float()


def _run(fmt_a: str, fmt_b: str, *, a_tmem: bool = False, scales_tmem: bool = False, accumulate: bool = False
         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(kernel result, float32 reference, per-element bound on their difference)."""
    (a, a_f), (b, b_f) = _operand(fmt_a, M, 1), _operand(fmt_b, N, 2)
    sa, sb = _scales(M, K, 3), _scales(N, K, 4)
    c = torch.zeros(M, N)
    _scaled_gemm[(1,)](a, b, _packed(sa), _packed(sb), c, M=M, N=N, K=K, KA=a.shape[1], KB=b.shape[1], FMT_A=fmt_a,
                       FMT_B=fmt_b, A_TMEM=a_tmem, SCALES_TMEM=scales_tmem, ACCUMULATE=accumulate)
    a_d, b_d = _dequant(a_f, sa), _dequant(b_f, sb)
    times = 2 if accumulate else 1
    return c, times * (a_d @ b_d.T), times * _fp32_sum_bound(a_d, b_d)


def _fp32_sum_bound(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """How far two float32 dot products of the same exact terms may differ when summed in different orders:
    the products of fp8/fp4 values and power-of-two scales are exact in float32, so only the K additions round
    (each order is within K * eps/2 * sum|a_k b_k| of the exact sum; twice that, plus a margin for ``use_acc``).
    The interpreter and torch (numpy / BLAS builds differ per Python) sum in different orders, so an absolute
    1e-3 is too tight for sums in the thousands; a wrong scale layout or exponent is off by O(|result|)."""
    return 2 * (K + 1) * torch.finfo(torch.float32).eps * (a.abs() @ b.abs().T) + 1e-6


def _assert_within(c: torch.Tensor, ref: torch.Tensor, bound: torch.Tensor) -> None:
    err = (c - ref).abs()
    worst = int(torch.argmax(err - bound))
    assert bool((err <= bound).all()), (
        f"{int((err > bound).sum())} elements beyond the float32 summation bound; worst at {divmod(worst, N)}: "
        f"|diff| {err.flatten()[worst]:.3g} > bound {bound.flatten()[worst]:.3g}")


@pytest.mark.parametrize(("fmt_a", "fmt_b"), [("e4m3", "e4m3"), ("e5m2", "e4m3"), ("e2m1", "e2m1"),
                                              ("e4m3", "e2m1")])
def test_async_dot_scaled_matches_the_dequantized_product(fmt_a, fmt_b):
    c, ref, bound = _run(fmt_a, fmt_b)
    assert ref.abs().max() > 1.0  # the scales matter: a wrong layout or exponent would be far off
    _assert_within(c, ref, bound)


def test_async_dot_scaled_with_scales_and_a_in_tensor_memory():
    c, ref, bound = _run("e4m3", "e4m3", a_tmem=True, scales_tmem=True, accumulate=True)
    _assert_within(c, ref, bound)


def test_ignoring_the_scales_would_not_pass():
    """The check above can fail: the product without scales differs from the reference."""
    (_, a_f), (_, b_f) = _operand("e4m3", M, 1), _operand("e4m3", N, 2)
    c, ref, bound = _run("e4m3", "e4m3")
    with pytest.raises(AssertionError, match="beyond the float32 summation bound"):
        _assert_within(a_f @ b_f.T, ref, bound)
    _assert_within(c, ref, bound)


@triton.jit
def _bad_format(out_ptr):
    a = tlx.local_alloc((128, 64), tl.float8e4nv, 1)[0]
    b = tlx.local_alloc((64, 64), tl.float8e4nv, 1)[0]
    s = tlx.local_alloc((1, 1, 1, 2, 256), tl.uint8, 1)[0]
    acc = tlx.local_alloc((128, 64), tl.float32, 1, tlx.storage_kind.tmem)[0]
    tlx.async_dot_scaled(a, tlx.local_trans(b), acc, s, "e4m3", s, "fp8")


def test_unknown_format_is_a_clear_error():
    with pytest.raises(Exception) as info:
        _bad_format[(1,)](torch.zeros(1))
    err = _cause(info)
    assert isinstance(err, UtlxInterpreterError)
    assert str(err).startswith("async_dot_scaled: 'B_format' must be one of e4m3, e5m2, e2m1, got 'fp8'")
    assert "_bad_format" in str(err)
