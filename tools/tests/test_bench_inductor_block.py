"""tools/bench/bench_inductor.py --block on the CPU: the transformer-block client's tiny path, end to end.

What runs (a fresh process, a private Inductor cache): the tiny float32 block with a causal BlockMask under
``torch.compile(mode="max-autotune")``, stock and with ``utlx.inductor.enable("allow")``, both against the
float32 eager block, then timed. On a CPU utlx has no kernel: the two compiled outputs must be bit-equal and
``utlx.inductor.stats`` must name the CPU as the reason no utlx choice was added. The H200 run is
``bench_inductor.py --block`` (tools/device/issue31_gpu.sh).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor.kernel.flex.flex_attention")

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tools" / "bench" / "bench_inductor.py"
CPU_REASON = "cpu device: Inductor's C++ flex lowering runs (utlx has no CPU kernel)"


def test_tiny_block_on_cpu_matches_eager_and_utlx_is_a_no_op_that_says_why(tmp_path):
    out_json = tmp_path / "block.json"
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "UTLX_INDUCTOR": "off"}
    cmd = [sys.executable, str(BENCH), "--block", "--block-shape", "tiny", "--device", "cpu", "--masks", "causal",
           "--iters", "2", "--json", str(out_json)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert "block PASSED" in proc.stdout
    assert "fwd+bwd not run: FlexAttention has no backward on cpu" in proc.stdout
    report = json.loads(out_json.read_text())
    assert report["ok"] and report["device"] == "cpu" and report["mode"] == "allow"
    (row,) = report["rows"]
    assert row["mask"] == "causal" and row["dtype"] == "float32"
    assert row["err_fwd_off"] < 1e-4 and row["err_fwd_allow"] < 1e-4  # float32 compiled vs float32 eager
    # (not asserted: bit-equal outputs; max-autotune picks GEMM kernels by timing on this busy CPU, so two stock
    # compiles may differ too. tests/compile/test_inductor_identity.py checks code and outputs in default mode.)
    assert row["stats_off"] == {}  # off: no seam installed, nothing counted
    assert "added" not in row["stats_allow"]  # no flex lowering got a utlx choice
    assert row["stats_allow"]["skipped"].get(CPU_REASON, 0) >= 1, row["stats_allow"]
    assert row["utlx_kernels_off"] == row["utlx_kernels_allow"] == 0 and row["graphs_allow"] >= 1
    assert row["ms_fwd_off"] > 0 and row["ms_fwd_allow"] > 0
    assert "ms_fwdbwd_off" not in row


@pytest.fixture
def block_mod(inductor_block_mod):
    return inductor_block_mod


def test_masks_are_what_their_names_say(block_mod):
    shape = block_mod.TINY
    dense = {k: block_mod.make_mask(k, shape, "cpu").to_dense()[0, 0] for k in block_mod.MASKS}
    n_blocks = shape.seq // 128
    assert dense["causal"].shape == (n_blocks, n_blocks)
    assert torch.equal(dense["causal"], torch.tril(torch.ones(n_blocks, n_blocks, dtype=dense["causal"].dtype)))
    assert dense["document"].sum() <= dense["causal"].sum()  # causal within documents
    with pytest.raises(ValueError, match="inductor_block: mask must be one of causal, sliding, document, got 'alibi'"):
        block_mod.make_mask("alibi", shape, "cpu")


def test_block_matches_a_hand_written_forward(block_mod):
    """The eager block is the documented model: pre-norm attention + SwiGLU MLP with residuals."""
    shape = block_mod.TINY
    block, x, _ = block_mod.build(shape, "cpu")
    bm = block_mod.make_mask("causal", shape, "cpu")
    with torch.no_grad():
        got = block(x, bm)

        def rms(t, w):
            return t * torch.rsqrt(t.square().mean(-1, keepdim=True) + 1e-6) * w

        b, n, c, d = shape.batch, shape.seq, shape.dim, shape.head_dim
        qkv = rms(x, block.norm1.weight) @ block.qkv.weight.T
        q = qkv[..., :c].view(b, n, shape.heads, d).transpose(1, 2)
        k, v = (qkv[..., c + i * shape.kv_heads * d:c + (i + 1) * shape.kv_heads * d]
                .view(b, n, shape.kv_heads, d).transpose(1, 2) for i in range(2))
        k, v = (t.repeat_interleave(shape.heads // shape.kv_heads, dim=1) for t in (k, v))
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=causal)
        h = x + a.transpose(1, 2).reshape(b, n, c) @ block.proj.weight.T
        m = rms(h, block.norm2.weight)
        want = h + (torch.nn.functional.silu(m @ block.w1.weight.T) * (m @ block.w3.weight.T)) @ block.w2.weight.T
    assert block_mod.rel_err(got, want) < 1e-5


def test_bad_shape_is_one_clear_error(block_mod):
    import dataclasses

    with pytest.raises(ValueError, match="BlockShape: dim 64 / heads 3 / kv_heads 1 must divide evenly"):
        dataclasses.replace(block_mod.TINY, heads=3)


def _sdpa_attention(q, k, v, block_mask=None, enable_gqa=False):
    """A stand-in for flex_attention with a CPU backward (causal, as the masks tested with it)."""
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=enable_gqa)


def test_forward_backward_path_checks_every_gradient_and_times_it(block_mod, monkeypatch):
    """The GPU-only half of run_mask (gradients of the input and every weight vs float32, fwd+bwd timing, the
    report lines), run here eagerly: torch.compile is the identity and the attention has a CPU backward."""
    monkeypatch.setattr(block_mod, "flex_attention", _sdpa_attention)
    monkeypatch.setattr(block_mod.torch, "compile", lambda model, mode=None: model)
    row = block_mod.run_mask(block_mod.TINY, "causal", "cpu", "allow", iters=1, backward=True)
    n_params = len(list(block_mod.Block(block_mod.TINY).parameters()))
    assert len(row["err_grads_off"]) == len(row["err_grads_allow"]) == n_params + 1  # dx and every weight
    assert max(row["err_grads_allow"]) < 1e-5 and row["ok"]
    assert row["ms_fwdbwd_off"] > 0 and row["ms_fwdbwd_allow"] > 0
    lines = block_mod.describe(row, "allow")
    assert "fwd+bwd worst grad err stock" in lines[1] and lines[0].endswith("ok")


def test_a_wrong_gradient_fails_the_check(block_mod, monkeypatch):
    """The check can fail: a compiled block whose backward is wrong (here: the attention's gradient doubled)."""

    class Doubled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t.clone()

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    monkeypatch.setattr(block_mod, "flex_attention", _sdpa_attention)
    state = {"compiled": 0}

    def compile_wrong(model, mode=None):
        state["compiled"] += 1
        if state["compiled"] == 1:  # stock: right
            return model
        return lambda x, bm: Doubled.apply(model(x, bm))

    monkeypatch.setattr(block_mod.torch, "compile", compile_wrong)
    row = block_mod.run_mask(block_mod.TINY, "causal", "cpu", "allow", iters=1, backward=True)
    assert not row["ok"] and max(row["err_grads_allow"]) > 0.5


def test_budget_starts_no_mask_after_it_is_spent(block_mod, monkeypatch):
    monkeypatch.setattr(block_mod, "run_mask", lambda *a, **k: {"mask": a[1], "ok": True})
    monkeypatch.setattr(block_mod, "describe", lambda row, mode: [f"ran {row['mask']}"])
    lines, written = [], []
    rows = block_mod.run(block_mod.TINY, "cpu", ("causal", "document"), budget_s=-1.0, emit=lines.append,
                         on_row=lambda r: written.append(len(r)))
    assert [r["mask"] for r in rows] == ["causal"] and written == [1]
    assert lines == ["ran causal", "block document: not run (budget of -1 s spent)"]
