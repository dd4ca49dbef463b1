"""torch.compile(flex_attention) with ``utlx.inductor`` on Hopper: the utlx template runs and matches eager.

What is checked, on random data against flex_attention run eagerly in float32: the forward of the utlx
template (force mode, so it is the only choice) for a mask_mod (causal), a score_mod reading a captured buffer
(ALiBi), a ragged N_CTX and GQA, within twice stock Inductor's own error; and that the utlx choice was really
added (``utlx.inductor.stats``). The same checks, plus backward and the benchmark, are
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


def _compiled(mode: str):
    torch._dynamo.reset()
    utlx.inductor.enable(mode) if mode != "off" else utlx.inductor.disable()
    return torch.compile(lambda q, k, v, s, b: flex_attention(q, k, v, score_mod=s, block_mask=b,
                                                             enable_gqa=q.shape[1] != k.shape[1]), fullgraph=True)


@pytest.mark.parametrize(("hkv", "n", "cell"), [(8, 2048, "causal"), (8, 1000, "causal"), (2, 2048, "alibi")])
def test_utlx_flex_forward_matches_eager(hkv, n, cell):
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(2, 8, n, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    k, v = (torch.randn(2, hkv, n, 128, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    slopes = torch.rand(8, device="cuda")
    score_mod = (lambda s, b, h, qi, kv: s + slopes[h] * (kv - qi)) if cell == "alibi" else None
    bm = create_block_mask(lambda b, h, qi, kv: qi >= kv, None, None, n, n, device="cuda") if cell == "causal" else None
    ref = flex_attention(q.float(), k.float(), v.float(), score_mod=score_mod, block_mask=bm, enable_gqa=hkv != 8)
    try:
        stock = _compiled("off")(q, k, v, score_mod, bm).float()
        added = utlx.inductor.stats["added"]
        out = _compiled("force")(q, k, v, score_mod, bm).float()
        assert utlx.inductor.stats["added"] == added + 1, utlx.inductor.stats
    finally:
        utlx.inductor.disable()
    err, err_stock = (out - ref).abs().max().item(), (stock - ref).abs().max().item()
    assert err <= max(2 * err_stock, 2e-2), (err, err_stock)
