"""The skinny-problem kernels on the GPU (issue 13: M = 16, 128, 512 with N = K = 8192): every split-K and
narrow-tile candidate ``utlx.matmul`` adds for skinny shapes, fp16 and bf16, row-major and ``x @ w.T``
weights, against a float32 reference on fresh random data; the split-K plan through ``utlx.matmul``'s hot
path, without host syncs, and under CUDA-graph capture (the workspace memset is captured with the kernel).
The self-cleaning workspace: the kernel leaves it zeroed; ``utlx.matmul`` reuses one per stream without
allocating per call, two streams use two, growth replaces it, and capture leaves the pool alone.
"""

from __future__ import annotations

import importlib

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("private_matmul_tuning")]

import utlx  # noqa: E402
from gpu_env import torch  # noqa: E402  (skips this module on a machine without a GPU)
from gpu_shared import HOPPER, capture_matmul, check_hot_calls_do_not_synchronize, check_replays  # noqa: E402
from gpu_shared import check_matmul as check  # noqa: E402
from utlx.gemm_launch import Problem, SplitKLaunch  # noqa: E402

m = importlib.import_module("utlx.matmul")
if not HOPPER:  # pragma: no cover
    pytest.skip("the skinny-problem kernels are Hopper TMA/wgmma kernels", allow_module_level=True)

DTYPES = [torch.float16, torch.bfloat16]
#: issue 13's skinny shapes, plus one ragged in M and N, with K not a multiple of SPLIT_K * BLOCK_K
SHAPES = [(16, 8192, 8192), (128, 8192, 8192), (512, 8192, 8192), (17, 8200, 4104)]
NUM_SMS = torch.cuda.get_device_properties(0).multi_processor_count


def operands(M, N, K, dtype, b_col, seed):
    """A [M, K] and B [K, N] with fresh random values; ``b_col``: B is ``w.T`` for a row-major ``w [N, K]``."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", dtype=dtype, generator=g)
    if b_col:
        return a, torch.randn(N, K, device="cuda", dtype=dtype, generator=g).T
    return a, torch.randn(K, N, device="cuda", dtype=dtype, generator=g)


def skinny_candidates(b_col):
    """What a skinny shape adds to the regular Hopper candidates."""
    base = {c.id for c in m.candidates("hopper", True, b_col=b_col)}
    return [c for c in m.candidates("hopper", True, b_col=b_col, shape=(16, 8192, 8192)) if c.id not in base]


def test_skinny_shapes_offer_split_k():
    for M in (16, 128):
        a, b = operands(M, 8192, 8192, torch.float16, False, seed=1)
        assert any(c.family == "tma_splitk" for c in m.tuning_candidates(a, b)), M


@pytest.mark.parametrize("b_col", [False, True], ids=["rr", "rc"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp16", "bf16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_skinny_candidate(shape, dtype, b_col):
    """Each candidate bound as matmul binds it: launch 1 through the JIT, launches 2-3 direct, fresh data."""
    M, N, K = shape
    cands = skinny_candidates(b_col)
    assert any(c.family == "tma_splitk" for c in cands)
    for cand in cands:
        a, b = operands(M, N, K, dtype, b_col, seed=M + K)
        launch = cand.bind(Problem.of(a, b, NUM_SMS))
        assert isinstance(launch, SplitKLaunch) == (cand.family == "tma_splitk")
        check(launch.matmul(a, b, a.data_ptr(), b.data_ptr()), a, b, f"{cand.id} launch 1")
        assert launch.direct is not None and launch.direct.call is not None, cand.id
        assert launch.caches is not None, f"{cand.id}: descriptors were not lowered to TMA"
        for seed in (2, 3):
            a2, b2 = operands(M, N, K, dtype, b_col, seed=seed)
            check(launch.matmul(a2, b2, a2.data_ptr(), b2.data_ptr()), a2, b2, f"{cand.id} seed {seed}")
        c = torch.full((M, N), float("nan"), device="cuda", dtype=dtype)
        launch(a2, b2, c)  # into a given C (the tuner's and the rotating benchmark's path)
        check(c, a2, b2, f"{cand.id} into C")


def _pin_split_k(a, b, split_k=2):
    """Make ``utlx.matmul`` choose a split-K candidate for this problem through its disk cache (what a
    tuning that picked it leaves behind): the plan is then a SplitKLaunch."""
    M, K = a.shape
    N = b.shape[1]
    a_layout, b_layout = m.layout(tuple(a.stride())), m.layout(tuple(b.stride()))
    cand = next(c for c in m.tuning_candidates(a, b) if c.family == "tma_splitk" and c.config["SPLIT_K"] == split_k)
    info = m._device_info(a.device)
    key = m.TuningCache.key(info.name, m._dtype_tag(a.dtype, a_layout, b_layout), True, M, N, K)
    m.TuningCache(m.default_cache_path()).put(key, cand.id)
    return cand


@pytest.mark.parametrize("b_col", [False, True], ids=["rr", "rc"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp16", "bf16"])
def test_matmul_runs_a_split_k_plan_without_host_syncs(dtype, b_col):
    M, N, K = 16, 8192, 8192
    a, b = operands(M, N, K, dtype, b_col, seed=10)
    cand = _pin_split_k(a, b)
    check(utlx.matmul(a, b), a, b)
    assert m.report_for(a, b).winner.id == cand.id
    plan = m._PLANS[m.plan_key(a, b)]
    assert isinstance(plan, SplitKLaunch) and plan.direct is not None and plan.direct.call is not None
    check_hot_calls_do_not_synchronize(a, b)
    for seed in (11, 12):  # fresh data on the hot path: no sums carried over from an earlier call
        a2, b2 = operands(M, N, K, dtype, b_col, seed=seed)
        check(utlx.matmul(a2, b2), a2, b2)


@pytest.mark.parametrize("b_col", [False, True], ids=["rr", "rc"])
def test_cuda_graph_capture_and_replay_of_a_split_k_plan(b_col):
    M, N, K = 128, 8192, 8192
    a, b = operands(M, N, K, torch.bfloat16, b_col, seed=20)
    _pin_split_k(a, b)
    check(utlx.matmul(a, b), a, b)
    assert isinstance(m._PLANS[m.plan_key(a, b)], SplitKLaunch)
    graph, c = capture_matmul(a, b)
    # every replay zeroes its workspace again: no sums carried over
    check_replays(graph, c, a, b, (operands(M, N, K, torch.bfloat16, b_col, seed=seed) for seed in (21, 22, 23)))


def test_split_k_under_launch_hooks():
    """With a Triton launch hook set, the split-K plan takes Triton's own launch path, workspace included."""
    from launch_hooks import recording_launches

    a, b = operands(16, 8192, 8192, torch.float16, False, seed=30)
    _pin_split_k(a, b, split_k=4)
    utlx.matmul(a, b)
    with recording_launches() as seen:
        check(utlx.matmul(a, b), a, b)
        check(utlx.matmul(a, b), a, b)
    assert len(seen) == 2 and all("splitk" in name for name in seen), seen


# ------------------------------------------------------------------------------------------------------
# The self-cleaning workspace: the kernel leaves it zeroed, utlx.matmul keeps one per (device, stream).

from utlx.kernels.nvidia import hopper_tma_splitk as splitk  # noqa: E402
from utlx.splitk_workspace import WORKSPACES  # noqa: E402


def _stream_workspace(stream=None):
    """The pool's (data_ptr, numel, tensor) for a stream (the current one by default), or None."""
    s = stream if stream is not None else torch.cuda.current_stream()
    return WORKSPACES.table(torch.cuda.current_device()).get(s.cuda_stream)


def _allocations():
    return torch.cuda.memory_stats()["allocation.all.allocated"]


@pytest.mark.parametrize("config", range(len(splitk.CONFIGS)), ids=lambda i: m.Candidate(
    "tma_splitk", tuple(sorted(splitk.CONFIGS[i][0].items())), splitk.CONFIGS[i][1]).id)
@pytest.mark.parametrize("shape", [(16, 8192, 8192), (17, 8200, 4104)], ids=lambda s: "x".join(map(str, s)))
def test_kernel_leaves_its_workspace_zeroed(shape, config):
    """Two launches on fresh data through one caller-held workspace: both correct, the workspace all-zero
    after each (the last slice of each tile zeroes the tile's sums and resets its counter)."""
    M, N, K = shape
    const = splitk.CONFIGS[config][0]
    ws = torch.zeros(splitk.workspace_numel(M, N, const) + 64, device="cuda", dtype=torch.float32)
    for seed in (40, 41):
        a, b = operands(M, N, K, torch.bfloat16, False, seed=seed)
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        splitk.launch(a, b, c, config, workspace=ws)
        torch.cuda.synchronize()
        check(c, a, b, f"config {config} seed {seed}")
        assert ws.count_nonzero().item() == 0, f"config {config} seed {seed}: workspace not zeroed"


def test_matmul_reuses_the_streams_workspace_without_allocating_or_zeroing_per_call():
    M, N, K = 16, 8192, 8192
    a, b = operands(M, N, K, torch.bfloat16, True, seed=50)
    _pin_split_k(a, b)
    check(utlx.matmul(a, b), a, b)
    check(utlx.matmul(a, b), a, b)  # first hot-path call: the stream's workspace exists from here on
    entry = _stream_workspace()
    assert entry is not None and entry[1] >= M * N
    inputs = [operands(M, N, K, torch.bfloat16, True, seed=seed) for seed in range(51, 59)]
    torch.cuda.synchronize()
    before = _allocations()
    outs = [utlx.matmul(a2, b2) for a2, b2 in inputs]  # fresh data every call: no sums may carry over
    assert _allocations() - before == len(outs)  # C only: no workspace allocated (or zeroed) per call
    assert _stream_workspace() is entry
    torch.cuda.synchronize()
    for c, (a2, b2) in zip(outs, inputs, strict=True):
        check(c, a2, b2)
    assert entry[2].count_nonzero().item() == 0


def test_two_streams_use_two_workspaces_concurrently():
    M, N, K = 128, 8192, 8192
    a, b = operands(M, N, K, torch.float16, False, seed=60)
    _pin_split_k(a, b)
    utlx.matmul(a, b)
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    inputs = [operands(M, N, K, torch.float16, False, seed=61 + i) for i in range(2)]
    outs: list[list] = [[], []]
    torch.cuda.synchronize()
    for _ in range(6):  # interleaved launches; the streams' kernels overlap on the GPU
        for i, s in enumerate(streams):
            with torch.cuda.stream(s):
                outs[i].append(utlx.matmul(*inputs[i]))
    torch.cuda.synchronize()
    for i in range(2):
        for c in outs[i]:
            check(c, *inputs[i], f"stream {i}")
    entries = [_stream_workspace(s) for s in streams]
    assert all(e is not None for e in entries) and entries[0][0] != entries[1][0]
    assert all(e[2].count_nonzero().item() == 0 for e in entries)


def test_growth_on_one_stream_replaces_the_workspace_with_a_bigger_zeroed_one():
    small, big = (16, 4096, 8192), (128, 8192, 8192)
    stream = torch.cuda.Stream()
    pinned = []
    for M, N, K in (small, big):
        a, b = operands(M, N, K, torch.float16, False, seed=M)
        _pin_split_k(a, b)
        utlx.matmul(a, b)
        pinned.append((a, b))
    torch.cuda.synchronize()
    WORKSPACES.release()  # torch hands out pooled streams: this handle may hold an earlier test's workspace
    with torch.cuda.stream(stream):
        (a1, b1), (a2, b2) = pinned
        c1 = utlx.matmul(a1, b1)
        first = _stream_workspace(stream)
        c2 = utlx.matmul(a2, b2)
        second = _stream_workspace(stream)
        c3 = utlx.matmul(a1, b1)  # the bigger workspace serves the smaller problem too
    torch.cuda.synchronize()
    assert second[1] > first[1] and second[0] != first[0] and _stream_workspace(stream) is second
    check(c1, a1, b1, "small")
    check(c2, a2, b2, "big")
    check(c3, a1, b1, "small after growth")
    assert second[2].count_nonzero().item() == 0


@pytest.mark.parametrize("b_col", [False, True], ids=["rr", "rc"])
def test_graph_capture_uses_its_own_workspace_while_eager_calls_use_the_streams(b_col):
    """Under capture the pool is left alone (the graph captures a memset of its own workspace), so replays
    are correct on fresh data even while eager calls on another stream run beside them."""
    M, N, K = 16, 8192, 8192
    a, b = operands(M, N, K, torch.bfloat16, b_col, seed=70)
    _pin_split_k(a, b)
    check(utlx.matmul(a, b), a, b)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        utlx.matmul(a, b)  # warm-up on the side stream (the pool now holds its workspace)
    torch.cuda.current_stream().wait_stream(side)
    pool_before = {s: e[0] for s, e in WORKSPACES.table(torch.cuda.current_device()).items()}
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        before = _allocations()
        c = utlx.matmul(a, b)
        captured_allocations = _allocations() - before
    assert captured_allocations == 2  # C and the graph's own zeroed workspace (from the graph's memory pool)
    assert {s: e[0] for s, e in WORKSPACES.table(torch.cuda.current_device()).items()} == pool_before
    x, y = operands(M, N, K, torch.bfloat16, b_col, seed=71)
    eager = []
    torch.cuda.synchronize()
    for seed in (72, 73, 74):
        a_new, b_new = operands(M, N, K, torch.bfloat16, b_col, seed=seed)
        a.copy_(a_new)
        b.copy_(b_new)
        side.wait_stream(torch.cuda.current_stream())
        graph.replay()
        with torch.cuda.stream(side):  # an eager call overlapping the replay, on its own workspace
            eager.append(utlx.matmul(x, y))
        torch.cuda.synchronize()
        check(c, a_new, b_new, f"replay {seed}")
    for out in eager:
        check(out, x, y, "eager beside a replay")
    assert _stream_workspace(side)[2].count_nonzero().item() == 0
