"""The bulk-copy test kernel, shared by the compile test (its PTX) and the interpreter test (its numbers): one
kernel, so the two check the same code."""

from __future__ import annotations

import triton
import triton.language as tl
import utlx as tlx


@triton.jit
def bulk_rows(x_ptr, y_ptr, N: tl.constexpr, SIZE: tl.constexpr, NBUF: tl.constexpr):
    """``NBUF`` bulk copies of ``SIZE`` bytes (row ``i`` of ``x``) into 1-D buffers, each completing on its own
    barrier, then every buffer stored to ``y``'s row ``i``."""
    bufs = tlx.local_alloc((N,), tl.float32, NBUF)
    bars = tlx.alloc_barriers(NBUF)
    for i in tl.static_range(NBUF):
        tlx.barrier_expect_bytes(bars[i], SIZE)
        tlx.async_load(x_ptr + i * N, bufs[i], bulk=True, bulk_size=SIZE, barrier=bars[i])
    for i in tl.static_range(NBUF):
        tlx.barrier_wait(bars[i], 0)
        tl.store(y_ptr + i * N + tl.arange(0, N), tlx.local_load(bufs[i]))
