"""A TMA store of a buffer that ``local_store`` wrote gets a ``fence.proxy.async`` from the compiler, with or without
the kernel's own ``fence_async_shared`` (Triton's fence insertion, as in Meta's fork). The interpreter's hazard
checker mirrors this (utlx.interpreter.ops_mem.async_descriptor_store); the bulk ``async_store`` stays checked.
"""

from __future__ import annotations

import pytest
import triton
import triton.language as tl
import triton.language.extra.tlx as tlx
from _helpers import compile_kernel


@triton.jit
def _tma_store(src_desc, dst_desc, BLOCK: tl.constexpr, FENCE: tl.constexpr):
    buf = tlx.local_view(tlx.local_alloc((BLOCK, BLOCK), tl.float16, 1), 0)
    out = tlx.local_view(tlx.local_alloc((BLOCK, BLOCK), tl.float16, 1), 0)
    bar = tlx.local_view(tlx.alloc_barriers(1), 0)
    tlx.barrier_expect_bytes(bar, BLOCK * BLOCK * 2)
    tlx.async_descriptor_load(src_desc, buf, [0, 0], bar)
    tlx.barrier_wait(bar, 0)
    tlx.local_store(out, tlx.local_load(buf) + 1)
    if FENCE:
        tlx.fence_async_shared()
    tlx.async_descriptor_store(dst_desc, out, [0, 0])
    tlx.async_descriptor_store_wait(0)


def _between(ptx: str, first: str, then: str) -> str:
    start = ptx.index(first)
    return ptx[start:ptx.index(then, start)]


@pytest.mark.parametrize("target", ["cuda:90", "cuda:100"])
@pytest.mark.parametrize("fence", [False, True], ids=["no-fence", "explicit-fence"])
def test_fence_before_tma_store_is_inserted(target, fence):
    desc = "tensordesc<fp16[64, 64]>"
    ptx = compile_kernel(_tma_store, {"src_desc": desc, "dst_desc": desc}, {"BLOCK": 64, "FENCE": fence},
                         target=target).asm["ptx"]
    # the last shared store (local_store) up to the TMA store: one proxy fence, whether or not the kernel asked
    tail = ptx[ptx.rindex("st.shared"):]
    assert "fence.proxy.async" in _between(tail, "st.shared", "cp.async.bulk.tensor.2d.global.shared"), tail[:2000]

