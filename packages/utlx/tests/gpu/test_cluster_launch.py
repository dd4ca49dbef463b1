"""Clusters of independent CTAs on stock Triton (``utlx.compat.direct_launch(..., cluster_ctas=N)``).

The foundation of multicast TMA and of TLX's ``ctas_per_cga`` (`docs/utlx.md`): a kernel compiled with
``num_ctas=1`` (per-CTA layouts, ``tl.program_id`` = ``%ctaid``) launched with ``num_ctas`` = N in the packed
metadata must run every CTA once, in clusters of N consecutive CTAs. Checked from inside the kernel with the
cluster special registers.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import utlx as tlx  # noqa: E402
from gpu_env import torch  # noqa: E402  (skips this module on a machine without a GPU)
from utlx import compat  # noqa: E402

HOPPER = not getattr(torch.version, "hip", None) and torch.cuda.get_device_capability()[0] >= 9


@triton.jit
def _whoami(out_ptr):
    pid = tl.program_id(0)
    rank = tl.inline_asm_elementwise("mov.u32 $0, %cluster_ctarank;", "=r", [], dtype=tl.int32, is_pure=True,
                                     pack=1)
    size = tl.inline_asm_elementwise("mov.u32 $0, %cluster_nctarank;", "=r", [], dtype=tl.int32, is_pure=True,
                                     pack=1)
    cluster = tl.inline_asm_elementwise("mov.u32 $0, %clusterid.x;", "=r", [], dtype=tl.int32, is_pure=True,
                                        pack=1)
    tl.store(out_ptr + pid * 4 + 0, pid)
    tl.store(out_ptr + pid * 4 + 1, rank)
    tl.store(out_ptr + pid * 4 + 2, size)
    tl.store(out_ptr + pid * 4 + 3, cluster)


@pytest.mark.skipif(not HOPPER, reason="thread-block clusters need sm_90+")
@pytest.mark.parametrize("cluster_ctas", [1, 2, 4])
def test_every_cta_runs_once_in_clusters_of_consecutive_ctas(cluster_ctas):
    ctas = 264
    out = torch.full((ctas * 4,), -1, dtype=torch.int32, device="cuda")
    compiled = _whoami[(ctas,)](out)  # Triton's own launch: no clusters
    torch.cuda.synchronize()
    assert out.view(ctas, 4)[:, 2].eq(1).all().item()  # one CTA per "cluster"
    assert compiled.metadata.num_ctas == 1
    out.fill_(-1)
    call = compat.direct_launch(compiled, (ctas, 1, 1), cluster_ctas=cluster_ctas)
    assert call is not None
    call(compat.current_stream_fn()(torch.cuda.current_device()), (out.data_ptr(),))
    torch.cuda.synchronize()
    got = out.view(ctas, 4).cpu()
    pid = torch.arange(ctas, dtype=torch.int32)
    assert torch.equal(got[:, 0], pid)  # every CTA ran once, program_id is still the CTA index
    assert torch.equal(got[:, 1], pid % cluster_ctas)  # consecutive CTAs share a cluster ...
    assert got[:, 2].eq(cluster_ctas).all()  # ... of the asked size
    assert torch.equal(got[:, 3], pid // cluster_ctas)


@triton.jit
def _whoami_2d(out_ptr):
    """Per CTA: its program ids (x, y, z), its cluster rank and size, and its cluster's id (x, y)."""
    p0, p1, p2 = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    base = out_ptr + ((p2 * tl.num_programs(1) + p1) * tl.num_programs(0) + p0) * 8
    rank = tl.inline_asm_elementwise("mov.u32 $0, %cluster_ctarank;", "=r", [], dtype=tl.int32, is_pure=True,
                                     pack=1)
    size = tl.inline_asm_elementwise("mov.u32 $0, %cluster_nctarank;", "=r", [], dtype=tl.int32, is_pure=True,
                                     pack=1)
    cx = tl.inline_asm_elementwise("mov.u32 $0, %clusterid.x;", "=r", [], dtype=tl.int32, is_pure=True, pack=1)
    cy = tl.inline_asm_elementwise("mov.u32 $0, %clusterid.y;", "=r", [], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(base + 0, p0)
    tl.store(base + 1, p1)
    tl.store(base + 2, p2)
    tl.store(base + 3, rank)
    tl.store(base + 4, size)
    tl.store(base + 5, cx)
    tl.store(base + 6, cy)
    tl.store(base + 7, 1)


@pytest.mark.skipif(not HOPPER, reason="thread-block clusters need sm_90+")
@pytest.mark.parametrize(("grid", "dims"), [((8, 4, 1), (2, 1, 1)), ((8, 4, 1), (2, 2, 1)), ((8, 4, 2), (1, 4, 1)),
                                            ((8, 4, 2), (4, 2, 1)), ((4, 4, 2), (1, 2, 2))])
def test_ctas_per_cga_launches_one_program_per_cta_in_clusters_of_that_shape(grid, dims):
    """TLX's convention through Triton's own launch (``kernel[grid](..., ctas_per_cga=...)``): the grid counts
    CTAs, ``tl.program_id`` is the CTA's id, and the CTAs form clusters of the asked shape, also in y and z
    (the driver forms them from the PTX entry's ``.reqnctapercluster``: utlx.compiler.nvidia.cluster_launch)."""
    n = grid[0] * grid[1] * grid[2]
    out = torch.full((n * 8,), -1, dtype=torch.int32, device="cuda")
    compiled = _whoami_2d[grid](out, ctas_per_cga=dims)
    torch.cuda.synchronize()
    assert tuple(compiled.metadata.ctas_per_cga) == dims and compiled.metadata.num_ctas == 1
    assert f".reqnctapercluster {dims[0]}, {dims[1]}, {dims[2]}" in compiled.asm["ptx"]
    got = out.view(grid[2], grid[1], grid[0], 8).cpu()
    z, y, x = torch.meshgrid(*(torch.arange(g, dtype=torch.int32) for g in reversed(grid)), indexing="ij")
    assert got[..., 7].eq(1).all()  # every CTA ran once
    assert torch.equal(got[..., 0], x) and torch.equal(got[..., 1], y) and torch.equal(got[..., 2], z)
    rank = x % dims[0] + (y % dims[1]) * dims[0] + (z % dims[2]) * dims[0] * dims[1]
    assert torch.equal(got[..., 3], rank)  # rank within the cluster, x fastest
    assert got[..., 4].eq(dims[0] * dims[1] * dims[2]).all()  # clusters of the asked size
    assert torch.equal(got[..., 5], x // dims[0]) and torch.equal(got[..., 6], y // dims[1])


@triton.jit
def _swap_with_peer(y_ptr, M: tl.constexpr):
    """Each CTA of a pair stores M values into its peer's shared memory (st.async, completing on the peer's
    barrier) and writes out what it received."""
    rank = tlx.cluster_cta_rank()
    parts = tlx.local_alloc((M, 1), tl.float32, 2)
    bars = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(bars[0], M * 4)
    tlx.cluster_barrier()
    v = (tl.arange(0, M)[:, None] + 100 * (rank + 1) + tl.program_id(0) * 1000).to(tl.float32)
    tlx.async_remote_shmem_store(dst=parts[rank], src=v, remote_cta_rank=rank ^ 1, barrier=bars[0])
    tlx.barrier_wait(bars[0], 0)
    got = tlx.local_load(parts[rank ^ 1])
    tl.store(y_ptr + tl.program_id(0) * M + tl.arange(0, M)[:, None], got)
    tlx.cluster_barrier()  # the peer's stores into this CTA are done before either exits


@pytest.mark.skipif(not HOPPER, reason="distributed shared memory needs sm_90+")
def test_async_remote_shmem_store_reaches_the_peer_and_completes_its_barrier():
    """Checked on the H200 (2026-12-02) with this kernel's PTX as utlx compiles it: 16 CTAs in pairs, 8 values
    each over 128 threads (each value stored once, else the barrier's byte count would be wrong)."""
    ctas, m = 16, 8
    y = torch.full((ctas * m,), -1.0, device="cuda")
    _swap_with_peer[(ctas,)](y, M=m, ctas_per_cga=(2, 1, 1), num_warps=4)
    p = torch.arange(ctas).repeat_interleave(m)
    q = p ^ 1
    i = torch.arange(m).repeat(ctas)
    assert torch.equal(y.cpu(), (i + 100 * (q % 2 + 1) + q * 1000).float())
