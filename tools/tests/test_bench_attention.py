"""tools/bench/attention.py without a GPU: arguments, FLOP counts, the float32 reference, the per-shape
prepare/check/time loop with fake implementations and a fake timer, the budget, the table and the JSON."""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")


def test_flops_are_two_gemms_per_head_and_half_for_causal(attention_bench_mod):
    m = attention_bench_mod
    assert m.attention_flops(4, 32, 1024, 128, False) == 4 * 4 * 32 * 1024 * 1024 * 128
    assert m.attention_flops(4, 32, 8192, 64, True) == 2 * 4 * 32 * 8192 * 8192 * 64
    assert m.Shape("fp16", 2048, 128, False).flops == m.attention_flops(4, 32, 2048, 128, False)
    assert m.sm_scale_for(128) == pytest.approx(1.3 / math.sqrt(128))


def test_arguments(attention_bench_mod):
    m = attention_bench_mod
    args = m.parse_args([])
    shapes = m.shapes_from_args(args)
    assert [(s.n_ctx, s.causal) for s in shapes] == [(n, c) for c in (False, True) for n in (1024, 2048, 4096, 8192)]
    assert {(s.dtype, s.head_dim, s.batch, s.heads) for s in shapes} == {("fp16", 128, 4, 32)}
    assert args.groups == ["sdpa", "meta-tutorial", "utlx-attention"] and args.tlx == "utlx"
    assert args.tutorials[0] == "hopper_fa_ws_pipelined_pingpong_persistent"
    args = m.parse_args(["--n-ctx", "2048", "--dtype", "fp16", "bf16", "--head-dim", "64", "--causal", "no",
                         "--impl", "sdpa", "utlx-attention"])
    assert [(s.dtype, s.head_dim, s.causal) for s in m.shapes_from_args(args)] == [("fp16", 64, False),
                                                                                  ("bf16", 64, False)]
    assert args.groups == ["sdpa", "utlx-attention"]
    assert m.parse_args(["--impl", "meta-tutorial", "--tlx", "meta"]).groups == ["meta-tutorial"]
    for bad in (["--tlx", "meta"], ["--impl", "meta-tutorial", "--tlx", "meta", "--compare-meta"],
                ["--head-dim", "96"], ["--dtype", "fp8"]):
        with pytest.raises(SystemExit):
            m.parse_args(bad)


def test_drop_option_removes_the_option_and_its_values(attention_bench_mod):
    argv = ["--n-ctx", "1024", "2048", "--impl", "sdpa", "meta-tutorial", "--out=x", "--tlx", "utlx", "--rounds", "2"]
    got = attention_bench_mod._drop_option(attention_bench_mod._drop_option(argv, "--impl"), "--out")
    assert got == ["--n-ctx", "1024", "2048", "--tlx", "utlx", "--rounds", "2"]


def test_reference_is_chunked_and_causal(attention_bench_mod):
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 3, 16, 8, generator=gen) for _ in range(3))
    full = torch.softmax(q @ k.transpose(-1, -2) * 0.7, dim=-1) @ v
    got = attention_bench_mod.reference(q, k, v, False, 0.7, max_bytes=16 * 16 * 4)  # one head at a time
    assert torch.allclose(got, full, atol=1e-6)
    causal = attention_bench_mod.reference(q, k, v, True, 0.7)
    assert torch.allclose(causal[:, :, 0], v[:, :, 0], atol=1e-6)  # row 0 sees only key 0
    assert not torch.allclose(causal, full, atol=1e-3)


def _impls(m):
    def right(q, k, v, causal, sm_scale):
        return m.reference(q, k, v, causal, sm_scale).to(q.dtype)

    def wrong(q, k, v, causal, sm_scale):
        return torch.zeros_like(q)

    def raises(q, k, v, causal, sm_scale):
        raise ValueError("nope\nsecond line")

    return [m.Impl("right", right, chose=lambda q, causal: f"cfg-{q.shape[-1]}-{'c' if causal else 'n'}"),
            m.Impl("wrong", wrong), m.Impl("raises", raises),
            m.Impl("nocausal@utlx", right, lambda s: "no causal mode" if s.causal else None),
            m.Impl("nocausal@meta", right, lambda s: "no causal mode" if s.causal else None)]


def _fake_timer(ms_by_call):
    calls = []

    def timer(fn, rep_ms):
        fn()
        calls.append(rep_ms)
        return ms_by_call[len(calls) % len(ms_by_call)]

    return timer, calls


def test_each_shape_is_checked_then_timed(attention_bench_mod):
    m = attention_bench_mod
    shape = m.Shape("fp16", 32, 64, False, batch=1, heads=2)
    timer, calls = _fake_timer([2.0, 4.0])
    row = m.bench_shape(shape, _impls(m), timer=timer, device="cpu", rounds=2, rep_ms=7.0)
    cells = row["impls"]
    assert cells["right"]["round_ms"] in ([2.0, 4.0], [4.0, 2.0])
    assert cells["right"]["ms"] == 3.0 and cells["right"]["tflops"] == pytest.approx(shape.flops / 3e-3 / 1e12)
    assert cells["right"]["max_abs_error"] < 1e-2
    assert cells["right"]["config"] == "cfg-64-n" and "config" not in cells["wrong"]  # what it chose, recorded
    assert "wrong result" in cells["wrong"]["error"] and "tflops" not in cells["wrong"]
    assert cells["raises"]["error"] == "ValueError: nope" and "tflops" not in cells["raises"]
    assert len(calls) == 2 * 3 and set(calls) == {7.0}  # 3 right implementations, 2 rounds; wrong ones untimed
    causal = m.bench_shape(m.Shape("fp16", 32, 64, True, 1, 2), _impls(m), timer=timer, device="cpu", rounds=1,
                           rep_ms=1.0)
    assert causal["impls"]["nocausal@utlx"] == {"note": "no causal mode"} and "tflops" in causal["impls"]["right"]


def test_budget_skips_the_shapes_that_would_not_fit(attention_bench_mod):
    m = attention_bench_mod
    shapes = [m.Shape("fp16", n, 64, False, 1, 1) for n in (16, 32)]
    timer, _ = _fake_timer([1.0])
    rows = m.run(shapes, _impls(m)[:1], timer=timer, device="cpu", rounds=1, rep_ms=1.0, budget_s=0.0)
    assert "tflops" in rows[0]["impls"]["right"] and rows[1]["skipped"].startswith("budget")


def test_table_json_and_join(attention_bench_mod, tmp_path, capsys):
    m = attention_bench_mod
    shapes = [m.Shape("fp16", n, 64, c, 1, 2) for c in (False, True) for n in (16, 32)]
    timer, _ = _fake_timer([1.0])
    rows = m.run(shapes, _impls(m), timer=timer, device="cpu", rounds=1, rep_ms=1.0, budget_s=1e9)
    utlx = {"rows": rows, "notes": {"utlx.attention": "utlx.attention does not exist yet (issue 10)"}}
    m.write_json(utlx, tmp_path / "attention.json")
    assert json.loads((tmp_path / "attention.json").read_text())["rows"][0]["impls"]["right"]["ms"] == 1.0
    meta_rows = [{**r, "impls": {"nocausal@meta": {"tflops": 2 * r["impls"]["right"]["tflops"]}}} for r in rows]
    m.write_json({"rows": meta_rows}, tmp_path / "attention-meta.json")

    text = m.format_table(m.merge([utlx, {"rows": meta_rows}]), utlx["notes"])
    block = text.split("\n\n")[0].splitlines()
    assert block[0] == "flash attention forward, fp16, B=1 H=2 D=64, non-causal: TFLOPS"
    assert block[1].split() == ["implementation", "16", "32"]
    tflops = [r["impls"]["right"]["tflops"] for r in rows[:2]]
    assert block[2].split() == ["right", f"{tflops[0]:.1f}", f"{tflops[1]:.1f}"]
    assert block[3].split() == ["wrong", "-", "-"] and block[4].split() == ["raises", "-", "-"]
    assert any(line.strip().startswith("- wrong: wrong result") for line in block)
    assert "  - raises: ValueError: nope" in block
    assert any(line.split()[:4] == ["ratio", "nocausal@utlx", "/", "nocausal@meta"] and line.split()[4:] ==
               ["0.500", "0.500"] for line in block)
    assert "causal (half the FLOPs counted)" in text and "  - nocausal@utlx: no causal mode" in text
    assert text.splitlines()[-1] == "note: utlx.attention: utlx.attention does not exist yet (issue 10)"

    capsys.readouterr()  # the progress lines of run()
    assert m.main(["--join", str(tmp_path / "attention.json"), str(tmp_path / "attention-meta.json")]) == 0
    assert capsys.readouterr().out.strip() == text


def test_utlx_attention_row_or_the_note_why_not(attention_bench_mod):
    got = attention_bench_mod.utlx_attention_impl()
    assert (isinstance(got, str) and "utlx.attention does not exist" in got) or got.name == "utlx.attention"


def test_without_a_gpu_it_says_so(attention_bench_mod, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert attention_bench_mod.main(["--impl", "sdpa"]) == 2
    assert "no GPU" in capsys.readouterr().err


def test_alternation_summary_anchors_each_turn_on_its_own_sdpa(attention_bench_mod):
    m = attention_bench_mod
    name = "hopper_fa_ws_pipelined_pingpong_persistent"

    def turn(tut, sdpa, tlx):
        return {"rows": [{"dtype": "fp16", "head_dim": 128, "causal": False, "n_ctx": 2048,
                          "impls": {f"{name}@{tlx}": {"tflops": tut}, "sdpa": {"tflops": sdpa}}}]}

    # the GPU ran 10% slower during the Meta turns: raw ratios say 1.1, anchored ones say 1.0
    utlx = [turn(600, 580, "utlx"), turn(590, 570, "utlx"), turn(610, 590, "utlx")]
    meta = [turn(540, 522, "meta"), turn(545, 527, "meta"), turn(535, 517, "meta")]
    summary = m.alternation_summary(utlx, meta)
    (label, entry), = summary.items()
    assert label == f"{name} fp16 D=128 full N_CTX=2048"
    assert entry["utlx_tflops"] == [600, 590, 610] and entry["meta_tflops"] == [540, 545, 535]
    assert abs(entry["ratio_of_medians"] - 600 / 540) < 1e-9
    assert abs(entry["sdpa_anchored_ratio"] - 1.0) < 0.01
    assert "anchored 1.0" in m.format_alternation(summary)
    with pytest.raises(SystemExit):
        m.parse_args(["--alternate", "3"])  # only with --compare-meta
