"""Under the interpreter: ``async_load(bulk=True, barrier=)`` copies the bytes at one pointer into a 1-D buffer and
completes them on the barrier; ``tl.dot(two_ctas=True)`` (the fork's surface) is each CTA's own dot. Checked
against torch on random data."""

from __future__ import annotations

import pytest
import torch
from bulk_kernels import bulk_rows
from dot_kernels import dot_tile


@pytest.mark.parametrize("size", [512, 256])
def test_bulk_async_load_copies_its_bytes_and_completes_them_on_the_barrier(size):
    x = torch.randn(2 * 128, generator=torch.Generator().manual_seed(size))
    y = torch.zeros_like(x)
    bulk_rows[(1,)](x, y, N=128, SIZE=size, NBUF=2)
    n = size // 4
    for i in range(2):
        torch.testing.assert_close(y[i * 128:i * 128 + n], x[i * 128:i * 128 + n], rtol=0, atol=0)


def test_dot_two_ctas_is_each_ctas_own_dot():
    g = torch.Generator().manual_seed(3)
    a = (torch.randn(64, 32, generator=g) / 4).to(torch.float16)
    b = (torch.randn(32, 64, generator=g) / 4).to(torch.float16)
    c = torch.zeros(64, 64)
    dot_tile[(1,)](a, b, c, M=64, N=64, K=32, TWO_CTAS=True)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
