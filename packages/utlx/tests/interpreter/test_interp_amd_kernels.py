"""utlx's own AMD TLX kernels (``utlx.kernels.amd.amd_tlx``) compute the right values under ``TRITON_INTERPRET=1``.

Each result is checked against a float32 reference on fresh random data, with ragged M/N/K where the kernel
masks (tiles that straddle the edges). The GEMMs run in fp16 and bf16 (bf16 ``tl.dot`` is right under the
interpreter once utlx is imported: ``test_interp_sweep.py``). The compiled code of the same kernels is checked
in ``tests/compile/test_amd_tlx_kernels.py``; no AMD GPU has run them.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
import utlx as tlx
import utlx.kernels.amd.amd_tlx as k
from utlx import compat

DTYPES = [torch.float16, torch.bfloat16]


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", [0, 1])
def test_buffer_gemm(dtype, seed):
    M, N, K, BM, BN, BK = 70, 50, 72, 32, 32, 16
    a = torch.randn(M, K, generator=_gen(seed)).to(dtype)
    b = torch.randn(K, N, generator=_gen(seed + 100)).to(dtype)
    c = torch.full((M, N), -7.0, dtype=dtype)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    k.buffer_gemm_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=BM, BLOCK_N=BN,
                               BLOCK_K=BK, NUM_WARPS=4)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=2e-2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_direct_lds_gemm_with_column_major_b(dtype):
    M, N, K, BM, BN, BK = 70, 50, 80, 32, 32, 16
    a = torch.randn(M, K, generator=_gen(2)).to(dtype)
    b = torch.randn(N, K, generator=_gen(3)).to(dtype).T  # K x N, column-major (stride (1, K))
    c = torch.zeros(M, N, dtype=dtype)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    k.direct_lds_gemm_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(1), c.stride(0), BLOCK_M=BM, BLOCK_N=BN,
                                   BLOCK_K=BK, NUM_BUFFERS=3)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=2e-2)


def test_layouts_kernel_moves_every_value_exactly():
    x = torch.randn(32, 64, generator=_gen(4)).to(torch.float16)
    y, t, q = torch.zeros_like(x), torch.zeros(64, 32, dtype=torch.float16), torch.zeros(16, 32, dtype=torch.float16)
    bits = torch.zeros(32, 64, dtype=torch.int16)
    k.layouts_kernel[(1,)](x, y, bits, t, q, BLOCK_M=32, BLOCK_N=64, REGISTER=k.TILE_LAYOUT, SWIZZLED=k.SWIZZLED_WARPS)
    assert torch.equal(y, x)
    assert torch.equal(bits, x.view(torch.int16))
    assert torch.equal(t, x.reshape(64, 32))
    assert torch.equal(q, x[16:, 32:])


def test_mfma_hints_kernel():
    a = torch.randn(64, 64, generator=_gen(5)).to(torch.float16)
    b = torch.randn(64, 64, generator=_gen(6)).to(torch.float16)
    c, d = torch.zeros(64, 64), torch.zeros(64, 64)
    k.mfma_hints_kernel[(1,)](a, b, c, d, BLOCK=64, NUM_WARPS=4)
    ref = a.float() @ b.float()
    torch.testing.assert_close(c, ref, atol=1e-2, rtol=1e-3)
    torch.testing.assert_close(d, 2 * ref, atol=2e-2, rtol=1e-3)


@pytest.mark.parametrize("uniform", [False, True])
def test_row_table_kernel_reads_base_pointers_from_memory(uniform):
    rows, n = 5, 200
    x = torch.randn(rows * 3, n, generator=_gen(7))
    picked = [4, 0, 13, 7, 7]
    table = torch.tensor([x[r].data_ptr() for r in picked], dtype=torch.int64)
    out = torch.zeros(rows, n)
    k.row_table_kernel[(rows,)](table, out, n, BLOCK=256, UNIFORM=uniform)
    assert torch.equal(out, 2 * x[picked])


def test_buffer_atomic_add_row_sums():
    M, N = 70, 100
    x = torch.randn(M, N, generator=_gen(8)).to(torch.float16)
    out = torch.zeros(M)
    k.atomic_rowsum_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](x, out, M, N, x.stride(0), BLOCK_M=32, BLOCK_N=32)
    torch.testing.assert_close(out, x.float().sum(1), atol=1e-3, rtol=1e-4)


def test_gather_scatter_kernel():
    if not compat.gluon_builder_has("create_local_gather"):
        pytest.skip("the compiled op needs Triton 3.7+; the CPU body is the same on every version")
    m, n = 32, 64
    x = torch.randn(m, n, generator=_gen(9))
    perm = torch.stack([torch.randperm(m, generator=_gen(10 + j)) for j in range(n)], dim=1).to(torch.int32)
    idx = torch.randint(0, m, (m, n), generator=_gen(11), dtype=torch.int32)
    y, g = torch.zeros(m, n), torch.zeros(m, n)
    k.gather_scatter_kernel[(1,)](x, perm, idx, y, g, BLOCK_M=m, BLOCK_N=n)
    want = torch.zeros(m, n).scatter_(0, perm.long(), x)
    assert torch.equal(y, want)
    assert torch.equal(g, want.gather(0, idx.long()))


@triton.jit
def _direct_copy(x_ptr, y_ptr, BLOCK: tl.constexpr, WAIT: tl.constexpr):
    buf = tlx.local_alloc((BLOCK,), tl.float32, 1)
    offs = tl.arange(0, BLOCK)
    tlx.buffer_load_to_local(buf[0], x_ptr, offs)
    tlx.async_load_commit_group()
    if WAIT:
        tlx.async_load_wait_group(0)
    tl.store(y_ptr + offs, tlx.local_load(buf[0], relaxed=True))


def test_buffer_load_to_local_is_an_async_copy_for_the_hazard_checker():
    """``relaxed=True`` says a wait came first; it does not make a read before the wait safe."""
    from utlx.interpreter import UtlxHazardError

    x, y = torch.randn(64, generator=_gen(12)), torch.zeros(64)
    _direct_copy[(1,)](x, y, BLOCK=64, WAIT=True)
    assert torch.equal(y, x)
    with pytest.raises(Exception) as info:
        _direct_copy[(1,)](x, y, BLOCK=64, WAIT=False)
    exc = info.value
    while exc is not None and not isinstance(exc, UtlxHazardError):
        exc = exc.__cause__ or exc.__context__
    assert exc is not None and "has not been waited for" in str(exc), info.value
