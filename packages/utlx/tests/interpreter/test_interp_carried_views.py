"""Views carried through loops and branches mean the buffer they were made from, under the interpreter too.

The compiled form (``utlx/compiler/common/carried.py``) carries the buffer index; here the same kernels run
interpreted and are checked against torch on random data: the MMA of iteration ``i`` reads the B buffer written at
iteration ``i - 1``, and a branch picks the buffer ``pick`` names.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
import triton.language.extra.tlx as tlx

M, N, K = 128, 32, 32


def _fp16(*shape: int, seed: int) -> torch.Tensor:
    return (torch.randn(shape, generator=torch.Generator().manual_seed(seed)) / 4).to(torch.float16)


@triton.jit
def _prev_view(a_ptr, b_ptr, c_ptr, ITERS: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    a_offs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    b_offs = tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :]
    a = tlx.local_alloc((M, K), tl.float16, 1)
    b = tlx.local_alloc((K, N), tl.float16, 2)
    acc = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)
    done = tlx.alloc_barriers(1)
    tlx.local_store(a[0], tl.load(a_ptr + a_offs))
    tlx.local_store(b[0], tl.load(b_ptr + b_offs))
    tlx.fence_async_shared()
    prev = tlx.local_view(b, 0)
    phase = 0
    for i in range(1, ITERS + 1):
        cur = tlx.local_view(b, i % 2)
        if i < ITERS:
            tlx.local_store(cur, tl.load(b_ptr + i * K * N + b_offs))
            tlx.fence_async_shared()
        tlx.async_dot(a[0], prev, acc[0], use_acc=i > 1, mBarriers=[done[0]])
        tlx.barrier_wait(done[0], phase)
        phase ^= 1
        prev = cur
    c = tlx.local_load(acc[0])
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


@triton.jit
def _branch_view(a_ptr, b_ptr, c_ptr, pick, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    a_offs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    b_offs = tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :]
    a = tlx.local_alloc((M, K), tl.float16, 1)
    b = tlx.local_alloc((K, N), tl.float16, 2)
    acc = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)
    done = tlx.alloc_barriers(1)
    tlx.local_store(a[0], tl.load(a_ptr + a_offs))
    tlx.local_store(b[0], tl.load(b_ptr + b_offs))
    tlx.local_store(b[1], tl.load(b_ptr + K * N + b_offs))
    tlx.fence_async_shared()
    if pick == 0:
        chosen = tlx.local_view(b, 0)
    else:
        chosen = tlx.local_view(b, 1)
    tlx.async_dot(a[0], chosen, acc[0], use_acc=False, mBarriers=[done[0]])
    tlx.barrier_wait(done[0], 0)
    c = tlx.local_load(acc[0])
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


@pytest.mark.parametrize("iters", [1, 3, 4])
def test_mma_reads_the_view_of_the_previous_iteration(iters):
    a = _fp16(M, K, seed=iters)
    b = _fp16(iters, K, N, seed=100 + iters)
    c = torch.empty((M, N), dtype=torch.float32)
    _prev_view[(1,)](a, b, c, ITERS=iters, M=M, N=N, K=K)
    ref = sum(a.float() @ b[i].float() for i in range(iters))
    torch.testing.assert_close(c, ref, atol=1e-2, rtol=1e-3)


@pytest.mark.parametrize("pick", [0, 1])
def test_mma_reads_the_view_a_runtime_branch_picked(pick):
    a = _fp16(M, K, seed=7)
    b = _fp16(2, K, N, seed=8)
    c = torch.empty((M, N), dtype=torch.float32)
    _branch_view[(1,)](a, b, c, pick, M=M, N=N, K=K)
    torch.testing.assert_close(c, a.float() @ b[pick].float(), atol=1e-2, rtol=1e-3)
    other = a.float() @ b[1 - pick].float()
    assert (c - other).abs().max() > 1e-1  # the other buffer would give another product


@triton.jit
def _branch_half(x_ptr, y_ptr, pick, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    half = tl.arange(0, M)[:, None] * (N // 2) + tl.arange(0, N // 2)[None, :]
    buf = tlx.local_alloc((M, N), tl.float16, 1)
    tlx.local_store(buf[0], tl.load(x_ptr + offs))
    if pick == 0:
        part = tlx.local_slice(buf[0], [0, 0], [M, N // 2])
    else:
        part = tlx.local_slice(buf[0], [0, N // 2], [M, N // 2])
    tl.store(y_ptr + half, tlx.local_load(part))


@pytest.mark.parametrize("pick", [0, 1])
def test_local_load_reads_the_slice_a_runtime_branch_picked(pick):
    x = _fp16(64, 64, seed=11 + pick)
    y = torch.empty((64, 32), dtype=torch.float16)
    _branch_half[(1,)](x, y, pick, M=64, N=64)
    torch.testing.assert_close(y, x[:, 32 * pick:32 * (pick + 1)])
