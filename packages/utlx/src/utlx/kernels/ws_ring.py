"""The ring the warp-specialized GEMMs share: the TMA producer's loop and the consumers' main loop.

Why a module of its own: the cooperative kernel (:mod:`utlx.kernels.nvidia.hopper_ws_persistent`, two consumers on
the halves of one tile) and the pingpong kernel (:mod:`utlx.kernels.nvidia.hopper_ws_pingpong`, two consumers taking
turns on whole tiles) feed and drain one ``NUM_STAGES``-slot ring the same way; only who reads a slot
differs. Both number every k-step of a program globally (``it``, in the producer's tile order), so slot
``it % NUM_STAGES`` and barrier phase ``(it // NUM_STAGES) & 1`` follow from it.
"""

from __future__ import annotations

import triton
import triton.language as tl

import utlx.language as tlx
from utlx.kernels.tiles import grouped_tile


@triton.jit
def produce(a_desc, b_desc, bufs_A0, bufs_A1, bufs_B, full, empty, M, N, K,
            BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
            GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
            A_COL: tl.constexpr, B_COL: tl.constexpr, A_HALVES: tl.constexpr):
    """The producer task: for every k-step of every tile of this program (tiles ``pid, pid + NUM_SMS, ...``),
    wait until its slot is free (``empty``), tell ``full`` to expect the stage's bytes and issue the TMA
    loads. ``A_HALVES``: A arrives as two ``BLOCK_SIZE_M / 2``-row halves in ``bufs_A0`` and ``bufs_A1`` (one
    per cooperative consumer); else whole in ``bufs_A0`` (``bufs_A1`` unused)."""
    num_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N, BLOCK_SIZE_N)
    produce_tiles(a_desc, b_desc, bufs_A0, bufs_A1, bufs_B, full, empty, M, N, K, num_tiles, BLOCK_SIZE_M,
                  BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, NUM_STAGES, NUM_SMS, A_COL, B_COL, A_HALVES)


@triton.jit
def produce_tiles(a_desc, b_desc, bufs_A0, bufs_A1, bufs_B, full, empty, M, N, K, end,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, NUM_STAGES: tl.constexpr, NUM_SMS: tl.constexpr,
                  A_COL: tl.constexpr, B_COL: tl.constexpr, A_HALVES: tl.constexpr):
    """Every k-step of tiles ``pid, pid + NUM_SMS, ...`` below ``end``, the program's first tiles (see
    :func:`produce`); returns how many k-steps that was (the global k-step index that follows)."""
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    it = 0
    for tile in tl.range(tl.program_id(0), end, NUM_SMS, num_stages=0):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        it = produce_range(a_desc, b_desc, bufs_A0, bufs_A1, bufs_B, full, empty, it, pid_m * BLOCK_SIZE_M,
                           pid_n * BLOCK_SIZE_N, 0, k_tiles, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, NUM_STAGES,
                           A_COL, B_COL, A_HALVES)
    return it


@triton.jit
def produce_range(a_desc, b_desc, bufs_A0, bufs_A1, bufs_B, full, empty, it, off_m, off_n, k_lo, k_hi,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  NUM_STAGES: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr, A_HALVES: tl.constexpr):
    """Load k-steps ``k_lo .. k_hi - 1`` of the tile at (``off_m``, ``off_n``) into the ring from global k-step
    ``it`` (see :func:`produce`); returns the next ``it``."""
    STAGE_BYTES: tl.constexpr = (BLOCK_SIZE_M * BLOCK_SIZE_K + BLOCK_SIZE_K * BLOCK_SIZE_N) * tlx.size_of(
        tlx.dtype_of(a_desc))
    HALF_M: tl.constexpr = BLOCK_SIZE_M // 2
    for kk in tl.range(k_lo, k_hi, num_stages=0):
        s = it % NUM_STAGES
        tlx.barrier_wait(tlx.local_view(empty, s), ((it // NUM_STAGES) & 1) ^ 1)
        bar = tlx.local_view(full, s)
        tlx.barrier_expect_bytes(bar, STAGE_BYTES)
        off_k = kk * BLOCK_SIZE_K
        if A_HALVES:
            if A_COL:
                tlx.async_descriptor_load(a_desc, tlx.local_view(bufs_A0, s), [off_k, off_m], bar)
                tlx.async_descriptor_load(a_desc, tlx.local_view(bufs_A1, s), [off_k, off_m + HALF_M], bar)
            else:
                tlx.async_descriptor_load(a_desc, tlx.local_view(bufs_A0, s), [off_m, off_k], bar)
                tlx.async_descriptor_load(a_desc, tlx.local_view(bufs_A1, s), [off_m + HALF_M, off_k], bar)
        elif A_COL:
            tlx.async_descriptor_load(a_desc, tlx.local_view(bufs_A0, s), [off_k, off_m], bar)
        else:
            tlx.async_descriptor_load(a_desc, tlx.local_view(bufs_A0, s), [off_m, off_k], bar)
        if B_COL:
            tlx.async_descriptor_load(b_desc, tlx.local_view(bufs_B, s), [off_n, off_k], bar)
        else:
            tlx.async_descriptor_load(b_desc, tlx.local_view(bufs_B, s), [off_k, off_n], bar)
        it += 1
    return it


@triton.jit
def release(empty, slot, CLUSTER: tl.constexpr = 1, peer=0):
    """Free ring slot ``slot``: arrive on ``empty[slot]``, and with ``CLUSTER`` = 2 also on the same barrier of
    cluster CTA ``peer``, whose producer multicasts into this CTA's copy of the slot too."""
    tlx.barrier_arrive(tlx.local_view(empty, slot))
    if CLUSTER > 1:
        tlx.barrier_arrive(tlx.local_view(empty, slot), remote_cta_rank=peer)


@triton.jit
def mainloop(bufs_A, bufs_B, full, empty, acc, it, k_tiles, NUM_STAGES: tl.constexpr, A_COL: tl.constexpr,
             B_COL: tl.constexpr, A_PER_SLOT: tl.constexpr = 1, A_PART: tl.constexpr = 0,
             CLUSTER: tl.constexpr = 1, peer=0):
    """A consumer's ``k_tiles`` k-steps from global index ``it``: wait for the slot (``full``), start
    ``async_dot`` keeping one wgmma in flight, and release the slot the previous wgmma read (``empty``).
    Returns ``(acc, it)`` with the last wgmma still in flight: :func:`retire` finishes it. ``bufs_A`` holds
    ``A_PER_SLOT`` parts per ring slot and this consumer reads part ``A_PART``; ``CLUSTER``/``peer``: see
    :func:`release`."""
    for kk in tl.range(0, k_tiles, num_stages=0):
        s = it % NUM_STAGES
        tlx.barrier_wait(tlx.local_view(full, s), (it // NUM_STAGES) & 1)
        a_s = tlx.local_view(bufs_A, s * A_PER_SLOT + A_PART)
        b_s = tlx.local_view(bufs_B, s)
        if A_COL:  # column-major operands arrive transposed; wgmma reads them through a transposed view
            a_s = tlx.local_trans(a_s)
        if B_COL:
            b_s = tlx.local_trans(b_s)
        acc = tlx.async_dot(a_s, b_s, acc)
        acc = tlx.async_dot_wait(1, acc)  # the previous wgmma is done: release its slot
        if kk > 0:
            release(empty, (it + NUM_STAGES - 1) % NUM_STAGES, CLUSTER, peer)
        it += 1
    return acc, it


@triton.jit
def retire(acc, empty, it, NUM_STAGES: tl.constexpr, CLUSTER: tl.constexpr = 1, peer=0):
    """Wait for the last wgmma of :func:`mainloop` and release the slot it read; returns the accumulator."""
    acc = tlx.async_dot_wait(0, acc)
    release(empty, (it + NUM_STAGES - 1) % NUM_STAGES, CLUSTER, peer)
    return acc


@triton.jit
def whole_tile(bufs_A, bufs_B, full, empty, it, k_tiles, ROWS: tl.constexpr, COLS: tl.constexpr,
               NUM_STAGES: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr):
    """A consumer's ``ROWS x COLS`` part of one output tile over all ``k_tiles`` k-steps: a zeroed accumulator,
    :func:`mainloop`, :func:`retire`. Returns ``(acc, it)`` with every slot it read released."""
    acc = tl.zeros((ROWS, COLS), dtype=tl.float32)
    acc, it = mainloop(bufs_A, bufs_B, full, empty, acc, it, k_tiles, NUM_STAGES, A_COL, B_COL)
    return retire(acc, empty, it, NUM_STAGES), it
