"""Back-to-back ``tlx.alloc_barriers`` share one async-proxy fence (utlx.compiler.nvidia.init_fence).

Each call's mbarrier inits must be ordered before TMA (the async proxy) completes transactions on them; one
``fence.proxy.async.shared::cta`` after the last init of a run does that for all of them. These tests show
in TTGIR and PTX that a run of three calls gets exactly one fence, after every init, that anything touching
memory between two calls keeps the earlier call's fence, and that the kernel still loads through TMA.
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel

SIG = {"a_ptr": "*fp16", "out_ptr": "*fp32", "M": "i32"}


@triton.jit
def _three_barrier_sets(a_ptr, out_ptr, M, SPLIT: tl.constexpr):
    desc = tlx.make_tensor_descriptor(None, a_ptr, [M, 64], [64, 1], [64, 64])
    bufs = tlx.local_alloc((64, 64), tl.float16, 2)
    fulls = tlx.alloc_barriers(2)
    empties = tlx.alloc_barriers(2, 2)
    if SPLIT:
        tlx.barrier_arrive(empties[1])  # an mbarrier access between two allocations ends the run
    ready = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(fulls[0], 64 * 64 * 2)
    tlx.async_descriptor_load(desc, bufs[0], [0, 0], fulls[0])
    tlx.barrier_wait(fulls[0], 0)
    tlx.barrier_arrive(empties[0])
    tlx.barrier_arrive(ready[0])
    offs = tl.arange(0, 64)
    tl.store(out_ptr + offs[:, None] * 64 + offs[None, :], tlx.local_load(bufs[0]).to(tl.float32))


def _ops(ttgir: str, names: tuple[str, ...]) -> list[str]:
    """The ops named ``names`` in program order (one kernel body, no regions in between here)."""
    found = re.findall(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b", ttgir)
    return [n for n in found if n in names]


@pytest.fixture(scope="module")
def compiled():
    return {split: compile_kernel(_three_barrier_sets, SIG, {"SPLIT": split}).asm for split in (False, True)}


def test_a_run_of_allocations_gets_one_fence_after_all_inits(compiled):
    ttgir, ptx = compiled[False]["ttgir"], compiled[False]["ptx"]
    seq = _ops(ttgir, ("ttng.init_barrier", "ttng.fence_async_shared", "ttng.async_tma_copy_global_to_local"))
    assert seq == ["ttng.init_barrier"] * 5 + ["ttng.fence_async_shared", "ttng.async_tma_copy_global_to_local"]
    assert ptx.count("fence.proxy.async.shared::cta") == 1
    inits = [i for i, line in enumerate(ptx.splitlines()) if "mbarrier.init.shared" in line]
    fence = next(i for i, line in enumerate(ptx.splitlines()) if "fence.proxy.async.shared::cta" in line)
    assert len(inits) == 5 and max(inits) < fence
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::(cta|cluster)\.global", ptx)


def test_a_memory_access_between_allocations_keeps_the_earlier_fence(compiled):
    ttgir, ptx = compiled[True]["ttgir"], compiled[True]["ptx"]
    seq = _ops(ttgir, ("ttng.init_barrier", "ttng.fence_async_shared", "ttng.arrive_barrier"))
    # fulls and empties are one run (one fence), then the arrive, then ready's own init and fence
    assert seq[:8] == ["ttng.init_barrier"] * 4 + ["ttng.fence_async_shared", "ttng.arrive_barrier",
                                                   "ttng.init_barrier", "ttng.fence_async_shared"], seq
    assert ptx.count("fence.proxy.async.shared::cta") == 2
