"""torch.compile(flex_attention) with ``utlx.inductor`` on Hopper: the utlx template runs and matches eager.

What is checked, on random data against flex_attention run eagerly in float32: the forward of each utlx
template variant (force mode with ``flex.VARIANTS`` narrowed to that one variant, so it is the only choice: the
FA3 consumer loop, the plain one, and the 3-slot K/V ring at D=64) for mask_mods (causal, a document mask over a
captured int32 tensor), score_mods (ALiBi reading a captured buffer, tanh softcap), a ragged N_CTX and GQA,
within twice stock Inductor's own error; that the utlx choice was really added (``utlx.inductor.stats``); and
that the document-mask kernel is no longer several times slower than the same kernel with no mask (the
pathology of issue 31: 6x before the fix). The same checks, plus backward and the benchmark, are
``tools/bench/bench_inductor.py --check --bench`` (measured in docs/benchmarks.md).
"""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.gpu

os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
from gpu_env import torch  # noqa: E402  (skips this module on a machine without a GPU)

if torch.cuda.get_device_capability()[0] != 9:
    pytest.skip("the utlx flex template needs sm_90 (wgmma, TMA, warp specialization)", allow_module_level=True)

import utlx.inductor  # noqa: E402
from torch.nn.attention.flex_attention import create_block_mask, flex_attention  # noqa: E402
from utlx.inductor import flex  # noqa: E402

VARIANTS = [{"OVERLAP": True, "NUM_KV": 2}, {"OVERLAP": False, "NUM_KV": 2}]


@pytest.fixture
def only(monkeypatch):
    """Narrow the utlx choices to one variant (force mode then compiles exactly that kernel)."""

    def narrow(variant: dict) -> None:
        monkeypatch.setattr(flex, "VARIANTS", (variant,))
        monkeypatch.setattr(flex, "DEEP_VARIANTS", {})

    yield narrow
    utlx.inductor.disable()


def _compiled(mode: str):
    torch._dynamo.reset()
    utlx.inductor.enable(mode) if mode != "off" else utlx.inductor.disable()
    return torch.compile(lambda q, k, v, s, b: flex_attention(q, k, v, score_mod=s, block_mask=b,
                                                             enable_gqa=q.shape[1] != k.shape[1]), fullgraph=True)


def _mods(cell: str, n: int, g: torch.Generator):
    if cell == "alibi":
        slopes = torch.rand(8, device="cuda", generator=g)
        return (lambda s, b, h, qi, kv: s + slopes[h] * (kv - qi)), None
    if cell == "softcap":
        return (lambda s, b, h, qi, kv: 20.0 * torch.tanh(s / 20.0)), None
    if cell == "causal":
        return None, create_block_mask(lambda b, h, qi, kv: qi >= kv, None, None, n, n, device="cuda")
    if cell == "document":
        cuts = torch.zeros(n, dtype=torch.int32, device="cuda")
        cuts[torch.randint(1, n, (max(n // 400, 2),), device="cuda", generator=g)] = 1
        doc = torch.cumsum(cuts, 0).to(torch.int32)
        return None, create_block_mask(lambda b, h, qi, kv: doc[qi] == doc[kv], None, None, n, n, device="cuda")
    return None, None


def _check(cell: str, hkv: int, n: int, d: int, variant: dict, only) -> None:
    g = torch.Generator(device="cuda").manual_seed(n + hkv + d)
    q = torch.randn(2, 8, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
    k, v = (torch.randn(2, hkv, n, d, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    score_mod, bm = _mods(cell, n, g)
    ref = flex_attention(q.float(), k.float(), v.float(), score_mod=score_mod, block_mask=bm, enable_gqa=hkv != 8)
    stock = _compiled("off")(q, k, v, score_mod, bm).float()
    only(variant)
    added = utlx.inductor.stats["added"]
    out = _compiled("force")(q, k, v, score_mod, bm).float()
    assert utlx.inductor.stats["added"] == added + 1, utlx.inductor.stats
    err, err_stock = (out - ref).abs().max().item(), (stock - ref).abs().max().item()
    assert err <= max(2 * err_stock, 2e-2), (cell, variant, err, err_stock)


@pytest.mark.parametrize("variant", VARIANTS, ids=["fa3", "plain"])
@pytest.mark.parametrize(("hkv", "n", "cell"), [(8, 2048, "causal"), (8, 1000, "causal"), (2, 2048, "alibi"),
                                                (8, 2048, "document"), (2, 1000, "document"), (8, 2048, "softcap")])
def test_utlx_flex_forward_matches_eager(hkv, n, cell, variant, only):
    _check(cell, hkv, n, 128, variant, only)


@pytest.mark.parametrize("overlap", [True, False], ids=["fa3", "plain"])
def test_deep_ring_d64_matches_eager(overlap, only):
    _check("document", 2, 2048, 64, {"OVERLAP": overlap, "NUM_KV": 3}, only)


@pytest.mark.parametrize("variant", VARIANTS, ids=["fa3", "plain"])
def test_document_mask_not_slower_than_no_mask(variant, only):
    """The document mask skips most KV blocks: the utlx kernel with it must not be slower than with no mask
    (before the fix it was 6x slower at this shape, B=4 H=32 N_CTX=2048 D=128 bf16)."""
    import triton.testing

    n = 2048
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(4, 32, n, 128, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    only(variant)
    f = _compiled("force")
    _, doc_mask = _mods("document", n, g)
    ms = {}
    for name, bm in (("none", None), ("document", doc_mask)):
        f(q, k, v, None, bm)  # compile outside the timing
        ms[name] = triton.testing.do_bench(lambda bm=bm: f(q, k, v, None, bm), warmup=25, rep=100)
    assert ms["document"] <= 1.2 * ms["none"], ms
