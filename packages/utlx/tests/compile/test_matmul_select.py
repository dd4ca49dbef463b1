"""``utlx.matmul``'s kernel selection on the CPU: candidate space, filtering, timing logic, caching.

The GPU is replaced by mocks (timings from a table, launches that compute or corrupt the result), so
the logic that decides what the H200 runs is tested here; the candidates themselves are compiled for
cuda:90 (the wheel's ptxas) to prove each one fits the hardware limits.
"""

from __future__ import annotations

import importlib
import json

import pytest
from _helpers import compile_kernel
from utlx.kernels import hopper_pipelined as hp
from utlx.kernels import hopper_tma_persistent as tp
from utlx.kernels import hopper_ws_persistent as ws

m = importlib.import_module("utlx.matmul")  # ``utlx.matmul`` the attribute is the function


def _cand(family="tma_persistent", bm=128, bn=256, bk=64, stages=3, group=8, warps=8, grid="persistent"):
    return m.Candidate(family, tuple(sorted(m._cfg(bm, bn, bk, stages, group).items())), warps, grid)


# --------------------------------------------------------------------------------------------------
# Candidate space


def test_hopper_candidates_cover_the_h100_configs_and_fit_shared_memory():
    ids = [c.id for c in m.candidates("hopper", aligned=True)]
    for want in ("tma_persistent/persistent/128x256x64/s3/g8/w8", "tma_persistent/persistent/128x128x64/s4/g8/w4",
                 "tma_persistent/persistent/64x256x64/s4/g8/w4", "tma_persistent/persistent/128x256x64/s3/g4/w8",
                 "tma_persistent/persistent/128x256x64/s3/g16/w8", "tma_persistent/tiles/128x128x64/s2/g8/w4",
                 "hopper_pipelined/tiles/128x256x64/s3/g8/w8"):
        assert want in ids
    assert len(ids) == len(set(ids))
    assert all(c.smem_bytes() <= 227 * 1024 for c in m.candidates("hopper", aligned=True))
    assert not any(c.family == "register_staged" for c in m.candidates("hopper", aligned=True))


def test_smem_filter_drops_what_does_not_fit():
    # 128x256x64 with 4 stages plus the 64 KB C tile is 256 KB: over the sm_90 limit.
    assert tp.smem_bytes(m._cfg(128, 256, 64, 4)) == 4 * (128 * 64 + 64 * 256) * 2 + 128 * 256 * 2 + 4 * 8
    assert not tp.fits(m._cfg(128, 256, 64, 4)) and tp.fits(m._cfg(128, 256, 64, 3))
    small = m.candidates("hopper", aligned=True, smem_limit=120 * 1024)
    assert small and all(c.smem_bytes() <= 120 * 1024 for c in small)
    assert "tma_persistent/persistent/128x256x64/s3/g8/w8" not in [c.id for c in small]


@pytest.mark.parametrize(("kind", "aligned"), [("hopper", False), ("nvidia", True), ("amd", True), ("amd", False)])
def test_unaligned_or_not_hopper_falls_back_to_register_staged(kind, aligned):
    cands = m.candidates(kind, aligned)
    assert cands and {c.family for c in cands} == {"register_staged"}
    if kind == "amd":
        assert [c.config for c in cands] == [const for const, _ in __import__(
            "utlx.kernels.amd_pipelined", fromlist=["CONFIGS"]).CONFIGS]


def test_grid_modes_and_dedup():
    c = m._cfg(128, 256, 64, 3)
    assert tp.grid_for(8192, 8192, c, 132, "persistent") == (132, 132)
    assert tp.grid_for(8192, 8192, c, 132, "tiles") == (64 * 32, tp.ONE_TILE_STRIDE)
    assert tp.grid_for(2048, 2048, c, 132, "persistent") == (128, tp.ONE_TILE_STRIDE)  # 128 tiles < 132 SMs
    with pytest.raises(ValueError, match="grid_mode 'split'"):
        tp.grid_for(64, 64, c, 132, "split")
    pers, tiles = _cand(grid="persistent"), _cand(grid="tiles")
    assert len(m.for_problem([pers, tiles], 2048, 2048, 132)) == 1  # identical launch at 2048^2
    assert len(m.for_problem([pers, tiles], 8192, 8192, 132)) == 2


# --------------------------------------------------------------------------------------------------
# select_best with mock checks and timings


def _select(cands, times, *, wrong=(), broken=(), log=None, **kw):
    """times: id -> float or list of floats (successive calls)."""
    calls = {k: list(v) if isinstance(v, list) else None for k, v in times.items()}

    def check(c):
        if log is not None:
            log.append(("check", c.id))
        if c.id in broken:
            raise RuntimeError(f"out of resources: shared memory for {c.id}")
        return f"{c.id}: max abs error 7" if c.id in wrong else None

    def timer(c, rep):
        if log is not None:
            log.append(("time", c.id))
        seq = calls[c.id]
        return seq.pop(0) if seq is not None else times[c.id]

    return m.select_best(cands, check, timer, **kw)


def test_discards_failures_and_wrong_results_and_picks_fastest():
    a, b, c, d = _cand(bn=256), _cand(bn=128, warps=4, stages=4), _cand(bm=64, warps=4, stages=4), _cand(group=4)
    log = []
    rep = _select([a, b, c, d], {a.id: 1.0, b.id: 0.5, c.id: 0.1, d.id: 0.9}, wrong={c.id}, broken={b.id}, log=log)
    assert rep.winner == d
    status = {r.id: r.status for r in rep.results}
    assert status == {a.id: "ok", b.id: "compile-error", c.id: "wrong-result", d.id: "ok"}
    assert "out of resources" in next(r.detail for r in rep.results if r.id == b.id)
    # every check happens before the first timing, and the failures are never timed
    kinds = [k for k, _ in log]
    assert kinds.index("time") > max(i for i, k in enumerate(kinds) if k == "check")
    assert ("time", b.id) not in log and ("time", c.id) not in log


def test_final_rounds_overrule_a_lucky_screen():
    a, b = _cand(bn=256), _cand(bn=128, warps=4, stages=4)
    # a screens fast once, then is slower in all three final rounds
    rep = _select([a, b], {a.id: [0.80, 1.10, 1.12, 1.09], b.id: [0.95, 1.0, 1.01, 0.99]})
    assert rep.winner == b
    assert next(r for r in rep.results if r.id == a.id).final_ms == [1.10, 1.12, 1.09]


def test_only_top_k_reach_the_final_rounds():
    cands = [_cand(bm=bm, bn=bn, group=g) for bm in (64, 128) for bn in (128, 256) for g in (4, 8)]
    times = {c.id: 1.0 + i / 10 for i, c in enumerate(cands)}
    rep = _select(cands, times, top_k=2, within=0.0)
    finals = [r.id for r in rep.results if r.final_ms]
    assert finals == [cands[0].id, cands[1].id] and rep.winner == cands[0]


def test_single_survivor_is_not_timed_and_none_gives_no_winner():
    a, b = _cand(), _cand(group=4)
    log = []
    rep = _select([a, b], {a.id: 1.0, b.id: 1.0}, broken={a.id}, log=log)
    assert rep.winner == b and not any(k == "time" for k, _ in log)
    assert _select([a, b], {a.id: 1.0, b.id: 1.0}, wrong={a.id, b.id}).winner is None


def test_timing_error_excludes_candidate():
    a, b = _cand(), _cand(group=4)

    def timer(c, rep):
        if c == a:
            raise RuntimeError("illegal memory access")
        return 2.0

    rep = m.select_best([a, b], lambda c: None, timer)
    assert rep.winner == b and next(r for r in rep.results if r.id == a.id).status == "timing-error"


def test_budget_stops_checking_but_keeps_a_winner():
    cands = [_cand(group=g) for g in (1, 2, 4, 8, 16)]
    now = [0.0]

    def clock():
        now[0] += 1.0  # every question costs a second
        return now[0]

    rep = _select(cands, {c.id: 1.0 for c in cands}, budget_s=2.5, clock=clock)
    assert rep.winner is not None
    assert [r.status for r in rep.results].count("skipped") >= 2
    assert all(r.detail == "tuning budget spent" for r in rep.results if r.status == "skipped")


# --------------------------------------------------------------------------------------------------
# Disk cache


def test_cache_round_trip_and_key(tmp_path):
    cache = m.TuningCache(tmp_path / "sub" / "t.json")
    key = m.TuningCache.key("NVIDIA H200", "float16", True, 2000, 4096, 1000)
    assert "NVIDIA H200" in key and f"triton {m.triton.__version__}" in key and "2048x4096x1024" in key
    assert cache.get(key) is None
    cache.put(key, "tma_persistent/persistent/128x256x64/s3/g8/w8", ms=0.1)
    cache.put(key + "x", "other")
    assert m.TuningCache(tmp_path / "sub" / "t.json").get(key) == "tma_persistent/persistent/128x256x64/s3/g8/w8"
    assert len(json.loads((tmp_path / "sub" / "t.json").read_text())) == 2


def test_corrupt_or_disabled_cache_is_harmless(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("{not json")
    cache = m.TuningCache(path)
    assert cache.get("k") is None
    cache.put("k", "x")
    assert cache.get("k") == "x"
    off = m.TuningCache(None)
    off.put("k", "x")
    assert off.get("k") is None


def test_default_cache_path(monkeypatch, tmp_path):
    monkeypatch.setenv("UTLX_MATMUL_CACHE", "0")
    assert m.default_cache_path() is None
    monkeypatch.delenv("UTLX_MATMUL_CACHE")
    monkeypatch.setenv("UTLX_CACHE_DIR", str(tmp_path))
    assert m.default_cache_path() == tmp_path / "matmul-tuning.json"
    monkeypatch.delenv("UTLX_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert m.default_cache_path() == tmp_path / "x" / "utlx" / "matmul-tuning.json"


def test_shape_class():
    assert m.shape_class(2048, 2047, 1025) == "2048x2048x2048"
    assert m.shape_class(1, 3, 8192) == "1x4x8192"


# --------------------------------------------------------------------------------------------------
# tune() end to end on CPU tensors with a mock device


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """CPU tensors, a fake H200, launches that compute (or corrupt) the product, table-driven timings."""
    torch = pytest.importorskip("torch")
    import triton.testing

    state = {"last": None, "times": {}, "wrong": set(), "binds": 0, "bench": 0}
    monkeypatch.setattr(m, "_device_info", lambda dev: m.DeviceInfo("hopper", "Fake H200", 132))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)

    def bind(self, M, N, K, num_sms):
        state["binds"] += 1

        def run(a, b, c):
            state["last"] = self.id
            c.copy_(a @ b)
            if self.id in state["wrong"]:
                c.add_(1.0)

        return run

    def do_bench(fn, warmup=25, rep=100, return_mode="mean", **kw):
        state["bench"] += 1
        fn()
        return state["times"].get(state["last"], 5.0)

    monkeypatch.setattr(m.Candidate, "bind", bind)
    monkeypatch.setattr(triton.testing, "do_bench", do_bench)
    monkeypatch.setattr(m, "_PLANS", {})
    monkeypatch.setattr(m, "_REPORTS", {})
    monkeypatch.setenv("UTLX_MATMUL_CACHE", str(tmp_path / "cache.json"))
    state["torch"] = torch
    state["cache"] = tmp_path / "cache.json"
    return state


def _inputs(torch, M, N, K):
    g = torch.Generator().manual_seed(0)
    return torch.randn((M, K), generator=g).half(), torch.randn((K, N), generator=g).half()


def test_tune_picks_fastest_correct_and_persists(fake_gpu):
    torch = fake_gpu["torch"]
    a, b = _inputs(torch, 64, 64, 32)
    fast_wrong = "tma_persistent/persistent/128x256x64/s3/g8/w8"
    best = "tma_persistent/tiles/128x128x64/s2/g8/w4"
    fake_gpu["times"] = {fast_wrong: 0.1, best: 0.5}
    fake_gpu["wrong"] = {fast_wrong}
    rep = m.tune(a, b)
    assert rep.winner.id == best and rep.source == "tuned"
    assert next(r for r in rep.results if r.id == fast_wrong).status == "wrong-result"
    assert json.loads(fake_gpu["cache"].read_text())[
        m.TuningCache.key("Fake H200", "float16", True, 64, 64, 32)]["candidate"] == best
    key = m._problem_key(a, b)
    assert key in m._PLANS and m.report_for(a, b) is rep
    # same process: nothing re-timed
    bench = fake_gpu["bench"]
    assert m.tune(a, b) is rep and fake_gpu["bench"] == bench
    # a new process (empty in-memory cache): the disk answers, nothing is checked or timed
    m._PLANS.clear()
    m._REPORTS.clear()
    rep2 = m.tune(a, b)
    assert rep2.source == "disk-cache" and rep2.winner.id == best and fake_gpu["bench"] == bench
    # force re-tunes
    assert m.tune(a, b, force=True).source == "tuned" and fake_gpu["bench"] > bench


def test_stale_disk_entry_is_ignored(fake_gpu):
    torch = fake_gpu["torch"]
    a, b = _inputs(torch, 64, 64, 32)
    m.TuningCache(fake_gpu["cache"]).put(m.TuningCache.key("Fake H200", "float16", True, 64, 64, 32),
                                         "tma_persistent/persistent/512x512x64/s9/g8/w8")
    rep = m.tune(a, b)
    assert rep.source == "tuned" and rep.winner.family == "tma_persistent"


def test_unaligned_inputs_tune_only_the_register_staged_kernel(fake_gpu):
    torch = fake_gpu["torch"]
    a_full, b = _inputs(torch, 64, 40, 37)
    a = torch.empty((64, 37), dtype=torch.float16)  # 74-byte rows: no TMA, no cp.async
    a.copy_(a_full)
    assert m._problem_key(a, b)[-1] is False
    rep = m.tune(a, b)
    assert {r.id.split("/")[0] for r in rep.results} == {"register_staged"}
    assert rep.winner.family == "register_staged"


def test_everything_wrong_raises_with_each_reason(fake_gpu):
    torch = fake_gpu["torch"]
    a, b = _inputs(torch, 64, 64, 32)
    fake_gpu["wrong"] = {c.id for c in m.candidates("hopper", True) + m.fallback_candidates("hopper")}
    with pytest.raises(RuntimeError, match=r"no kernel ran correctly for 64x64x32") as info:
        m.tune(a, b)
    text = str(info.value)
    assert "tma_persistent/persistent/128x256x64/s3/g8/w8: wrong-result" in text
    assert "register_staged/tiles/128x128x64/s2/g8/w8: wrong-result" in text  # the fallback was tried too


# --------------------------------------------------------------------------------------------------
# Every Hopper candidate compiles for cuda:90 and fits shared memory


@pytest.mark.parametrize("cand", m.candidates("hopper", aligned=True), ids=lambda c: c.id)
def test_candidate_compiles_for_sm90(cand):
    c = cand.config
    bm, bn, bk = c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"], c["BLOCK_SIZE_K"]
    if cand.family == "tma_persistent":
        stride = 132 if cand.grid_mode == "persistent" else tp.ONE_TILE_STRIDE
        k = compile_kernel(tp.matmul_kernel_tma_persistent, tp.signature(bm, bn, bk), dict(c, NUM_SMS=stride),
                           "cuda:90", cand.num_warps)
        assert "cp.async.bulk.tensor.2d" in k.asm["ptx"]
    elif cand.family == "ws_persistent":
        k = compile_kernel(ws.matmul_kernel_ws_persistent, ws.signature(bm, bn, bk), dict(c, NUM_SMS=132),
                           "cuda:90", cand.num_warps)
        assert "setmaxnreg" in k.asm["ptx"] and "cp.async.bulk.tensor.2d" in k.asm["ptx"]
        # the estimate is an upper bound (barriers and alignment are not modelled byte for byte)
        assert k.metadata.shared <= cand.smem_bytes() <= m.SMEM_LIMIT
        assert cand.smem_bytes() - k.metadata.shared < ws.SMEM_SLACK
        assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16" in k.asm["ptx"]
        return
    else:
        k = compile_kernel(hp.matmul_kernel_pipelined_hopper, hp.SIGNATURE, c, "cuda:90", cand.num_warps,
                           ones=("stride_ak", "stride_bn", "stride_cn"))
        assert "cp.async.cg" in k.asm["ptx"]
    assert k.metadata.shared == cand.smem_bytes() <= m.SMEM_LIMIT
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16" in k.asm["ptx"]  # every tile's N fits one wgmma
