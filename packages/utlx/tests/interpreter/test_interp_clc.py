"""Cluster launch control (CLC) under the CPU interpreter: ``try_cancel`` is a queue of the programs not yet run.

A persistent CLC kernel launched with one program per tile must work on every tile exactly once: each tile is
done either by its own program or by the program that cancelled it, never by both. The kernels record, per tile,
how often it was worked on and by which program, and compare the result with torch. Misuse that the PTX ISA
leaves undefined (a new request after a failed one was observed, reading a response nobody wrote) is an error
naming the op and the line.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
import triton.language.extra.tlx as tlx
from utlx.interpreter import UtlxHazardError
from utlx_interp_host import randn as _randn
from utlx_interp_host import utlx_error as _cause


@triton.jit
def _tile(x_ptr, y_ptr, visits_ptr, owner_ptr, tile, BLOCK: tl.constexpr):
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(y_ptr + offs) + tl.load(x_ptr + offs) * 3.0 + 1.0)
    tl.atomic_add(visits_ptr + tile, 1)
    tl.store(owner_ptr + tile, tl.program_id(0))


@triton.jit
def _persistent(x_ptr, y_ptr, visits_ptr, owner_ptr, BLOCK: tl.constexpr):
    """One task: issue the next request, do the current tile, then read which tile comes next."""
    ctx = tlx.clc_create_context(num_consumers=1)
    tile = tl.program_id(0)
    p_producer = 1
    p_consumer = 0
    while tile != -1:
        tlx.clc_producer(ctx, p_producer)
        p_producer ^= 1
        _tile(x_ptr, y_ptr, visits_ptr, owner_ptr, tile, BLOCK)
        tile = tlx.clc_consumer(ctx, p_consumer)
        p_consumer ^= 1


@triton.jit
def _persistent_ws(x_ptr, y_ptr, visits_ptr, owner_ptr, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    """blackwell_gemm_clc's protocol: the default task produces requests and both tasks consume each response
    (``num_consumers=2``), through a ``STAGES``-deep ring of responses. The worker does the tiles; the default
    task only follows the tile stream."""
    ctx = tlx.clc_create_context(num_consumers=2, num_stages=STAGES)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tile = tl.program_id(0)
            p_producer = 1
            p_consumer = 0
            k = 0
            while tile != -1:
                tlx.clc_producer(ctx, p_producer, k=k)
                tile = tlx.clc_consumer(ctx, p_consumer, k=k)
                k += 1
                if k == STAGES:
                    k = 0
                    p_producer ^= 1
                    p_consumer ^= 1
        with tlx.async_task(num_warps=4):
            tile = tl.program_id(0)
            p_consumer = 0
            k = 0
            while tile != -1:
                _tile(x_ptr, y_ptr, visits_ptr, owner_ptr, tile, BLOCK)
                tile = tlx.clc_consumer(ctx, p_consumer, k=k)
                k += 1
                if k == STAGES:
                    k = 0
                    p_consumer ^= 1


def _buffers(tiles: int, block: int) -> tuple[torch.Tensor, ...]:
    x = _randn(tiles * block)
    return x, torch.zeros_like(x), torch.zeros(tiles, dtype=torch.int32), torch.full((tiles,), -1, dtype=torch.int32)


@pytest.mark.parametrize("tiles", [1, 2, 7])
def test_persistent_clc_kernel_computes_every_tile_exactly_once(tiles):
    x, y, visits, owner = _buffers(tiles, 32)
    _persistent[(tiles,)](x, y, visits, owner, BLOCK=32)
    torch.testing.assert_close(y, x * 3.0 + 1.0, rtol=0, atol=0)
    assert visits.tolist() == [1] * tiles
    # the interpreter runs programs in order: program 0 starts first and cancels every other one
    assert owner.tolist() == [0] * tiles


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_warp_specialized_clc_pipeline_hands_every_tile_to_one_program(stages):
    x, y, visits, owner = _buffers(5, 16)
    _persistent_ws[(5,)](x, y, visits, owner, BLOCK=16, STAGES=stages)
    torch.testing.assert_close(y, x * 3.0 + 1.0, rtol=0, atol=0)
    assert visits.tolist() == [1] * 5
    assert owner.tolist() == [0] * 5


@triton.jit
def _stop_after(x_ptr, y_ptr, visits_ptr, owner_ptr, LIMIT: tl.constexpr, BLOCK: tl.constexpr):
    """Steals at most LIMIT tiles, then stops asking: the programs it did not cancel run themselves."""
    ctx = tlx.clc_create_context(num_consumers=1)
    tile = tl.program_id(0)
    stolen = 0
    p = 0
    while tile != -1:
        _tile(x_ptr, y_ptr, visits_ptr, owner_ptr, tile, BLOCK)
        if stolen < LIMIT:
            tlx.clc_producer(ctx, p ^ 1)
            tile = tlx.clc_consumer(ctx, p)
            p ^= 1
            stolen += 1
        else:
            tile = -1


def test_programs_that_were_not_cancelled_still_run():
    x, y, visits, owner = _buffers(6, 8)
    _stop_after[(6,)](x, y, visits, owner, LIMIT=2, BLOCK=8)
    torch.testing.assert_close(y, x * 3.0 + 1.0, rtol=0, atol=0)
    assert visits.tolist() == [1] * 6
    # program 0 takes 1 and 2 and stops; program 3 runs and takes 4 and 5
    assert owner.tolist() == [0, 0, 0, 3, 3, 3]


def test_the_queue_starts_afresh_for_every_launch():
    for _ in range(2):
        x, y, visits, owner = _buffers(3, 8)
        _persistent[(3,)](x, y, visits, owner, BLOCK=8)
        assert visits.tolist() == [1] * 3 and owner.tolist() == [0] * 3


@triton.jit
def _low_level(out_ptr, N: tl.constexpr):
    """The building blocks: two requests in flight at once, into responses[0] and responses[1]."""
    responses = tlx._alloc_clc_responses(num_responses=2)
    bars = tlx.alloc_barriers(num_barriers=2)
    for i in tl.static_range(2):
        tlx.barrier_expect_bytes(bars[i], 16)
        tlx._clc_issue(tlx.local_view(responses, i), bars[i])
    for i in tl.static_range(2):
        tlx.barrier_wait(bars[i], 0)
        tl.store(out_ptr + tl.program_id(0) * N + i, tlx._clc_query(tlx.local_view(responses, i)))


def test_each_request_cancels_the_next_program_or_answers_minus_one():
    out = torch.full((3, 2), -7, dtype=torch.int32)
    _low_level[(3,)](out, N=2)
    # program 0 takes programs 1 and 2; the programs it cancelled never run (their rows stay untouched)
    assert out.tolist() == [[1, 2], [-7, -7], [-7, -7]]
    out = torch.full((1, 2), -7, dtype=torch.int32)
    _low_level[(1,)](out, N=2)
    assert out.tolist() == [[-1, -1]]


@triton.jit
def _asks_again():
    ctx = tlx.clc_create_context(num_consumers=1)
    tlx.clc_producer(ctx, 1)
    tlx.clc_consumer(ctx, 0)  # -1: the grid has one program
    tlx.clc_producer(ctx, 1)


def test_a_request_after_an_observed_failure_is_an_error():
    with pytest.raises(Exception) as info:
        _asks_again[(1,)]()
    err = _cause(info)
    assert isinstance(err, UtlxHazardError)
    assert str(err).startswith("_clc_issue: try_cancel issued") and "after this program observed a failed" in str(err)
    assert "_asks_again" in str(err)


@triton.jit
def _reads_unwritten(out_ptr):
    responses = tlx._alloc_clc_responses(num_responses=1)
    tl.store(out_ptr, tlx._clc_query(responses[0]))


def test_reading_a_response_nothing_wrote_is_an_error():
    with pytest.raises(Exception) as info:
        _reads_unwritten[(1,)](torch.zeros(1, dtype=torch.int32))
    err = _cause(info)
    assert isinstance(err, UtlxHazardError)
    assert str(err).startswith("_clc_query: reads responses[0]") and "no try_cancel" in str(err)
