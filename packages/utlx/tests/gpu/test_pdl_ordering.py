"""Programmatic dependent launch on the GPU: no kernel of utlx.matmul / utlx.attention runs ahead of the
kernel before it (``utlx.kernels.grid_dependency``).

With PDL a launch's CTAs start while the previous kernel of the stream is still running; only
``griddepcontrol.wait`` at the top of the kernel keeps them from reading an input that kernel is still
writing, or writing a buffer it still reads. Each test enqueues a chain of dependent calls with no host
sync in between, then checks every link against a float32 reference computed afterwards from the
link's actual input: a link that read a half-written input disagrees with its own reference.

* matmul -> matmul: each product is the next call's A (the previous kernel writes what the next reads);
* torch copy -> matmul: a plain torch kernel (launched without PDL) rewrites A before every call;
* split-K and stream-K chains: consecutive launches share the stream's self-cleaning workspace;
* attention -> attention: each output is the next call's Q (stream-K pieces and their combine included).
"""

from __future__ import annotations

import importlib

import pytest

pytestmark = pytest.mark.gpu

import utlx  # noqa: E402
from gpu_env import torch  # noqa: E402  (skips this module on a machine without a GPU)
from utlx.gemm_launch import Problem  # noqa: E402

m = importlib.import_module("utlx.matmul")
HOPPER = not getattr(torch.version, "hip", None) and torch.cuda.get_device_capability()[0] == 9
needs_hopper = pytest.mark.skipif(not HOPPER, reason="PDL and the TMA kernels need Hopper")
LINKS = 12


def utlx_attention_configs():
    """The first non-causal D=128 configuration, and the first stream-K one."""
    from utlx.attention import CONFIGS

    cfgs = CONFIGS[(128, False)]
    return [cfgs[0], next(c for c in cfgs if c.stream_k)]


@pytest.fixture(autouse=True)
def pdl_on_quick_private_tuning(monkeypatch, tmp_path):
    monkeypatch.setenv("UTLX_PDL", "1")
    monkeypatch.setenv("UTLX_MATMUL_TUNE_BUDGET_S", "0")
    monkeypatch.setenv("UTLX_MATMUL_CACHE", str(tmp_path / "tuning.json"))
    monkeypatch.setenv("UTLX_ATTENTION_CACHE", "0")
    m._PLANS.clear()  # plans made earlier in this process (PDL off) would be reused: make them again, PDL on
    yield
    m._PLANS.clear()  # and do not leave PDL plans to later tests


def _assert_plan_uses_pdl(x, w):
    plan = m._PLANS[m.plan_key(x, w)]
    assert plan.kwargs.get("launch_pdl") is True and plan.constexprs.get("PDL") is True, plan


def close(got, ref, dtype, what):
    err = (got.float() - ref).abs().max().item()
    scale = ref.abs().max().item() + 1e-6
    tol = (2e-2 if dtype == torch.bfloat16 else 1e-2) * scale + 1e-2
    assert err <= tol, f"{what}: max abs error {err:.4g} > {tol:.4g} (reference max {scale:.4g})"


def _chain(launch_matmul, x, w, links=LINKS):
    """x_{i+1} = x_i @ w for ``links`` links, enqueued back to back (no sync); returns every x_i."""
    xs = [x]
    for _ in range(links):
        xs.append(launch_matmul(xs[-1], w))
    return xs


def _check_chain(xs, w, what):
    torch.cuda.synchronize()
    for i in range(len(xs) - 1):
        close(xs[i + 1], xs[i].float() @ w.float(), w.dtype, f"{what}, link {i + 1}")


def _weights(n, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(n, n, device="cuda", generator=g) / n ** 0.5).to(dtype)  # keeps |x| ~ constant


def _bound(family, M, N, K, dtype, **match):
    """A GemmLaunch of the first ``family`` candidate (matching ``match`` in its config) that the problem keeps."""
    a = torch.empty(M, K, device="cuda", dtype=dtype)
    b = torch.empty(K, N, device="cuda", dtype=dtype)
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    cands = m.for_problem(m.candidates("hopper", True, shape=(M, N, K)), M, N, num_sms, K)
    cand = next(c for c in cands if c.family == family and all(c.config.get(k) == v for k, v in match.items()))
    launch = cand.bind(Problem.of(a, b, num_sms))
    assert launch.constexprs.get("PDL") is True and launch.kwargs.get("launch_pdl") is True
    return launch


@needs_hopper
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("n", [2048, 1000])
def test_matmul_chain_each_call_reads_the_previous_product(dtype, n):
    g = torch.Generator(device="cuda").manual_seed(n)
    x = torch.randn(n, n, device="cuda", generator=g).to(dtype)
    w = _weights(n, dtype, seed=n + 1)
    utlx.matmul(x, w)  # tune and plan outside the chain
    _assert_plan_uses_pdl(x, w)
    _check_chain(_chain(utlx.matmul, x, w), w, f"utlx.matmul chain {n}^3")


@needs_hopper
@pytest.mark.parametrize("family", ["tma_persistent", "ws_persistent", "ws_pingpong", "tma_streamk"])
def test_each_family_chain(family):
    n = 2048 if family != "tma_streamk" else 2304  # stream-K needs a partial last round: 18 x 9 = 162 tiles
    launch = _bound(family, n, n, n, torch.float16)
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.randn(n, n, device="cuda", generator=g).to(torch.float16)
    w = _weights(n, torch.float16, seed=8)
    _check_chain(_chain(lambda a, b: launch.matmul(a, b, a.data_ptr(), b.data_ptr()), x, w), w, family)


@needs_hopper
def test_split_k_chain_shares_the_workspace():
    """Skinny links x [64, 4096] @ w [4096, 4096]: every launch reuses the stream's workspace, which the
    previous launch is still cleaning when the next one's CTAs start."""
    launch = _bound("tma_splitk", 64, 4096, 4096, torch.float16, SPLIT_K=2)
    g = torch.Generator(device="cuda").manual_seed(9)
    x = torch.randn(64, 4096, device="cuda", generator=g).to(torch.float16)
    w = _weights(4096, torch.float16, seed=10)
    _check_chain(_chain(lambda a, b: launch.matmul(a, b, a.data_ptr(), b.data_ptr()), x, w), w, "split-K")


@needs_hopper
def test_torch_kernel_writes_a_then_matmul_reads_it():
    n = 2048
    g = torch.Generator(device="cuda").manual_seed(11)
    srcs = [torch.randn(n, n, device="cuda", generator=g).to(torch.float16) for _ in range(6)]
    b = _weights(n, torch.float16, seed=12)
    a = torch.empty_like(srcs[0])
    utlx.matmul(srcs[0], b)  # plan outside the loop
    _assert_plan_uses_pdl(srcs[0], b)
    outs = []
    for src in srcs:
        a.copy_(src)  # a torch kernel without PDL rewrites A right before the PDL launch reads it
        outs.append(utlx.matmul(a, b))
    torch.cuda.synchronize()
    for i, (src, out) in enumerate(zip(srcs, outs, strict=True)):
        close(out, src.float() @ b.float(), torch.float16, f"copy -> matmul, call {i}")


ATTENTION = [(cfg, z, h) for cfg in utlx_attention_configs() for (z, h) in ((2, 36), (4, 32))]


@needs_hopper
@pytest.mark.parametrize(("cfg", "z", "h"), ATTENTION, ids=[f"{c.id}-{z * h}heads" for c, z, h in ATTENTION])
def test_attention_chain_each_call_reads_the_previous_output(cfg, z, h, monkeypatch):
    """o_{i+1} = attention(o_i, k, v) at N_CTX 1024; with stream-K, B*H = 72 cuts tiles into pieces (an
    ``attn_combine`` kernel between links, launched without PDL), B*H = 128 does not."""
    att = importlib.import_module("utlx.attention")
    made = []

    class Recording(att.launch.FastLaunch):  # the real launcher, remembered so the test can see how it launches
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(att.launch, "FastLaunch", Recording)
    n_ctx = 1024
    g = torch.Generator(device="cuda").manual_seed(z * h)
    q, k, v = (torch.randn(z, h, n_ctx, 128, device="cuda", generator=g).to(torch.float16) for _ in range(3))
    run = att.make_runner(q, cfg)
    main = next(f for f in made if f.jit_fn is att.fa.attn_fwd_ws)
    assert main.kwargs.get("launch_pdl") is True and main.constexprs.get("PDL") is True
    scale = 128 ** -0.5
    qs = [q]
    for _ in range(6):
        o = torch.empty_like(q)
        run(qs[-1], k, v, o, scale)
        qs.append(o)
    torch.cuda.synchronize()
    for i in range(len(qs) - 1):
        s = (qs[i].float() @ k.float().transpose(-1, -2)) * scale
        ref = torch.softmax(s, dim=-1) @ v.float()
        close(qs[i + 1], ref, torch.float16, f"attention chain {cfg.id}, link {i + 1}")


@needs_hopper
@pytest.mark.parametrize(("M", "K"), [(2048, 2048), (64, 4096)], ids=["square", "skinny"])
def test_chain_captured_in_a_cuda_graph(M, K):
    """PDL launches captured in a CUDA graph (programmatic edges) keep their order on replay: a chain of four
    dependent calls, replayed twice on fresh inputs; the skinny shape runs whatever utlx.matmul tuned for it
    (split-K takes a fresh workspace per captured call)."""
    g = torch.Generator(device="cuda").manual_seed(M)
    x = torch.randn(M, K, device="cuda", generator=g).to(torch.float16)
    w = _weights(K, torch.float16, seed=M + 1)
    utlx.matmul(x, w)  # tuned and planned before capture
    _assert_plan_uses_pdl(x, w)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        _chain(utlx.matmul, x, w, links=4)  # warm-up on the side stream
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        xs = _chain(utlx.matmul, x, w, links=4)
    for seed in (1, 2):
        x.copy_(torch.randn(M, K, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed)))
        graph.replay()
        _check_chain(xs, w, f"graph replay {seed}")
