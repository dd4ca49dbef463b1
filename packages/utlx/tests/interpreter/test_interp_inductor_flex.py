"""The utlx FlexAttention template (``utlx.inductor``) under ``TRITON_INTERPRET=1`` against a float32 flex forward.

The template is rendered as Inductor renders it (``flex_render``: the mods inlined as Inductor inlines them,
captured buffers as extra ``in_ptrN`` arguments) and run with all its tasks (TMA producer, two consumer replicas)
on CPU tensors, hazard checker on, for both consumer loops (``OVERLAP``: the FA3 one, and the plain one) and the
deeper K/V ring. Checked against torch in float32 on fresh random data: O, and the base-2 logsumexp the stock
backward reads. Cases cover no mask, causal, the document mask (captured int32 ids), ALiBi (a captured slope
tensor), tanh softcap; BlockMasks with full, partial and skipped blocks, and with no full list at all; ragged
Q_LEN / KV_LEN (masked columns and rows); GQA; fully masked rows and a tile with no KV block.
"""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

import flex_render  # noqa: E402
import utlx  # noqa: E402, F401  (the TLX interpreter ops)
from flex_render import Problem  # noqa: E402

TOL = {torch.float16: 4e-3, torch.bfloat16: 3e-2}
VARIANTS = [{"OVERLAP": False}, {"OVERLAP": True}]
_names = itertools.count()


def _captured(p: Problem, g: torch.Generator) -> dict[str, torch.Tensor]:
    out = {}
    if "slopes" in p.captured:
        out["slopes"] = torch.rand(p.hq, generator=g) * 0.25
    if "doc" in p.captured:  # documents [0, 200), [200, 256), [256, 300), [300, 420), [420, ...): full blocks,
        n = max(p.q_len, p.kv_len)  # partial ones (a boundary inside the block) and skipped ones
        starts = torch.zeros(n, dtype=torch.int32)
        starts[[c for c in (200, 256, 300, 420) if c < n]] = 1
        out["doc"] = torch.cumsum(starts, 0).to(torch.int32)
    return out


def _run(p: Problem, dtype: torch.dtype, tmp_path, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(p.b, p.hq, p.q_len, p.d, generator=g).to(dtype)
    k = torch.randn(p.b, p.hkv, p.kv_len, p.d, generator=g).to(dtype)
    v = torch.randn(p.b, p.hkv, p.kv_len, p.d, generator=g).to(dtype)
    captured = _captured(p, g)
    lists = flex_render.block_lists(p, flex_render.dense_mask(p, captured))
    out = torch.full_like(q, float("nan"))
    lse = torch.full((p.b, p.hq, p.q_len), float("nan"))
    module = flex_render.load(flex_render.render(p), tmp_path, f"utlx_flex_interp_{next(_names)}")
    grid = (-(-p.q_len // flex_render.BLOCK), p.b, p.hq)
    module.utlx_flex_kernel[grid](q, k, v, lse, torch.empty(0), *(lists[n] for n in flex_render.NAMED[5:]),
                                  *(captured[c] for c in p.captured), out)
    ref, ref_lse = flex_render.reference(p, q, k, v, captured)
    err = (out.float() - ref).abs().max().item()
    assert err <= TOL[dtype], (p, err)
    finite = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), finite), p  # fully masked rows: -inf, as the stock template writes
    assert (lse[finite] - ref_lse[finite]).abs().max().item() <= 1e-3, p


CASES = [
    # (problem, dtype)
    (Problem(q_len=256, kv_len=256, d=64), torch.float16),  # no mask: every block full
    (Problem(hq=4, hkv=2, q_len=384, kv_len=384, mask_mod="causal"), torch.float16),  # GQA, full/partial/skipped
    (Problem(q_len=512, kv_len=512, mask_mod="document"), torch.bfloat16),  # captured int32 ids
    (Problem(q_len=300, kv_len=300, mask_mod="document", full=False), torch.float16),  # no full list; ragged
    (Problem(q_len=200, kv_len=200, d=64, score_mod="alibi", mask_mod="causal"), torch.float16),  # ragged, slopes
    (Problem(hq=2, hkv=1, q_len=128, kv_len=300, score_mod="softcap"), torch.float16),  # ragged KV, GQA 2:1
    (Problem(q_len=256, kv_len=256, mask_mod="prefix"), torch.float16),  # masked rows; a tile with no KV block
]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "fa3" if v["OVERLAP"] else "plain")
@pytest.mark.parametrize(("problem", "dtype"), CASES,
                         ids=[f"{p.score_mod}-{p.mask_mod}-{p.q_len}x{p.kv_len}-d{p.d}" for p, _ in CASES])
def test_matches_float32_flex(problem, dtype, variant, tmp_path):
    p = Problem(**{**problem.__dict__, "options": variant})
    _run(p, dtype, tmp_path, seed=p.q_len + p.kv_len + p.d)


@pytest.mark.parametrize("overlap", [False, True])
def test_deep_ring_d64(overlap, tmp_path):
    """NUM_KV 3 (a D=64 choice): the ring wraps at a different block than the phase flips."""
    p = Problem(hq=2, hkv=1, q_len=640, kv_len=640, d=64, mask_mod="document",
                options={"OVERLAP": overlap, "NUM_KV": 3})
    _run(p, torch.float16, tmp_path, seed=11)
