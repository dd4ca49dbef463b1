"""Blackwell semantics under the interpreter: TMEM as storage laid out as lanes x 32-bit columns, tcgen05 MMA
completion through barriers (in issue order per task), and the interpreter gaps Meta's Blackwell tutorials hit
(``tl.map_elementwise``, ``min``/``max`` on tensors, shifts by >= the width, packed-fp32 inline PTX, libdevice
stubs, ``float8_e8m0fnu`` arguments). Each checked against torch, or against the error it must raise."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
import triton.language.extra.tlx as tlx
from triton.language.extra.libdevice import fast_dividef
from utlx.interpreter import UtlxHazardError, UtlxInterpreterError

M, N, K = 128, 32, 32


def _cause(info: pytest.ExceptionInfo, kind: type[BaseException]) -> BaseException:
    exc: BaseException | None = info.value
    while exc is not None and not isinstance(exc, kind):
        exc = exc.__cause__ or exc.__context__
    assert exc is not None, f"expected a {kind.__name__}, got {info.value!r}"
    return exc


def _fp16(*shape: int, seed: int = 0) -> torch.Tensor:
    return (torch.randn(shape, generator=torch.Generator().manual_seed(seed)) / 4).to(torch.float16)


# ------------------------------------------------------------------------- tcgen05 MMA into a TMEM accumulator


@triton.jit
def _tcgen05_gemm(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, WAIT: tl.constexpr,
                  TWICE: tl.constexpr, MODE: tl.constexpr):
    """c = a @ b (TWICE: a @ b issued twice into one accumulator, the second accumulating: c = 2 a @ b).

    MODE 0: mBarriers on the MMA; 1: force_async + tcgen05_commit; 2: synchronous (no barrier).
    """
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a_s = tlx.local_alloc((M, K), tl.float16, 1)[0]
    b_s = tlx.local_alloc((K, N), tl.float16, 1)[0]
    tlx.local_store(a_s, tl.load(a_ptr + rm[:, None] * K + rk[None, :]))
    tlx.local_store(b_s, tl.load(b_ptr + rk[:, None] * N + rn[None, :]))
    tlx.fence_async_shared()
    acc = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)[0]
    bar = tlx.alloc_barriers(1)[0]
    if MODE == 0:
        tlx.async_dot(a_s, b_s, acc, use_acc=False, mBarriers=[bar])
        if TWICE:
            tlx.async_dot(a_s, b_s, acc, use_acc=True, mBarriers=[bar])
    elif MODE == 1:
        tlx.async_dot(a_s, b_s, acc, use_acc=False, force_async=True)
        tlx.tcgen05_commit(bar)
    else:
        tlx.async_dot(a_s, b_s, acc, use_acc=False)
    if WAIT:
        if TWICE:
            tlx.barrier_wait(bar, 1)  # the second completion (phase 1): both MMAs are done
        else:
            tlx.barrier_wait(bar, 0)
    c = tlx.local_load(acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def _gemm(wait: bool, twice: bool = False, mode: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = _fp16(M, K, seed=1), _fp16(K, N, seed=2)
    c = torch.zeros(M, N)
    _tcgen05_gemm[(1,)](a, b, c, M=M, N=N, K=K, WAIT=wait, TWICE=twice, MODE=mode)
    return c, (2 if twice else 1) * (a.float() @ b.float())


@pytest.mark.parametrize("mode", [0, 1], ids=["mBarriers", "force_async+tcgen05_commit"])
def test_reading_accumulator_before_the_mma_barrier_wait_is_caught(mode):
    with pytest.raises(Exception) as info:
        _gemm(wait=False, mode=mode)
    msg = str(_cause(info, UtlxHazardError))
    assert "local_load reads" in msg and "while the async_dot into" in msg and "may still be writing it" in msg, msg
    assert re.search(r"test_interp_blackwell\.py:\d+ in _tcgen05_gemm: `c = tlx.local_load\(acc\)`", msg), msg


@pytest.mark.parametrize("mode", [0, 1], ids=["mBarriers", "force_async+tcgen05_commit"])
def test_reading_accumulator_after_the_mma_barrier_wait_is_right(mode):
    c, ref = _gemm(wait=True, mode=mode)
    torch.testing.assert_close(c, ref, atol=1e-3, rtol=1e-3)


def test_mma_without_barriers_is_synchronous():
    # no mBarriers, no force_async: the compiled tcgen05 MMA is waited for at once; reading it is no hazard
    c, ref = _gemm(wait=False, mode=2)
    torch.testing.assert_close(c, ref, atol=1e-3, rtol=1e-3)


def test_mmas_of_one_task_into_one_accumulator_run_in_issue_order():
    # the second MMA accumulates into the TMEM the first is still writing: ordered by PTX, so no hazard
    c, ref = _gemm(wait=True, twice=True)
    torch.testing.assert_close(c, ref, atol=1e-3, rtol=1e-3)


@triton.jit
def _overwrite_operand(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, WAIT: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a_s = tlx.local_alloc((M, K), tl.float16, 1)[0]
    b_s = tlx.local_alloc((K, N), tl.float16, 1)[0]
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    tlx.local_store(a_s, a)
    tlx.local_store(b_s, tl.load(b_ptr + rk[:, None] * N + rn[None, :]))
    tlx.fence_async_shared()
    acc = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)[0]
    bar = tlx.alloc_barriers(1)[0]
    tlx.async_dot(a_s, b_s, acc, use_acc=False, mBarriers=[bar])
    if WAIT:
        tlx.barrier_wait(bar, 0)
    tlx.local_store(a_s, a * 2)
    if not WAIT:
        tlx.barrier_wait(bar, 0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tlx.local_load(acc))


def test_overwriting_an_mma_operand_before_its_barrier_wait_is_caught():
    a, b = _fp16(M, K), _fp16(K, N)
    with pytest.raises(Exception) as info:
        _overwrite_operand[(1,)](a, b, torch.zeros(M, N), M=M, N=N, K=K, WAIT=False)
    msg = str(_cause(info, UtlxHazardError))
    assert "local_store overwrites" in msg and "may still be using it" in msg, msg


def test_overwriting_an_mma_operand_after_its_barrier_wait_passes():
    a, b = _fp16(M, K), _fp16(K, N)
    c = torch.zeros(M, N)
    _overwrite_operand[(1,)](a, b, c, M=M, N=N, K=K, WAIT=True)
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-3, rtol=1e-3)


# ------------------------------------------------------------------------- TMEM layout: reuse= aliases by column


@triton.jit
def _tmem_columns(x_ptr, out_ptr, col_ptr, M: tl.constexpr, N: tl.constexpr, COL: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    tile = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)
    column = tlx.local_alloc((M, 1), tl.float32, N, tlx.storage_kind.tmem, reuse=tile)
    halves = tlx.local_alloc((M, N), tl.float16, 2, tlx.storage_kind.tmem, reuse=tile)
    tlx.local_store(tile[0], tl.load(x_ptr + rm[:, None] * N + rn[None, :]))
    tl.store(col_ptr + rm[:, None], tlx.local_load(column[COL]))  # column COL of the tile
    tlx.local_store(halves[1], tl.zeros((M, N), tl.float16))  # fp16 two to a column: the tile's upper half
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tlx.local_load(tile[0]))


def test_tmem_reuse_aliases_by_lane_and_column():
    m, n, col = 128, 16, 5
    x = torch.randn(m, n)
    out, column = torch.zeros(m, n), torch.zeros(m, 1)
    _tmem_columns[(1,)](x, out, column, M=m, N=n, COL=col)
    torch.testing.assert_close(column[:, 0], x[:, col], atol=0, rtol=0)
    torch.testing.assert_close(out[:, : n // 2], x[:, : n // 2], atol=0, rtol=0)  # lower half kept
    assert torch.all(out[:, n // 2:] == 0)  # upper half: the zeros stored through the fp16 view


@triton.jit
def _tmem_reinterpret(y_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    tile = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)[0]
    tlx.local_store(tile, tl.zeros((M, N), tl.float32) - 1.0)
    narrow = tlx.local_reinterpret(tile, tl.float16)  # same shape, fp16 two to a column from column 0
    tlx.local_store(narrow, tl.load(y_ptr + rm[:, None] * N + rn[None, :]))
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tlx.local_load(tile).to(tl.int32, bitcast=True))


def test_tmem_reinterpret_keeps_the_shape_and_packs_from_the_first_column():
    m, n = 128, 16
    y = torch.randn(m, n).to(torch.float16)
    out = torch.zeros(m, n, dtype=torch.int32)
    _tmem_reinterpret[(1,)](y, out, M=m, N=n)
    assert torch.equal(out[:, : n // 2], y.contiguous().view(torch.int32))  # fp16 pairs in the leading columns
    assert torch.all(out[:, n // 2:] == torch.tensor(-1.0).view(torch.int32))  # the rest untouched


# ------------------------------------------------------------------------- TMA store: the compiler's fence


@triton.jit
def _tma_store_unfenced(x_ptr, desc, N: tl.constexpr):
    rn = tl.arange(0, N)
    buf = tlx.local_alloc((N, N), tl.float32, 1)[0]
    tlx.local_store(buf, tl.load(x_ptr + rn[:, None] * N + rn[None, :]))
    tlx.async_descriptor_store(desc, buf, [0, 0])  # the compiler inserts the fence.proxy.async here
    tlx.async_descriptor_store_wait(0)


def test_tma_store_after_local_store_is_ordered_as_compiled():
    from triton.tools.tensor_descriptor import TensorDescriptor

    x, y = torch.randn(32, 32), torch.zeros(32, 32)
    _tma_store_unfenced[(1,)](x, TensorDescriptor.from_tensor(y, [32, 32]), N=32)
    assert torch.equal(x, y)


# ------------------------------------------------------------------------- Triton constructs the tutorials use


@triton.jit
def _relu_branching(x, t):
    if x > t:
        return x
    else:
        return t * 0.0


@triton.jit
def _mask_scalar(qk, limit, s, i):
    cur = max(limit - s, 0)
    mask = -1 << cur
    return tl.where((mask & (1 << i)) == 0, qk, -float("inf"))


@triton.jit
def _elementwise(x_ptr, lim_ptr, o1_ptr, o2_ptr, N: tl.constexpr):
    rows = tl.arange(0, N)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    lim = tl.load(lim_ptr + rows)
    tl.store(o1_ptr + rows * N + cols, tl.map_elementwise(_relu_branching, x, 0.25))
    tl.store(o2_ptr + rows * N + cols, tl.map_elementwise(_mask_scalar, x, lim, cols & ~0xF, cols & 0xF))


def test_map_elementwise_runs_branch_free_bodies_on_whole_tensors():
    # element by element only where the body branches in Python (Meta's causal mask must not: 128x128 calls)
    from utlx.interpreter.map_elementwise import _has_control_flow

    assert not _has_control_flow(_mask_scalar) and _has_control_flow(_relu_branching)


def test_map_elementwise_min_max_and_wide_shifts():
    n = 32
    x = torch.randn(n, n)
    lim = torch.tensor([-3, 0, 1, 5, 15, 16, 17, 31, 32, 33, 40, 70] * 3, dtype=torch.int32)[:n, None]
    o1, o2 = torch.zeros(n, n), torch.zeros(n, n)
    _elementwise[(1,)](x, lim, o1, o2, N=n)
    torch.testing.assert_close(o1, torch.where(x > 0.25, x, 0.0))
    # causal-style mask: keep column j while j < limit (``-1 << k`` is 0 for k >= 32 on the GPU)
    torch.testing.assert_close(o2, torch.where(torch.arange(n)[None, :] < lim, x, -float("inf")))


@triton.jit
def _shifts(a_ptr, s_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r)
    s = tl.load(s_ptr + r)
    tl.store(o_ptr + r, a << s)
    tl.store(o_ptr + N + r, a >> s)  # arithmetic for int32
    tl.store(o_ptr + 2 * N + r, (a.to(tl.uint32, bitcast=True) >> s.to(tl.uint32)).to(tl.int32, bitcast=True))
    tl.store(o_ptr + 3 * N + r, min(a, s))


def test_shifts_by_the_width_or_more_clamp_as_ptx():
    a = torch.tensor([-1, 5, -8, 7, 1, -1, 3, -5], dtype=torch.int32)
    s = torch.tensor([0, 1, 31, 32, 33, 40, 64, 100], dtype=torch.int32)
    o = torch.zeros(32, dtype=torch.int32)
    _shifts[(1,)](a, s, o, N=8)
    av, sv = a.numpy().astype(np.int64), s.numpy()
    shl = np.where(sv >= 32, 0, (av << np.minimum(sv, 31)) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    ashr = np.where(sv >= 32, np.where(av < 0, -1, 0), av >> np.minimum(sv, 31)).astype(np.int32)
    lshr = np.where(sv >= 32, 0, (av & 0xFFFFFFFF) >> np.minimum(sv, 31)).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(o.numpy(), np.concatenate([shl, ashr, lshr, np.minimum(av, sv)]))


@triton.jit
def _fma_f32x2(a, b, c):
    return tl.inline_asm_elementwise(
        """
        {
            .reg .b64 ra, rb, rc, rd;
            mov.b64 ra, { $2, $3 };
            mov.b64 rb, { $4, $5 };
            mov.b64 rc, { $6, $7 };
            fma.rn.f32x2 rd, ra, rb, rc;
            mov.b64 { $0, $1 }, rd;
        }
        """, "=r,=r,r,r,r,r,r,r", [a, b, c], dtype=tl.float32, is_pure=True, pack=2)


@triton.jit
def _tanh_approx(x):
    return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def _popc(x):
    return tl.inline_asm_elementwise("popc.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)


@triton.jit
def _asm(x_ptr, o_ptr, N: tl.constexpr, UNKNOWN: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    if UNKNOWN:
        tl.store(o_ptr + r, _popc(x.to(tl.int32)).to(tl.float32))
    else:
        tl.store(o_ptr + r, _fma_f32x2(x, x, 1.0))
        tl.store(o_ptr + N + r, _tanh_approx(x))
        tl.store(o_ptr + 2 * N + r, fast_dividef(x, 1.0 + tl.exp(-x)))


def test_packed_fp32_inline_ptx_and_libdevice_stubs():
    x = torch.randn(16)
    o = torch.zeros(48)
    _asm[(1,)](x, o, N=16, UNKNOWN=False)
    torch.testing.assert_close(o[:16], x * x + 1.0)
    torch.testing.assert_close(o[16:32], torch.tanh(x))
    torch.testing.assert_close(o[32:], x / (1.0 + torch.exp(-x)))


def test_other_inline_asm_is_refused_by_name():
    with pytest.raises(Exception) as info:
        _asm[(1,)](torch.randn(16), torch.zeros(48), N=16, UNKNOWN=True)
    msg = str(_cause(info, UtlxInterpreterError))
    assert "inline_asm_elementwise" in msg and "['popc.b32']" in msg, msg


@triton.jit
def _bytes(s_ptr, o_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o_ptr + r, tl.load(s_ptr + r).to(tl.int32))


def test_float8_e8m0fnu_tensors_are_u8_arguments():
    exps = torch.tensor([0, 1, 126, 127, 128, 200, 254, 255], dtype=torch.uint8)
    o = torch.zeros(8, dtype=torch.int32)
    _bytes[(1,)](exps.view(torch.float8_e8m0fnu), o, N=8)
    torch.testing.assert_close(o, exps.to(torch.int32))
