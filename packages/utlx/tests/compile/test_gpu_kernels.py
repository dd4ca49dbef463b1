"""GPU correctness of every shipped utlx GEMM kernel and of ``utlx.matmul`` (skipped without a GPU).

Each kernel runs on fresh random fp16 data and is compared with a float32 torch reference, on shapes
that are multiples of the tile and shapes with ragged edges in M, N and K.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():  # pragma: no cover - CPU machines
    pytest.skip("needs a GPU", allow_module_level=True)

import warnings  # noqa: E402

import triton  # noqa: E402
from utlx.compiler.common.errors import UtlxPerformanceWarning  # noqa: E402
from utlx.kernels.amd import amd_pipelined  # noqa: E402
from utlx.kernels.nvidia import hopper_pipelined  # noqa: E402

# N and K stay multiples of 8 (16-byte rows); M, N, K are ragged w.r.t. the tiles.
SHAPES = [(256, 256, 256), (512, 384, 1024), (300, 200, 136), (129, 264, 72), (1000, 1032, 520), (64, 64, 8)]
# The JIT proves a row aligned only when its stride is a multiple of 16 elements: these keep cp.async.
ALIGNED_SHAPES = [(256, 256, 256), (512, 384, 1024), (300, 208, 144), (129, 272, 80), (1000, 1040, 528),
                  (64, 64, 16)]
# Row strides the JIT cannot prove aligned (the last one is not even 4-byte aligned): utlx stages these
# async_load copies through registers (utlx.compiler.nvidia.copy_width) instead of failing in the LLVM lowering.
UNALIGNED_SHAPES = [(300, 200, 136), (129, 264, 72), (1000, 1032, 520), (64, 64, 8), (100, 383, 77)]


def _is_hopper() -> bool:
    return not getattr(torch.version, "hip", None) and torch.cuda.get_device_capability()[0] == 9


def _inputs(M, N, K, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16, generator=g)
    return a, b


def _check(c, a, b):
    ref = a.float() @ b.float()
    err = (c.float() - ref).abs().max().item()
    scale = ref.abs().max().item() + 1e-6
    assert err <= 2e-2 * scale + 1e-2, f"max error {err} (reference max {scale})"


def _launch(kernel, const, nw, a, b, compiled=None):
    M, K = a.shape
    N = b.shape[1]
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"]),)
    k = kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                     num_warps=nw, **const)
    torch.cuda.synchronize()
    if compiled is not None:
        compiled.append(k)
    return c


@pytest.mark.parametrize("config", range(len(hopper_pipelined.CONFIGS)))
@pytest.mark.parametrize("shape", ALIGNED_SHAPES)
def test_hopper_pipelined(shape, config):
    if not _is_hopper():
        pytest.skip("cp.async + wgmma kernel needs sm_90")
    M, N, K = shape
    a, b = _inputs(M, N, K, seed=hash((shape, config)) % 1000)
    const, nw = hopper_pipelined.CONFIGS[config]
    compiled = []
    _check(_launch(hopper_pipelined.matmul_kernel_pipelined_hopper, const, nw, a, b, compiled), a, b)
    assert "cp.async.cg.shared.global" in compiled[0].asm["ptx"]  # the direct cp.async ring really ran


@pytest.mark.parametrize("config", range(len(hopper_pipelined.CONFIGS)))
@pytest.mark.parametrize("shape", UNALIGNED_SHAPES)
def test_hopper_pipelined_unaligned_rows(shape, config):
    """Unproven row alignment: the narrow async_load copies are staged (synchronous ld.global in the PTX;
    the kernel has no other global loads) and the result is right."""
    if not _is_hopper():
        pytest.skip("cp.async + wgmma kernel needs sm_90")
    M, N, K = shape
    a, b = _inputs(M, N, K, seed=hash((shape, config)) % 1000 + 1)
    const, nw = hopper_pipelined.CONFIGS[config]
    compiled = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtlxPerformanceWarning)  # expected here; asserted by the CPU tests
        c = _launch(hopper_pipelined.matmul_kernel_pipelined_hopper, const, nw, a, b, compiled)
    _check(c, a, b)
    ptx = compiled[0].asm["ptx"]
    assert "ld.global" in ptx and "wgmma.mma_async" in ptx


@pytest.mark.parametrize("shape", SHAPES)
def test_register_staged(shape):
    M, N, K = shape
    a, b = _inputs(M, N, K, seed=7 + M)
    const = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "NUM_STAGES": 3}
    _check(_launch(amd_pipelined.matmul_kernel_pipelined_amd, const, 4, a, b), a, b)


@pytest.mark.parametrize("shape", [*SHAPES, (100, 383, 77)])  # the last one is not 16-byte aligned
def test_utlx_matmul(shape):
    from utlx.matmul import matmul

    M, N, K = shape
    a, b = _inputs(M, N, K, seed=11 + N)
    c = matmul(a, b)
    torch.cuda.synchronize()
    assert c.shape == (M, N) and c.dtype == torch.float16
    _check(c, a, b)
    # later calls take the fast launch path (CompiledKernel[grid]): fresh data, including a
    # sliced (misaligned-by-one-row) A, must still be right
    for seed in (101, 202):
        a2, b2 = _inputs(M, N, K, seed=seed + N)
        _check(matmul(a2, b2), a2, b2)
    big, b3 = _inputs(M + 1, N, K, seed=303)
    a3 = big[1:]
    _check(matmul(a3, b3), a3, b3)


@pytest.mark.parametrize("config", range(2))
@pytest.mark.parametrize("shape", SHAPES)
def test_hopper_tma_persistent(shape, config):
    if not _is_hopper():
        pytest.skip("TMA + wgmma kernel needs sm_90")
    from utlx.kernels.nvidia import hopper_tma_persistent

    M, N, K = shape
    a, b = _inputs(M, N, K, seed=3 + K)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    hopper_tma_persistent.launch(a, b, c, config=config)
    torch.cuda.synchronize()
    _check(c, a, b)


@pytest.mark.parametrize("shape", [(128, 256, 80), (64, 128, 128), (2048, 2048, 128), (8192, 8192, 8192)])
def test_hopper_pipelined_64_row_tile(shape):
    """The shapes that once returned wrong values with the 64-row tile (tail prefetches landing in the
    epilogue's reused shared memory); run several times since the bug was a race."""
    if not _is_hopper():
        pytest.skip("cp.async + wgmma kernel needs sm_90")
    M, N, K = shape
    const, nw = hopper_pipelined.CONFIGS[2]
    for seed in range(3):
        a, b = _inputs(M, N, K, seed=5 + seed)
        _check(_launch(hopper_pipelined.matmul_kernel_pipelined_hopper, const, nw, a, b), a, b)
