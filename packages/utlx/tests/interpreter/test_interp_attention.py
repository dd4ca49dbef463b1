"""``utlx.attention`` under ``TRITON_INTERPRET=1`` against a float32 reference (small shapes, seconds).

The kernel runs with all its tasks (TMA producer, two consumer replicas with their named-barrier token
ring) on the CPU, with the hazard checker on. Shapes cover: several tiles per program (tile chaining and
the ring wrapping around), N_CTX not a multiple of the KV block (masked last block, masked stores), a
64-row multiple that is not a 128-row one (a consumer's rows wholly past N_CTX), a single block, and
causal tiles of every cost.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import utlx  # noqa: E402
from utlx.attention import CONFIGS, run_config  # noqa: E402

TOL = {torch.float16: 3e-3, torch.bfloat16: 3e-2}


def _reference(q, k, v, causal, scale):
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v.float()


def _inputs(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g).to(dtype) for _ in range(3)]


@pytest.mark.parametrize(("b", "h", "n", "d", "causal", "dtype"), [
    (2, 3, 256, 64, False, torch.float16),    # 6 tiles over 3 programs: chained tiles
    (1, 2, 200, 64, True, torch.bfloat16),    # ragged: masked last block and masked stores
    (2, 3, 64, 128, False, torch.float16),    # N_CTX % 128 == 64: consumer 1 past the end
    (1, 1, 96, 128, False, torch.float16),    # one block, ragged
    (1, 2, 384, 128, True, torch.float16),    # causal tiles of cost 1..3 (host schedule)
    (1, 1, 320, 128, True, torch.bfloat16),
])
def test_matches_float32_reference(b, h, n, d, causal, dtype):
    q, k, v = _inputs((b, h, n, d), dtype, seed=b * 1000 + n + d)
    o = utlx.attention(q, k, v, causal=causal)
    ref = _reference(q, k, v, causal, 1 / math.sqrt(d))
    assert o.shape == q.shape and o.dtype == dtype
    err = (o.float() - ref).abs().max().item()
    assert err <= TOL[dtype], err


@pytest.mark.parametrize(("d", "causal", "cfg"), [(d, c, cfg) for (d, c), cfgs in CONFIGS.items() for cfg in cfgs[1:]],
                         ids=lambda x: getattr(x, "id", str(x)))
def test_other_configurations(d, causal, cfg):
    q, k, v = _inputs((1, 2, 320, d), torch.float16, seed=7)
    out = torch.full_like(q, float("nan"))
    run_config(q, k, v, cfg, causal, sm_scale=0.07, out=out)
    assert (out.float() - _reference(q, k, v, causal, 0.07)).abs().max().item() <= TOL[torch.float16]


def test_non_contiguous_and_scale():
    q, k, v = (t.transpose(1, 2) for t in _inputs((1, 130, 2, 64), torch.float16, seed=3))  # (B, N, H, D) storage
    assert not q.is_contiguous()
    o = utlx.attention(q, k, v, causal=True, sm_scale=0.2)
    assert o.is_contiguous()
    assert (o.float() - _reference(q, k, v, True, 0.2)).abs().max().item() <= TOL[torch.float16]
