"""GPU tests of ``utlx.attention``: every configuration against a float32 reference, and the public path.

All configurations are compiled first by parallel worker processes (into the shared Triton cache), then
each (configuration, dtype) is one test over the shapes of ``attention_cases.SHAPES``, each run twice on
fresh random data (a race shows as an error that moves between runs) into a NaN-poisoned output.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

from gpu_env import torch  # noqa: E402  (skips this module on a machine without a GPU)
from gpu_shared import precompile  # noqa: E402

if torch.cuda.get_device_capability()[0] != 9:  # pragma: no cover
    pytest.skip("utlx.attention needs sm_90 (wgmma, TMA, warp specialization)", allow_module_level=True)

import attention_cases as C  # noqa: E402
import utlx  # noqa: E402
from utlx.attention import CONFIGS  # noqa: E402

CASES = C.cases()


@pytest.fixture(scope="module", autouse=True)
def precompiled():
    yield precompile("attention", CASES, C.warm_chunk)


@pytest.mark.parametrize("case", CASES, ids=[C.case_id(c) for c in CASES])
def test_configuration(case):
    tol = C.TOLERANCE[case[3]]
    bad = []
    for i, shape in enumerate(C.SHAPES):
        for rep in range(2):
            err, written = C.run_case(case, shape, seed=100 * i + rep + 1)
            if not written or not err <= tol:
                bad.append(f"{shape} run {rep}: max abs error {err:.3g} (tolerance {tol}), fully written: {written}")
    assert not bad, f"{C.case_id(case)}:\n" + "\n".join(bad)


@pytest.mark.parametrize(("d", "causal", "dtype"), [(128, False, torch.float16), (128, True, torch.bfloat16),
                                                    (64, True, torch.float16), (64, False, torch.bfloat16)])
def test_public_path_tunes_and_matches(d, causal, dtype, monkeypatch):
    monkeypatch.setenv("UTLX_ATTENTION_CACHE", "0")
    q, k, v = C.inputs(2, 3, 1536, d, str(dtype).replace("torch.", ""), seed=7)
    o = utlx.attention(q, k, v, causal=causal)
    ref = C.reference(q, k, v, causal, d ** -0.5)
    assert o.shape == q.shape and o.dtype == q.dtype
    assert (o.float() - ref).abs().max().item() <= C.TOLERANCE[str(dtype).replace("torch.", "")]
    from utlx.attention import chosen

    assert chosen(q, causal) is not None
    o2 = utlx.attention(q, k, v, causal=causal)  # the planned (fast) path gives the same result
    assert torch.equal(o, o2)


def test_non_contiguous_inputs_and_scale(monkeypatch):
    monkeypatch.setenv("UTLX_ATTENTION_CACHE", "0")
    # (B, N, H, D) storage seen as (B, H, N, D): a common layout; it is copied to contiguous first
    q, k, v = (t.transpose(1, 2) for t in C.inputs(2, 700, 3, 128, "float16", seed=11))
    assert not q.is_contiguous()
    o = utlx.attention(q, k, v, causal=True, sm_scale=0.05)
    ref = C.reference(q, k, v, True, 0.05)
    assert o.is_contiguous() and (o.float() - ref).abs().max().item() <= C.TOLERANCE["float16"]


def test_forced_configuration(monkeypatch):
    from utlx.attention import chosen

    cfg = CONFIGS[(64, False)][-1]
    monkeypatch.setenv("UTLX_ATTENTION_CONFIG", cfg.id)
    monkeypatch.setenv("UTLX_ATTENTION_CACHE", "0")
    q, k, v = C.inputs(1, 5, 512, 64, "float16", seed=3)
    o = utlx.attention(q, k, v)
    assert chosen(q) == cfg.id
    assert (o.float() - C.reference(q, k, v, False, 64 ** -0.5)).abs().max().item() <= C.TOLERANCE["float16"]


STREAM_K = [(d, cfg) for (d, causal), cfgs in CONFIGS.items() for cfg in cfgs if cfg.stream_k and not causal]


@pytest.mark.parametrize(("d", "cfg"), STREAM_K, ids=[f"d{d}-{cfg.id}" for d, cfg in STREAM_K])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_stream_k_pieces_on_the_gpu(d, cfg, dtype):
    """``SHAPES`` have fewer tiles than SMs (no partial round, so no pieces): here B*H = 72 heads of 1024 rows
    (576 tiles, 576 mod num_SMs of them cut into pieces), parked from registers and merged by ``attn_combine``,
    twice on fresh data into a NaN-poisoned output."""
    from utlx.attention import stream_k_schedule

    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    plan = stream_k_schedule(72, 8, 8, num_sms)
    assert plan.slots > 0 and plan.splits, "this shape must cut tiles into pieces on this GPU"
    for rep in range(2):
        err, written = C.run_case((d, False, cfg, dtype), (2, 36, 1024), seed=500 + rep)
        assert written and err <= C.TOLERANCE[dtype], (cfg.id, dtype, rep, err)
