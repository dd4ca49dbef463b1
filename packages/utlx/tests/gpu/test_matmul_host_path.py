"""utlx.matmul on the GPU (issue 13): dtypes, operand layouts, ragged shapes, the direct launch path,
CUDA-graph capture, launch hooks and no host sync. Every result is compared with a float32 reference on
fresh random data.

Tuning is cut short (``UTLX_MATMUL_TUNE_BUDGET_S=0``: the first correct candidate wins) and private (a
temporary tuning cache): these tests are about the host path and numerics, the benchmark about speed.
The per-family tests bind every kernel family of every layout directly, so each kernel runs both its
first launch (through the JIT) and later ones (Triton's C launcher with cached descriptors).
"""

from __future__ import annotations

import importlib

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("private_matmul_tuning")]

import utlx  # noqa: E402
from gpu_env import torch  # noqa: E402  (skips this module on a machine without a GPU)
from gpu_shared import HOPPER, capture_matmul, check_hot_calls_do_not_synchronize, check_replays  # noqa: E402
from gpu_shared import check_matmul as check  # noqa: E402
from utlx.gemm_launch import Problem  # noqa: E402

m = importlib.import_module("utlx.matmul")
DTYPES = [torch.float16, torch.bfloat16]
LAYOUTS = ["rr", "rc", "cr", "cc"]  # A row/col-major, B row/col-major
# ragged w.r.t. every tile; (100, 383, 77): no 16-byte row at all; (129, 272, 80): M odd (a column-major
# A has 258-byte columns, which TMA cannot address: copied)
SHAPES = [(256, 256, 256), (300, 208, 136), (129, 272, 80), (1000, 1040, 528), (64, 64, 16), (100, 383, 77)]


def operands(M, N, K, dtype, layout, seed):
    """A [M, K] and B [K, N] with fresh random values, each row-major or a column-major view (``x.T``)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", dtype=dtype, generator=g)
    b = torch.randn(K, N, device="cuda", dtype=dtype, generator=g)
    if layout[0] == "c":
        a = a.T.contiguous().T
    if layout[1] == "c":
        b = b.T.contiguous().T
    return a, b


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp16", "bf16"])
def test_matmul(dtype, layout, shape):
    M, N, K = shape
    a, b = operands(M, N, K, dtype, layout, seed=M + N + K)
    check(utlx.matmul(a, b), a, b)  # tunes, makes the plan, first launch through the JIT
    for seed in (1, 2):  # the hot path on fresh data
        a2, b2 = operands(M, N, K, dtype, layout, seed=seed)
        check(utlx.matmul(a2, b2), a2, b2)
    key = m.plan_key(a2, b2)
    assert key in m._PLANS


def _one_per_family(a_col, b_col):
    seen, out = set(), []
    for cand in m.candidates("hopper", True, a_col=a_col, b_col=b_col):
        tag = (cand.family, cand.grid_mode, cand.config.get("EPILOGUE_SUBTILE", 1))  # subtiled epilogues too
        if tag not in seen:
            seen.add(tag)
            out.append(cand)
    return out


@pytest.mark.skipif(not HOPPER, reason="the TMA/wgmma kernels need sm_90")
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp16", "bf16"])
def test_every_family_first_and_direct_launches(dtype, layout):
    """Each kernel family x grid mode x epilogue (whole C tile or subtiled), bound like matmul binds it: launch
    1 JIT, launches 2-3 direct."""
    M, N, K = 304, 520, 264  # ragged w.r.t. every tile; 16-byte rows and columns (TMA for every layout)
    a_col, b_col = layout[0] == "c", layout[1] == "c"
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    for cand in _one_per_family(a_col, b_col):
        a, b = operands(M, N, K, dtype, layout, seed=3)
        launch = cand.bind(Problem.of(a, b, num_sms))
        check(launch.matmul(a, b, a.data_ptr(), b.data_ptr()), a, b)
        assert launch.direct is not None, cand.id
        assert launch.direct.call is not None, f"{cand.id}: no direct launch on this Triton"
        if launch.blocks is not None:
            assert launch.caches is not None, f"{cand.id}: descriptors were not lowered to TMA"
        for seed in (4, 5):
            a2, b2 = operands(M, N, K, dtype, layout, seed=seed)
            check(launch.matmul(a2, b2, a2.data_ptr(), b2.data_ptr()), a2, b2)


def test_reused_addresses_with_new_data():
    """Freed tensors' addresses come back from the caching allocator: a cached descriptor for the same
    address, shape and strides must read the new data."""
    M, N, K = 512, 384, 256
    for seed in range(4):
        a, b = operands(M, N, K, torch.float16, "rc", seed=10 + seed)
        check(utlx.matmul(a, b), a, b)
        del a, b


def test_hot_path_does_not_synchronize():
    a, b = operands(512, 512, 512, torch.bfloat16, "rr", seed=20)
    utlx.matmul(a, b)  # tune and plan outside the guarded region
    check_hot_calls_do_not_synchronize(a, b)


@pytest.mark.parametrize("layout", ["rr", "rc"])
def test_cuda_graph_capture_and_replay(layout):
    M, N, K = 384, 640, 256
    a, b = operands(M, N, K, torch.float16, layout, seed=30)
    check(utlx.matmul(a, b), a, b)  # tuned and planned before capture, as torch requires for cuBLAS too
    graph, c = capture_matmul(a, b)
    check_replays(graph, c, a, b, (operands(M, N, K, torch.float16, layout, seed=seed) for seed in (31, 32)))


def test_capturing_an_untuned_problem_is_a_clear_error():
    a, b = operands(192, 320, 128, torch.float16, "rr", seed=40)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match=r"call utlx\.matmul once on these shapes before capturing"):
        with torch.cuda.graph(graph):
            utlx.matmul(a, b)
    torch.cuda.synchronize()
    check(utlx.matmul(a, b), a, b)  # and utlx.matmul still works afterwards


def test_launch_hooks_see_every_launch():
    """With a Triton launch hook set, matmul takes Triton's own launch path (hooks and metadata)."""
    from launch_hooks import recording_launches

    a, b = operands(256, 256, 256, torch.float16, "rr", seed=50)
    utlx.matmul(a, b)
    with recording_launches() as seen:
        check(utlx.matmul(a, b), a, b)
        check(utlx.matmul(a, b), a, b)
    assert len(seen) == 2 and all("matmul_kernel" in name for name in seen), seen
    check(utlx.matmul(a, b), a, b)
    assert len(seen) == 2  # hook removed: back to the direct launch


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_device_that_is_not_current():
    a, b = operands(256, 256, 256, torch.float16, "rr", seed=60)
    a1, b1 = a.to("cuda:1"), b.to("cuda:1")
    c1 = utlx.matmul(a1, b1)  # current device is 0
    assert c1.device == a1.device
    check(c1.cpu().cuda(), a, b)
    c1 = utlx.matmul(a1, b1)
    check(c1.cpu().cuda(), a, b)
