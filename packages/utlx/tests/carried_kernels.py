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
def stage_a_and_two_b(a_ptr, b_ptr, a_view, b0_view, b1_view, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """A into ``a_view`` and the two K x N blocks of B into ``b0_view`` / ``b1_view``, fenced for the MMA."""
    b_offs = offsets(K, N)
    tlx.local_store(a_view, tl.load(a_ptr + offsets(M, K)))
    tlx.local_store(b0_view, tl.load(b_ptr + b_offs))
    tlx.local_store(b1_view, tl.load(b_ptr + K * N + b_offs))
    tlx.fence_async_shared()


@triton.jit
def dot_and_store(a_view, b_view, acc_view, done, c_ptr, M: tl.constexpr, N: tl.constexpr):
    """c = a @ b through tensor memory: one MMA completing on ``done``, then the accumulator stored."""
    tlx.async_dot(a_view, b_view, acc_view, use_acc=False, mBarriers=[done])
    tlx.barrier_wait(done, 0)
    tl.store(c_ptr + offsets(M, N), tlx.local_load(acc_view))


@triton.jit
def pick_view(first, first_slot: tl.constexpr, second, second_slot: tl.constexpr, pick):
    """The view of ``first[first_slot]`` when ``pick`` is 0, else of ``second[second_slot]``: a run-time branch."""
    if pick == 0:
        chosen = tlx.local_view(first, first_slot)
    else:
        chosen = tlx.local_view(second, second_slot)
    return chosen


@triton.jit
def branch_view(a_ptr, b_ptr, c_ptr, pick, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                TWO_ALLOCS: tl.constexpr = False):
    """c = a @ b_pick, the B buffer chosen at run time (``pick`` is 0 or 1) and its view sliced after the branch.

    ``TWO_ALLOCS``: the two B blocks in allocations of their own, so the branch yields views of different
    allocations (the second ``scf.if`` form); else the two slots of one allocation."""
    a = tlx.local_alloc((M, K), tl.float16, 1)
    acc = tlx.local_alloc((M, N), tl.float32, 1, tlx.storage_kind.tmem)
    done = tlx.alloc_barriers(1)
    if TWO_ALLOCS:
        b0 = tlx.local_alloc((K, N), tl.float16, 1)
        b1 = tlx.local_alloc((K, N), tl.float16, 1)
        stage_a_and_two_b(a_ptr, b_ptr, a[0], b0[0], b1[0], M, N, K)
        chosen = pick_view(b0, 0, b1, 0, pick)
    else:
        b = tlx.local_alloc((K, N), tl.float16, 2)
        stage_a_and_two_b(a_ptr, b_ptr, a[0], b[0], b[1], M, N, K)
        chosen = pick_view(b, 0, b, 1, pick)
    dot_and_store(a[0], chosen, acc[0], done[0], c_ptr, M, N)


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
