"""tools/bench/gemm.py without a GPU: the per-shape flow (with CPU tensors and a stand-in timer), the
precompile deduplication, summaries, tables and the run order."""

from __future__ import annotations

import importlib
import math
from collections import Counter

import pytest

torch = pytest.importorskip("torch")


def _impl(gemm, name, wrong=False, fails=False):
    def call(a, b):
        if fails:
            raise RuntimeError("launch failed")
        out = a @ b
        return out + 1.0 if wrong else out

    def run(a, b, c):
        c.copy_(call(a, b))

    return gemm.Impl(name, call, run, lambda a, b, c, budget: {"config": f"{name}-cfg"})


def test_bench_shape_checks_then_times_both_tables_and_host_cost(gemm_mod):
    gemm = gemm_mod
    impls = {"cuBLAS": _impl(gemm, "cuBLAS"), "wrong": _impl(gemm, "wrong", wrong=True),
             "broken": _impl(gemm, "broken", fails=True), "utlx.matmul": _impl(gemm, "utlx.matmul"),
             "missing": RuntimeError("import failed")}
    timed = []

    def bench(fn, rep_ms):
        fn()
        timed.append(rep_ms)
        return {0: 2.0, 1: 1.0}[len(timed) % 2]

    row = gemm.bench_shape(impls, "fp16", 64, 48, 32, rounds=3, rep_ms=7.0, tune_budget_s=1.0, host_calls=3,
                           device="cpu", bench=bench)
    cells = row["impls"]
    assert cells["wrong"]["error"].startswith("wrong result: max abs error")
    assert "RuntimeError: launch failed" in cells["broken"]["error"]
    assert cells["missing"]["error"] == "setup failed: RuntimeError: import failed"
    assert "plain_ms" not in cells["wrong"] and "host_us_per_call" not in cells["broken"]
    # 2 ready implementations x 3 rounds x 2 tables, all with the requested rep
    assert len(timed) == 12 and set(timed) == {7.0}
    for name in ("cuBLAS", "utlx.matmul"):
        cell = cells[name]
        assert cell["config"] == f"{name}-cfg" and len(cell["plain_round_ms"]) == 3
        assert cell["plain_ms"] == sorted(cell["plain_round_ms"])[1]  # the median over rounds
        assert math.isclose(cell["plain_tflops"], 2 * 64 * 48 * 32 / (cell["plain_ms"] * 1e-3) / 1e12)
        assert "rounds_tflops" in cell and isinstance(cell["host_us_per_call"], float)


def test_check_result_against_fp32_reference(gemm_mod):
    gemm = gemm_mod
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 96, generator=g), torch.randn(96, 32, generator=g)
    ref = a @ b
    assert gemm.check_result((a.bfloat16().float() @ b.bfloat16().float()).bfloat16(), ref, "bf16") is None
    bad = ref.clone()
    bad[3, 4] += 0.1 * ref.abs().max()
    assert "max abs error" in gemm.check_result(bad.half(), ref, "fp16")
    nan = ref.clone()
    nan[0, 0] = float("nan")
    assert gemm.check_result(nan, ref, "fp16") is not None


def test_work_order_interleaves_dtypes_and_puts_skinny_last(gemm_mod):
    gemm = gemm_mod
    order = gemm.work_order([(1, 2, 3), (4, 5, 6)], [(16, 8, 8)], ["fp16", "bf16"])
    assert order == [("fp16", (1, 2, 3), False), ("bf16", (1, 2, 3), False), ("fp16", (4, 5, 6), False),
                     ("bf16", (4, 5, 6), False), ("fp16", (16, 8, 8), True), ("bf16", (16, 8, 8), True)]
    assert gemm.SKINNY_SHAPES == [(16, 8192, 8192), (128, 8192, 8192), (512, 8192, 8192)] and len(gemm.SHAPES) == 8


def test_rotations_lead_with_each_item(gemm_mod):
    gemm = gemm_mod
    assert gemm.rotations(["a", "b", "c"], 4) == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
    assert gemm.rotations([], 3) == []


def _row(M, u=None, cb=None, metric="plain_tflops", host=None):
    impls = {}
    if u is not None:
        impls["utlx.matmul"] = {metric: u, **({"host_us_per_call": host[0]} if host else {})}
    if cb is not None:
        impls["cuBLAS"] = {metric: cb, **({"host_us_per_call": host[1]} if host else {})}
    return {"M": M, "N": 8, "K": 8, "impls": impls}


def test_summaries(gemm_mod):
    gemm = gemm_mod
    rows = [_row(1, 110, 100, host=(15.0, 20.0)), _row(2, 90, 100, host=(25.0, 20.0)), _row(3, None, 100),
            {"M": 4, "N": 8, "K": 8, "impls": {}, "skipped": "budget"}]
    s = gemm.summarize(rows)
    assert (s["wins"], s["compared"], s["shapes"]) == (1, 2, 4)
    assert math.isclose(s["geomean_ratio"], math.sqrt(1.1 * 0.9)) and math.isclose(s["min_ratio"], 0.9)
    assert s["ratios"] == {"1,8,8": pytest.approx(1.1), "2,8,8": pytest.approx(0.9)}
    h = gemm.host_summary(rows)
    assert (h["at_most_baseline"], h["compared"]) == (1, 2) and math.isclose(h["worst_ratio"], 1.25)
    assert gemm.summarize([])["geomean_ratio"] is None


def test_markdown_tables_and_report(gemm_mod):
    gemm = gemm_mod
    rows = [_row(1, 110.0, 100.0), {"M": 4, "N": 8, "K": 8, "impls": {}, "skipped": "budget"}]
    table = gemm.markdown_table(rows, ["cuBLAS", "utlx.matmul"], "plain_tflops")
    lines = table.splitlines()
    assert lines[0] == "| M,N,K | cuBLAS | utlx.matmul | utlx.matmul / cuBLAS |"
    assert lines[2] == "| 1,8,8 | 100.0 | 110.0 | 1.100 |"
    assert lines[3] == "| 4,8,8 | skipped | skipped |  |"
    assert lines[4] == "| **geomean** | 100.0 | 110.0 | **1.100** |"
    part = {"names": ["cuBLAS", "utlx.matmul"], "rows": rows, "skinny_rows": [_row(16, 95.0, 100.0)]}
    part["summary"] = {"plain": gemm.summarize(rows), "rounds": gemm.summarize(rows, "rounds_tflops"),
                       "skinny": gemm.summarize(part["skinny_rows"]), "host": gemm.host_summary(rows)}
    rows[0]["impls"]["utlx.matmul"]["config"] = "tma_persistent/persistent/128x256x64/s3/g8/w8"
    text = gemm.report_markdown({"device": "H200", "torch": "2.11", "triton": "3.6.0", "time": "now",
                                 "command": "python tools/bench/gemm.py", "dtypes": {"bf16": part}})
    assert "### bf16: plain loop, TFLOPS (headline)" in text and "### bf16: skinny shapes" in text
    assert "1,8,8: `tma_persistent/persistent/128x256x64/s3/g8/w8`" in text
    assert "bf16 summary: plain loop >= cuBLAS on 1 of 1 (geomean 1.100)" in text
    assert "skinny min ratio 0.950" in text


def test_parse_shapes(gemm_mod):
    gemm = gemm_mod
    assert gemm.parse_shapes(["16,8192,8192", "4x5x6"]) == [(16, 8192, 8192), (4, 5, 6)]
    with pytest.raises(SystemExit, match="positive M,N,K triples"):
        gemm.parse_shapes(["1,2"])
    with pytest.raises(SystemExit, match="positive M,N,K triples"):
        gemm.parse_shapes(["0,2,3"])


def test_precompile_items_keep_one_problem_per_compile(gemm_mod):
    gemm = gemm_mod
    impls = {"cuBLAS": _impl(gemm, "cuBLAS"),
             "utlx.matmul": gemm.Impl("utlx.matmul", None, None, precompile="utlx.matmul"),
             "tma": gemm.Impl("tma", None, None, precompile=(
                 "tma_persistent", [({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64,
                                      "GROUP_SIZE_M": 8, "NUM_STAGES": 3}, 8)], "persistent"))}
    work = gemm.work_order([(4096, 4096, 4096), (8192, 8192, 8192)], [(16, 8192, 8192)], ["fp16", "bf16"])
    items = gemm.precompile_items(impls, work, num_sms=132)
    count = Counter((d, shape) for d, shape, *_ in items)
    mm = importlib.import_module("utlx.matmul")
    n_cands = len(mm.for_problem(mm.candidates("hopper", True), 4096, 4096, 132))
    # the TMA row's configuration is one of utlx.matmul's candidates: compiled once
    assert count[("fp16", (4096, 4096, 4096))] == count[("bf16", (4096, 4096, 4096))] == n_cands
    # 8192^3 needs the very kernels 4096^3 needs (16-divisible sizes, more tiles than SMs): nothing new
    assert ("fp16", (8192, 8192, 8192)) not in count
    # the skinny shape has fewer tiles than SMs: its persistent grids (other NUM_SMS) are new kernels, and so
    # are the kernels only skinny problems get (narrow TMA tiles, split-K), each of which is compiled
    base = {c.id for c in mm.candidates("hopper", True)}
    only_skinny = {c.id for c in mm.for_problem(mm.candidates("hopper", True, shape=(16, 8192, 8192)), 16, 8192, 132,
                                                8192) if c.id not in base}
    skinny_items = [mm.Candidate(fam, cx, nw, gm) for d, shape, fam, cx, nw, gm in items
                    if shape == (16, 8192, 8192) and d == "fp16"]
    assert any(c.family == "tma_splitk" for c in skinny_items)
    assert {c.id for c in skinny_items if c.id in only_skinny} == only_skinny
    assert all(c.grid_mode == "persistent" for c in skinny_items if c.id not in only_skinny)
    assert 0 < len(skinny_items) - len(only_skinny) < n_cands
    keys = [(d, fam, cx, nw, gm, shape) for d, shape, fam, cx, nw, gm in items]
    assert len(keys) == len(set(keys))


def test_host_cost_is_the_median_of_timed_bursts_after_an_untimed_one(gemm_mod):
    """The first burst (the allocator filling up) is not timed; every timed burst starts after a sync; the
    cell is the median, so one slow burst does not decide the floor."""
    events = []
    now = [0.0]
    cost = {1: 1.0, 2: 10e-6, 3: 12e-6, 4: 90e-6}  # seconds per call, by how many syncs came before the call

    def call():
        events.append("call")
        now[0] += cost[events.count("sync")]

    def sync():
        events.append("sync")

    per_call = gemm_mod.host_us_per_call(call, sync, calls=4, repeats=3, clock=lambda: now[0])
    assert [round(x, 3) for x in per_call] == [10.0, 12.0, 90.0]  # the untimed burst's 1 s per call is not there
    assert events[:6] == ["sync", "call", "call", "call", "call", "sync"]
    assert events.count("sync") == 2 + 3 and events.count("call") == 4 * 4
