"""Pending cp.async copies are drained where their ring buffers die (utlx.compiler.common.drain, issue 15).

The bug this guards against: a ring's tail prefetches (masked zero-fills past K) were still in flight
when the epilogue reused the ring's shared memory for its layout conversion, so they overwrote part of
the output tile (wrong values with the 64-row tile on the H200). These tests pin where the drain goes:
after the K loop of a plain GEMM, after the outer tile loop of a persistent one (never inside it, where
it would serialize the ring), once per place, and always before the epilogue touches shared memory.
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl
import utlx as tlx
from _helpers import compile_kernel
from utlx.kernels.nvidia import hopper_pipelined as hp

ONES = ("stride_ak", "stride_bn", "stride_cn")


def _waits(ptx: str) -> list[str]:
    return re.findall(r"cp\.async\.wait_group\s+(\d+);", ptx)


@pytest.mark.smoke
@pytest.mark.parametrize("config", range(len(hp.CONFIGS)))
def test_gemm_drains_after_the_k_loop_before_the_epilogue(config):
    const, nw = hp.CONFIGS[config]
    k = compile_kernel(hp.matmul_kernel_pipelined_hopper, hp.SIGNATURE, const, "cuda:90", nw, ONES)
    ptx = k.asm["ptx"]
    assert _waits(ptx) == [str(const["NUM_STAGES"] - 2), "0"]
    lines = ptx.splitlines()
    drain = next(i for i, line in enumerate(lines) if re.search(r"cp\.async\.wait_group\s+0;", line))
    last_commit = max(i for i, line in enumerate(lines) if "cp.async.commit_group" in line)
    assert last_commit < drain  # after every copy was issued
    after = lines[drain + 1:]
    first_smem_write = next(i for i, line in enumerate(after) if "st.shared" in line)
    # a CTA barrier between the drain and the epilogue's first shared-memory write: every thread's
    # copies have landed before any thread reuses the bytes
    assert any("bar.sync" in line for line in after[:first_smem_write])
    # the TTGIR drain sits at function level, not in a loop
    drains = [line for line in k.asm["ttgir"].splitlines() if re.search(r"ttg\.async_wait .*num = 0", line)]
    assert len(drains) == 1 and drains[0].startswith("    %") and not drains[0].startswith("      ")


@triton.jit
def _persistent_ring(a_ptr, c_ptr, M, K, num_tiles, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr,
                     NUM_PROGS: tl.constexpr):
    """Sum of A's rows, tile by tile, through a cp.async ring that keeps prefetching across tiles."""
    bufs = tlx.local_alloc((BM, BK), tlx.dtype_of(a_ptr), STAGES)
    offs_k = tl.arange(0, BK)
    k_tiles = tl.cdiv(K, BK)
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_PROGS, num_stages=0):
        rows = (tile * BM + tl.arange(0, BM)) % M
        ptrs = a_ptr + rows[:, None] * K + offs_k[None, :]
        for i in tl.range(0, STAGES - 1, num_stages=0):
            tok = tlx.async_load(ptrs + i * BK, tlx.local_view(bufs, i), mask=offs_k[None, :] < K - i * BK)
            tlx.async_load_commit_group([tok])
        acc = tl.zeros((BM, BK), tl.float32)
        for kk in tl.range(0, k_tiles, num_stages=0):
            tlx.async_load_wait_group(STAGES - 2)
            acc += tlx.local_load(tlx.local_view(bufs, kk % STAGES)).to(tl.float32)
            nk = kk + STAGES - 1
            tok = tlx.async_load(ptrs + nk * BK, tlx.local_view(bufs, nk % STAGES), mask=offs_k[None, :] < K - nk * BK)
            tlx.async_load_commit_group([tok])
        tl.store(c_ptr + tile * BM + tl.arange(0, BM), tl.sum(acc, 1))


def test_persistent_ring_drains_after_the_outer_loop_only():
    sig = {"a_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "K": "i32", "num_tiles": "i32"}
    k = compile_kernel(_persistent_ring, sig, {"BM": 64, "BK": 64, "STAGES": 3, "NUM_PROGS": 132}, "cuda:90", 4)
    ttgir = k.asm["ttgir"].splitlines()
    drains = [i for i, line in enumerate(ttgir) if re.search(r"ttg\.async_wait .*num = 0", line)]
    assert len(drains) == 1
    line = ttgir[drains[0]]
    assert line.startswith("    %") and not line.startswith("      ")  # function level: after the outer loop
    outer = [i for i, text in enumerate(ttgir) if re.match(r"    (%\S+ = )?scf\.for ", text)]
    assert len(outer) == 1 and outer[0] < drains[0]  # the tile loop, which the drain follows
    # inside the loops only the kernel's own wait (STAGES - 2 = 1) remains
    assert _waits(k.asm["ptx"]) == ["1", "0"]


@triton.jit
def _plain_copy(a_ptr, c_ptr, BM: tl.constexpr):
    offs = tl.arange(0, BM)
    tl.store(c_ptr + offs, tl.load(a_ptr + offs) * 2)


def test_kernels_without_cp_async_get_no_drain():
    k = compile_kernel(_plain_copy, {"a_ptr": "*fp32", "c_ptr": "*fp32"}, {"BM": 128}, "cuda:90", 4)
    assert "cp.async" not in k.asm["ptx"] and "ttg.async_wait" not in k.asm["ttgir"]
