"""Kernels with buffer views carried through loops and picked in branches, shared by the compile test (their
TTGIR and PTX: ``compile/test_carried_views.py``) and the interpreter test (their numbers vs torch:
``interpreter/test_interp_carried_views.py``), so both check the same code."""

from __future__ import annotations

import triton
import triton.language as tl
import utlx as tlx


@triton.jit
def offsets(R: tl.constexpr, C: tl.constexpr):
    """Row-major offsets of an ``R x C`` tile."""
    return tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]


@triton.jit
def prev_view(a_ptr, b_ptr, c_ptr, ITERS: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """c = sum over i < ITERS of a @ b_i, each MMA reading the B buffer written one iteration earlier."""
    a_offs = offsets(M, K)
    b_offs = offsets(K, N)
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
    tl.store(c_ptr + offsets(M, N), c)



@triton.jit
def branch_view(a_ptr, b_ptr, c_ptr, pick, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """c = a @ b_pick, the B buffer chosen at run time (``pick`` is 0 or 1) and its view sliced after the branch."""
    a_offs = offsets(M, K)
    b_offs = offsets(K, N)
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
    tl.store(c_ptr + offsets(M, N), c)



@triton.jit
def two_allocs(a_ptr, b_ptr, c_ptr, pick, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """A view of one of two different allocations through a branch (the second ``scf.if`` form)."""
    a_offs = offsets(M, K)
    b_offs = offsets(K, N)
    a = tlx.local_alloc((M, K), tl.float16, 1)
    b0 = tlx.local_alloc((K, N), tl.float16, 1)
    b1 = tlx.local_alloc((K, N), tl.float16, 1)
    acc = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)
    done = tlx.alloc_barriers(1)
    tlx.local_store(a[0], tl.load(a_ptr + a_offs))
    tlx.local_store(b0[0], tl.load(b_ptr + b_offs))
    tlx.local_store(b1[0], tl.load(b_ptr + K * N + b_offs))
    tlx.fence_async_shared()
    if pick == 0:
        chosen = tlx.local_view(b0, 0)
    else:
        chosen = tlx.local_view(b1, 0)
    tlx.async_dot(a[0], chosen, acc[0], use_acc=False, mBarriers=[done[0]])
    tlx.barrier_wait(done[0], 0)
    tl.store(c_ptr + offsets(M, N), tlx.local_load(acc[0]))



@triton.jit
def branch_half(x_ptr, y_ptr, pick, M: tl.constexpr, N: tl.constexpr):
    """The column half ``pick`` of a shared buffer, chosen at run time (Hopper: views are not Blackwell-only)."""
    offs = offsets(M, N)
    half = offsets(M, N // 2)
    buf = tlx.local_alloc((M, N), tl.float16, 1)
    tlx.local_store(buf[0], tl.load(x_ptr + offs))
    if pick == 0:
        part = tlx.local_slice(buf[0], [0, 0], [M, N // 2])
    else:
        part = tlx.local_slice(buf[0], [0, N // 2], [M, N // 2])
    tl.store(y_ptr + half, tlx.local_load(part))
