"""Descriptors in global memory on a Hopper GPU: a TMA copy still in flight keeps reading its slot's descriptor
while the next problem's descriptor is written into another slot (``utlx.compiler.nvidia.desc_slots``).

The kernel walks G problems (each its own base pointer), writes problem g's descriptor into slot g % SLOTS,
issues its TMA copy into buffer g % 2, and only then waits for and stores problem g - 1's copy: one copy is
always in flight when the next descriptor is made. Every problem's tile must come back exactly; with slots
sharing memory, a copy could read the next problem's descriptor and return the wrong tile.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import utlx as tlx  # noqa: E402
from gpu_env import torch  # noqa: E402  (skips this module on a machine without a GPU)

HOPPER_PLUS = not getattr(torch.version, "hip", None) and torch.cuda.get_device_capability()[0] >= 9


@triton.jit
def _copy_problems(bases_ptr, out_ptr, G, SLOTS: tl.constexpr, B: tl.constexpr):
    slots = tlx.allocate_tensor_descriptor(num=SLOTS)
    bufs = tlx.local_alloc((B, B), tl.float16, 2)
    bars = tlx.alloc_barriers(2)
    offs = tl.arange(0, B)
    tile = offs[:, None] * B + offs[None, :]
    for g in range(G + 1):
        if g < G:
            base = tl.load(bases_ptr + g).to(tl.pointer_type(tl.float16))
            slot = g % SLOTS
            tlx.make_tensor_descriptor(desc_ptr=slots[slot], base=base, shape=[B, B], strides=[B, 1],
                                       block_shape=[B, B])
            desc = tlx.reinterpret_tensor_descriptor(desc_ptr=slots[slot], block_shape=[B, B], dtype=tl.float16)
            tlx.barrier_expect_bytes(bars[g % 2], B * B * 2)
            tlx.async_descriptor_load(desc, bufs[g % 2], [0, 0], bars[g % 2])
        if g > 0:
            p = g - 1
            tlx.barrier_wait(bars[p % 2], (p // 2) & 1)
            tl.store(out_ptr + p * B * B + tile, tlx.local_load(bufs[p % 2]))


@pytest.mark.skipif(not HOPPER_PLUS, reason="TMA descriptors need sm_90 or newer")
@pytest.mark.parametrize("slots", [2, 3])
def test_every_problem_comes_back_through_its_own_slot(slots):
    def alloc(size: int, alignment: int, stream: int | None) -> torch.Tensor:
        return torch.empty(size, device="cuda", dtype=torch.int8)

    triton.set_allocator(alloc)
    g, b = 9, 64
    tiles = [torch.randn((b, b), device="cuda").to(torch.float16) for _ in range(g)]
    bases = torch.tensor([t.data_ptr() for t in tiles], device="cuda", dtype=torch.int64)
    out = torch.zeros((g, b, b), device="cuda", dtype=torch.float16)
    _copy_problems[(1,)](bases, out, g, SLOTS=slots, B=b)
    torch.cuda.synchronize()
    for i, t in enumerate(tiles):
        assert torch.equal(out[i], t), f"problem {i} came back wrong"
