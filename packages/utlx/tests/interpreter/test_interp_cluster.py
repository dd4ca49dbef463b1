"""Thread-block clusters under the CPU interpreter: the CTAs of a ``ctas_per_cga`` cluster run together.

Each CTA has its own shared memory; remote ops reach a peer's copy of a buffer or barrier. The kernels exchange
data between CTAs (a peer's row lands in this CTA's buffer) and compare with torch; a 2-CTA tcgen05 MMA computes
a pair's tile from both CTAs' operands; a wait no CTA of the cluster can satisfy is a deadlock naming each CTA
and the line.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
import triton.language.extra.tlx as tlx
from utlx.interpreter import UtlxDeadlockError
from utlx_interp_host import randn as _randn
from utlx_interp_host import utlx_error as _cause


@triton.jit
def _ranks(out_ptr):
    pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
    tl.store(out_ptr + 2 * pid, tlx.cluster_cta_rank())
    tl.store(out_ptr + 2 * pid + 1, tlx.cluster_size_1d())


def test_cluster_ranks_follow_x_then_y():
    out = torch.full((4 * 4 * 2,), -1, dtype=torch.int32)
    _ranks[(4, 4)](out, ctas_per_cga=(2, 2, 1))
    got = out.view(4, 4, 2)  # [y, x, (rank, size)]
    for y in range(4):
        for x in range(4):
            assert got[y, x, 0].item() == x % 2 + 2 * (y % 2)
            assert got[y, x, 1].item() == 4


@triton.jit
def _exchange(x_ptr, y_ptr, N: tl.constexpr, CLUSTER: tl.constexpr):
    """Every CTA stores its row into slot ``rank`` of every peer's buffer (async remote store, completed on the
    peer's barrier), waits for all rows, and writes the sum of the cluster's rows times its rank + 1."""
    pid = tl.program_id(0)
    rank = tlx.cluster_cta_rank()
    rows = tlx.local_alloc((1, N), tl.float32, CLUSTER)
    bar = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(bar[0], CLUSTER * N * 4)
    tlx.cluster_barrier()
    offs = tl.arange(0, N)
    mine = tl.reshape(tl.load(x_ptr + pid * N + offs), (1, N))
    for peer in tl.static_range(CLUSTER):
        tlx.async_remote_shmem_store(rows[rank], mine, peer, bar[0])
    tlx.barrier_wait(bar[0], 0)
    total = tl.zeros((1, N), tl.float32)
    for i in tl.static_range(CLUSTER):
        total += tlx.local_load(rows[i])
    tl.store(y_ptr + pid * N + tl.reshape(offs, (1, N)), total * (rank + 1).to(tl.float32))
    tlx.cluster_barrier()  # no CTA leaves while a peer may still store into it


@pytest.mark.parametrize("cluster", [2, 4])
def test_remote_store_and_barrier_exchange_rows(cluster):
    n, grid = 16, 8
    x = _randn(grid * n)
    y = torch.zeros_like(x)
    _exchange[(grid,)](x, y, N=n, CLUSTER=cluster, ctas_per_cga=(cluster, 1, 1))
    rows = x.view(grid // cluster, cluster, n)
    ref = rows.sum(dim=1, keepdim=True) * (torch.arange(cluster, dtype=torch.float32) + 1).view(1, cluster, 1)
    torch.testing.assert_close(y.view(grid // cluster, cluster, n), ref.expand_as(rows), rtol=1e-5, atol=1e-5)


@triton.jit
def _swap(x_ptr, y_ptr, N: tl.constexpr):
    """Each CTA of a pair copies its buffer into its peer's (async_remote_shmem_copy) and writes what it got."""
    rank = tlx.cluster_cta_rank()
    offs = tl.arange(0, N)
    mine = tlx.local_alloc((N,), tl.float32, 1)
    theirs = tlx.local_alloc((N,), tl.float32, 1)
    bar = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(bar[0], N * 4)
    tlx.local_store(mine[0], tl.load(x_ptr + tl.program_id(0) * N + offs))
    tlx.cluster_barrier()
    tlx.async_remote_shmem_copy(theirs[0], mine[0], rank ^ 1, bar[0])
    tlx.barrier_wait(bar[0], 0)
    tl.store(y_ptr + tl.program_id(0) * N + offs, tlx.local_load(theirs[0]))
    tlx.cluster_barrier()


def test_remote_copy_swaps_a_pair():
    x = _randn(4 * 8)
    y = torch.zeros_like(x)
    _swap[(4,)](x, y, N=8, ctas_per_cga=(2, 1, 1))
    torch.testing.assert_close(y.view(2, 2, 8), x.view(2, 2, 8).flip(1))


@triton.jit
def _pair_handshake(out_ptr):
    """CTA 1 of each pair arrives on CTA 0's barrier (remote arrive); CTA 0 waits for it, then both write."""
    rank = tlx.cluster_cta_rank()
    bar = tlx.alloc_barriers(1, arrive_count=1)
    tlx.cluster_barrier()
    tlx.barrier_arrive(bar[0], 1, remote_cta_rank=0, pred=rank == 1)
    tlx.barrier_wait(bar[0], 0, pred=rank == 0)
    tl.store(out_ptr + tl.program_id(0), rank + 10)


def test_remote_arrive_releases_the_leader():
    out = torch.zeros(4, dtype=torch.int32)
    _pair_handshake[(4,)](out, ctas_per_cga=(2, 1, 1))
    assert out.tolist() == [10, 11, 10, 11]


@triton.jit
def _waits_for_peer_that_never_arrives(out_ptr):
    rank = tlx.cluster_cta_rank()
    bar = tlx.alloc_barriers(1, arrive_count=2)  # both CTAs must arrive, but CTA 0 never does
    tlx.cluster_barrier()
    tlx.barrier_arrive(bar[0], 1, remote_cta_rank=0, pred=rank == 1)
    tlx.barrier_wait(bar[0], 0, pred=rank == 0)
    tl.store(out_ptr + tl.program_id(0), rank)


def test_deadlock_across_ctas_names_the_cta_and_line():
    out = torch.zeros(2, dtype=torch.int32)
    with pytest.raises(Exception) as info:
        _waits_for_peer_that_never_arrives[(2,)](out, ctas_per_cga=(2, 1, 1))
    err = _cause(info)
    assert isinstance(err, UtlxDeadlockError)
    text = str(err)
    assert "deadlock in a cluster of 2 CTAs" in text
    assert "CTA (0, 0, 0) (cluster rank 0): barrier_wait on bar[0]" in text
    assert "test_interp_cluster.py:" in text and "tlx.barrier_wait(bar[0], 0, pred=rank == 0)" in text
    assert "1 of 2 arrivals pending" in text


@triton.jit
def _multicast(x_ptr, y_ptr):
    """CTA 0 loads the pair's tile once, multicast to both CTAs; each waits on its own barrier for the bytes."""
    rank = tlx.cluster_cta_rank()
    desc = tl.make_tensor_descriptor(x_ptr, shape=[32, 16], strides=[16, 1], block_shape=[16, 16])
    buf = tlx.local_alloc((16, 16), tl.float32, 1)
    bar = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(bar[0], 16 * 16 * 4)
    tlx.cluster_barrier()
    pair = tl.program_id(0) // 2
    tlx.async_descriptor_load(desc, buf[0], [pair * 16, 0], bar[0], pred=rank == 0, multicast_targets=[0, 1])
    tlx.barrier_wait(bar[0], 0)
    r = tl.arange(0, 16)
    tl.store(y_ptr + tl.program_id(0) * 256 + r[:, None] * 16 + r[None, :], tlx.local_load(buf[0]) + rank)
    tlx.cluster_barrier()


def test_multicast_load_lands_in_both_ctas():
    x = _randn(32, 16)
    y = torch.zeros(4, 16, 16)
    _multicast[(4,)](x, y, ctas_per_cga=(2, 1, 1))
    tiles = x.view(2, 16, 16)
    ref = torch.stack([tiles[0], tiles[0] + 1, tiles[1], tiles[1] + 1])
    torch.testing.assert_close(y, ref)


@triton.jit
def _mma_2cta(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A pair computes a (2*BM) x BN tile: CTA r holds rows [r*BM, (r+1)*BM) of A and columns
    [r*BN/2, (r+1)*BN/2) of B; the leader's two_ctas MMA gives each CTA its rows of the product."""
    rank = tlx.cluster_cta_rank()
    pair = tl.program_id(0) // 2
    rm = tl.arange(0, BM)
    rk = tl.arange(0, BK)
    rn = tl.arange(0, BN // 2)
    a_s = tlx.local_alloc((BM, BK), tl.float16, 1)
    b_s = tlx.local_alloc((BK, BN // 2), tl.float16, 1)
    acc = tlx.local_alloc((BM, BN), tl.float32, 1, tlx.storage_kind.tmem)
    ready = tlx.alloc_barriers(1, arrive_count=2)
    done = tlx.alloc_barriers(1)
    row0 = pair * 2 * BM + rank * BM
    tlx.local_store(a_s[0], tl.load(a_ptr + (row0 + rm)[:, None] * BK + rk[None, :]))
    tlx.local_store(b_s[0], tl.load(b_ptr + rk[:, None] * BN + (rank * (BN // 2) + rn)[None, :]))
    tlx.fence_async_shared()
    tlx.cluster_barrier()
    tlx.barrier_arrive(ready[0], 1, remote_cta_rank=0)
    tlx.barrier_wait(ready[0], 0, pred=rank == 0)
    tlx.async_dot(a_s[0], b_s[0], acc[0], use_acc=False, mBarriers=[done[0]], two_ctas=True)
    tlx.barrier_wait(done[0], 0)
    out = tlx.local_load(acc[0])
    cn = tl.arange(0, BN)
    tl.store(c_ptr + (row0 + rm)[:, None] * BN + cn[None, :], out)
    tlx.cluster_barrier()


def test_two_cta_mma_computes_the_pair_tile():
    bm, bn, bk = 16, 32, 16
    a = _randn(4 * bm, bk).to(torch.float16)
    b = _randn(bk, bn).to(torch.float16)
    c = torch.zeros(4 * bm, bn)
    _mma_2cta[(4,)](a, b, c, BM=bm, BN=bn, BK=bk, ctas_per_cga=(2, 1, 1))
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


@triton.jit
def _ws_pair(out_ptr, ARRIVE: tl.constexpr):
    """Warp-specialized CTAs of a pair: CTA 0's producer task arrives on CTA 1's barrier (when ARRIVE); CTA 1's
    consumer task waits for it. Without the arrival, every task of both CTAs ends up waiting."""
    rank = tlx.cluster_cta_rank()
    bar = tlx.alloc_barriers(1)
    tlx.cluster_barrier()
    with tlx.async_tasks():
        with tlx.async_task("default"):
            if ARRIVE:
                tlx.barrier_arrive(bar[0], 1, remote_cta_rank=1, pred=rank == 0)
        with tlx.async_task(num_warps=4):
            tlx.barrier_wait(bar[0], 0, pred=rank == 1)
            tl.store(out_ptr + tl.program_id(0), rank + 1)


def test_warp_specialized_ctas_of_a_cluster_wait_for_each_other():
    out = torch.zeros(2, dtype=torch.int32)
    _ws_pair[(2,)](out, ARRIVE=True, ctas_per_cga=(2, 1, 1))
    assert out.tolist() == [1, 2]
    with pytest.raises(Exception) as info:
        _ws_pair[(2,)](out, ARRIVE=False, ctas_per_cga=(2, 1, 1))
    err = _cause(info)
    assert isinstance(err, UtlxDeadlockError)
    text = str(err)
    assert "CTA (1, 0, 0) (cluster rank 1): every task waits: task 1 (num_warps=4): barrier_wait on bar[0]" in text
    assert "tlx.barrier_wait(bar[0], 0, pred=rank == 1)" in text


@triton.jit
def _early_read_2cta(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The odd CTA reads its accumulator once the leader has *issued* the pair's MMA, without waiting for it."""
    rank = tlx.cluster_cta_rank()
    rm = tl.arange(0, BM)
    rk = tl.arange(0, BK)
    a_s = tlx.local_alloc((BM, BK), tl.float16, 1)
    b_s = tlx.local_alloc((BK, BN // 2), tl.float16, 1)
    acc = tlx.local_alloc((BM, BN), tl.float32, 1, tlx.storage_kind.tmem)
    done = tlx.alloc_barriers(1)
    issued = tlx.alloc_barriers(1)
    tlx.local_store(a_s[0], tl.load(a_ptr + rm[:, None] * BK + rk[None, :]))
    tlx.local_store(b_s[0], tl.load(b_ptr + rk[:, None] * (BN // 2) + tl.arange(0, BN // 2)[None, :]))
    tlx.fence_async_shared()
    tlx.cluster_barrier()
    tlx.async_dot(a_s[0], b_s[0], acc[0], use_acc=False, mBarriers=[done[0]], two_ctas=True)
    tlx.barrier_arrive(issued[0], 1, remote_cta_rank=1, pred=rank == 0)
    tlx.barrier_wait(issued[0], 0, pred=rank == 1)
    out = tlx.local_load(acc[0])  # the odd CTA: no wait on done[0] first
    tlx.barrier_wait(done[0], 0)
    tl.store(c_ptr + tl.program_id(0) * BM * BN + rm[:, None] * BN + tl.arange(0, BN)[None, :], out)


def test_hazard_checker_tracks_the_pair_mma_in_the_peer():
    bm, bn, bk = 16, 32, 16
    a = _randn(bm, bk).to(torch.float16)
    b = _randn(bk, bn // 2).to(torch.float16)
    c = torch.zeros(2 * bm * bn)
    with pytest.raises(Exception) as info:
        _early_read_2cta[(2,)](a, b, c, BM=bm, BN=bn, BK=bk, ctas_per_cga=(2, 1, 1))
    text = str(_cause(info))
    assert "local_load reads acc[0]" in text and "may still be writing it" in text
    assert "out = tlx.local_load(acc[0])" in text
