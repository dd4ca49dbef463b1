"""The 2-CTA cluster GEMM (``ws_cluster``: multicast A or, with ``SHARE_B``, B; cross-CTA slot release) on the GPU.

What could go wrong and where it would show: a wrong CTA mask or byte count hangs a ``full`` barrier (the
test times out); a missing peer arrival lets a producer overwrite a slot the peer still reads (wrong values
that move between runs: each shape runs on three fresh inputs); a CTA leaving early faults (illegal
address); a B half multicast into the wrong columns of the peer's slot gives wrong values in every tile.
Shapes cover an odd number of column tiles (sharing A: the last pair's second tile lies past N) and of row
tiles (sharing B: past M), ragged
M, N and K, a single k-step, fewer tile pairs than clusters, and many tiles per CTA (the ring and the
barrier phases wrap round many times). Every result is checked against a float32 reference.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

from gpu_env import torch  # noqa: E402  (skips this module on a machine without a GPU)

if torch.cuda.get_device_capability()[0] != 9:  # pragma: no cover
    pytest.skip("clusters with multicast TMA: this kernel is built for sm_90", allow_module_level=True)

from utlx.gemm_launch import Problem  # noqa: E402
from utlx.kernels.nvidia import hopper_ws_cluster as cl  # noqa: E402
from utlx.matmul import Candidate  # noqa: E402

SHAPES = [
    (128, 256, 64),      # one pair, one k-step
    (256, 768, 512),     # 3 column tiles: the last pair's second tile is past N
    (312, 1000, 200),    # ragged everything (312: column-major A keeps 16-byte strides for TMA)
    (2048, 2048, 2048),  # one wave of pairs
    (4096, 4096, 1024),  # several pairs per cluster
    (128, 8192, 8192),   # the skinny shape this kernel is for
    (8192, 8192, 64),    # many tiles per CTA, one k-step each
]
TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def _candidate(i: int, a_col: bool, b_col: bool, share_b: bool = False) -> Candidate:
    const, nw = cl.CONFIGS[i]
    cols = {**({"A_COL": 1} if a_col else {}), **({"B_COL": 1} if b_col else {}), **({"SHARE_B": 1} if share_b else {})}
    return Candidate("ws_cluster", tuple(sorted({**const, **cols}.items())), nw, "persistent")


def _inputs(M, N, K, dtype, seed, a_col, b_col):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn((K, M) if a_col else (M, K), device="cuda", generator=g).to(dtype)
    b = torch.randn((N, K) if b_col else (K, N), device="cuda", generator=g).to(dtype)
    return (a.T if a_col else a), (b.T if b_col else b)


@pytest.mark.parametrize("cfg", range(len(cl.CONFIGS)), ids=lambda i: f"cfg{i}")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize(("a_col", "b_col"), [(False, False), (True, True)], ids=["rr", "cc"])
@pytest.mark.parametrize("share_b", [False, True], ids=["shareA", "shareB"])
def test_matches_float32_reference(cfg, dtype, a_col, b_col, share_b):
    cand = _candidate(cfg, a_col, b_col, share_b)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for i, (M, N, K) in enumerate(SHAPES):
        launch = None
        for rep in range(3):
            a, b = _inputs(M, N, K, dtype, 100 * i + rep, a_col, b_col)
            if launch is None:
                launch = cand.bind(Problem.of(a, b, sms))
            c = torch.full((M, N), float("nan"), dtype=dtype, device="cuda")
            launch(a, b, c)
            torch.cuda.synchronize()
            ref = a.float() @ b.float()
            err = ((c.float() - ref).norm() / ref.norm()).item()
            assert err < TOL[dtype], (cand.id, (M, N, K), rep, err)


def test_ptx_is_the_cluster_form():
    cand = _candidate(0, False, False)
    a, b = _inputs(1024, 1024, 512, torch.float16, 0, False, False)
    launch = cand.bind(Problem.of(a, b, torch.cuda.get_device_properties(0).multi_processor_count))
    launch(a, b, torch.empty(1024, 1024, dtype=torch.float16, device="cuda"))
    ptx = launch.direct.compiled.asm["ptx"]
    assert ".multicast::cluster" in ptx and "mapa.shared::cluster" in ptx
    assert launch.direct.cluster_ctas == 2 and launch.direct.call is not None


def test_back_to_back_and_graph_replay():
    """Many launches in a row (the next grid's clusters start while the last ones finish), then a CUDA graph."""
    cand = _candidate(0, False, False)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    a, b = _inputs(2048, 4096, 1024, torch.bfloat16, 7, False, False)
    launch = cand.bind(Problem.of(a, b, sms))
    ref = a.float() @ b.float()
    outs = [launch.matmul(a, b, a.data_ptr(), b.data_ptr()) for _ in range(50)]
    torch.cuda.synchronize()
    for c in outs[::7]:
        assert ((c.float() - ref).norm() / ref.norm()).item() < TOL[torch.bfloat16]
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        launch.matmul(a, b, a.data_ptr(), b.data_ptr())  # warm the caches on the capture stream
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        c = launch.matmul(a, b, a.data_ptr(), b.data_ptr())
    c.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert ((c.float() - ref).norm() / ref.norm()).item() < TOL[torch.bfloat16]
