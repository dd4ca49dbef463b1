"""Views carried through loops and branches mean the buffer they were made from, under the interpreter too.

The compiled form (``utlx/compiler/common/carried.py``) carries the buffer index; here the same kernels run
interpreted and are checked against torch on random data: the MMA of iteration ``i`` reads the B buffer written at
iteration ``i - 1``, and a branch picks the buffer ``pick`` names.
"""

from __future__ import annotations

import pytest
import torch
from carried_kernels import branch_half, branch_view, prev_view

M, N, K = 128, 32, 32


def _fp16(*shape: int, seed: int) -> torch.Tensor:
    return (torch.randn(shape, generator=torch.Generator().manual_seed(seed)) / 4).to(torch.float16)


@pytest.mark.parametrize("iters", [1, 3, 4])
def test_mma_reads_the_view_of_the_previous_iteration(iters):
    a = _fp16(M, K, seed=iters)
    b = _fp16(iters, K, N, seed=100 + iters)
    c = torch.empty((M, N), dtype=torch.float32)
    prev_view[(1,)](a, b, c, ITERS=iters, M=M, N=N, K=K)
    ref = sum(a.float() @ b[i].float() for i in range(iters))
    torch.testing.assert_close(c, ref, atol=1e-2, rtol=1e-3)


@pytest.mark.parametrize("two_allocs", [False, True], ids=["one-allocation", "two-allocations"])
@pytest.mark.parametrize("pick", [0, 1])
def test_mma_reads_the_view_a_runtime_branch_picked(pick, two_allocs):
    a = _fp16(M, K, seed=7)
    b = _fp16(2, K, N, seed=8)
    c = torch.empty((M, N), dtype=torch.float32)
    branch_view[(1,)](a, b, c, pick, M=M, N=N, K=K, TWO_ALLOCS=two_allocs)
    torch.testing.assert_close(c, a.float() @ b[pick].float(), atol=1e-2, rtol=1e-3)
    other = a.float() @ b[1 - pick].float()
    assert (c - other).abs().max() > 1e-1  # the other buffer would give another product


@pytest.mark.parametrize("pick", [0, 1])
def test_local_load_reads_the_slice_a_runtime_branch_picked(pick):
    x = _fp16(64, 64, seed=11 + pick)
    y = torch.empty((64, 32), dtype=torch.float16)
    branch_half[(1,)](x, y, pick, M=64, N=64)
    torch.testing.assert_close(y, x[:, 32 * pick:32 * (pick + 1)])
