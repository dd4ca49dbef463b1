"""``utlx.matmul``'s kernel selection on the CPU: candidate space, filtering, timing logic, caching.

The GPU is replaced by mocks (timings from a table, launches that compute or corrupt the result), so
the logic that decides what the H200 runs is tested here; the candidates themselves are compiled for
cuda:90 (the wheel's ptxas) to prove each one fits the hardware limits.
"""

from __future__ import annotations

import importlib
import json

import pytest
from _helpers import compile_kernel, ptxas_report, spills
from utlx.compat import TRITON_VERSION_STR
from utlx.kernels.nvidia import hopper_pipelined as hp
from utlx.kernels.nvidia import hopper_tma_persistent as tp
from utlx.kernels.nvidia import hopper_tma_streamk as sk
from utlx.kernels.nvidia import hopper_ws_persistent as ws
from utlx.kernels.nvidia import hopper_ws_pingpong as pp

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
            "utlx.kernels.amd.amd_pipelined", fromlist=["CONFIGS"]).CONFIGS]


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

    return m.select_best(cands, check, timer, **dict({"warmup_ms": 0}, **kw))


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


def test_a_non_finalist_screen_never_beats_the_finalists_medians():
    """The H200 case: the finalists screen fast once and then run slower in the final rounds; the 3rd-best
    screen, never timed again, is below every finalist's median, yet must not win on one short sample."""
    a, b, c = _cand(bn=256), _cand(bn=128, warps=4, stages=4), _cand(group=4)
    rep = _select([a, b, c], {a.id: [0.74, 0.90, 0.88, 0.89], b.id: [0.84, 0.86, 0.87, 0.88], c.id: [0.85]},
                  top_k=2, within=0.0)
    assert not next(r for r in rep.results if r.id == c.id).final_ms
    assert rep.winner == b  # median 0.87 beats a's 0.89; c's lone 0.85 screen is not a candidate any more


def test_a_warm_up_keeps_the_first_screen_from_reading_a_cool_gpu():
    """The H200 case: right after the checks' idle time the GPU runs fast for a while, so the first candidate
    screened reads fast once (0.75) and steadily 0.86 after; b is really the fastest (0.80)."""
    a, b, c = _cand(bn=256), _cand(bn=128, warps=4, stages=4), _cand(group=4)
    times = {a.id: [0.75] + [0.86] * 5, b.id: 0.80, c.id: 0.90}
    log = []
    rep = _select([a, b, c], times, top_k=1, within=0.0, warmup_ms=100.0, log=log)
    assert [k for k in log if k[0] == "time"][:2] == [("time", a.id), ("time", a.id)]  # warm-up, then its screen
    assert next(r for r in rep.results if r.id == a.id).screen_ms == 0.86
    assert rep.winner == b
    # without the warm-up the cool reading makes a the only finalist, and the winner
    assert _select([a, b, c], {a.id: [0.75] + [0.86] * 5, b.id: 0.80, c.id: 0.90}, top_k=1, within=0.0).winner == a


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
    assert "NVIDIA H200" in key and f"triton {TRITON_VERSION_STR}" in key and "2048x4096x1024" in key
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


class FakeLaunch:
    """Stands in for ``utlx.gemm_launch.GemmLaunch``: computes (or corrupts) the product on the CPU."""

    def __init__(self, cand, state):
        self.cand, self.state = cand, state

    def __call__(self, a, b, c):
        self.state["last"] = self.cand.id
        self.state["runs"].append((self.cand.id, a.data_ptr(), b.data_ptr(), tuple(a.stride()), tuple(b.stride())))
        c.copy_(a @ b)
        if self.cand.id in self.state["wrong"]:
            c.add_(1.0)

    def matmul(self, a, b, pa, pb):
        assert (pa, pb) == (a.data_ptr(), b.data_ptr())
        c = a.new_empty((a.shape[0], b.shape[1]))
        self(a, b, c)
        return c


def _validate_shapes_only(a, b):
    """matmul's validation minus the GPU check (CPU tensors stand in for CUDA ones here)."""
    if a.shape[1] != b.shape[0] or a.dtype != b.dtype:
        raise ValueError("utlx.matmul: bad inputs")


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """CPU tensors, a fake H200, launches that compute (or corrupt) the product, table-driven timings."""
    torch = pytest.importorskip("torch")
    import triton.testing

    state = {"last": None, "times": {}, "wrong": set(), "binds": 0, "bench": 0, "problems": [], "runs": [],
             "validate": m._validate}
    monkeypatch.setattr(m, "_device_info", lambda dev: m.DeviceInfo("hopper", "Fake H200", 132))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)

    def bind(self, problem):
        state["binds"] += 1
        state["problems"].append(problem)
        return FakeLaunch(self, state)

    def do_bench(fn, warmup=25, rep=100, return_mode="mean", **kw):
        state["bench"] += 1
        fn()
        return state["times"].get(state["last"], 5.0)

    monkeypatch.setattr(m.Candidate, "bind", bind)
    monkeypatch.setattr(triton.testing, "do_bench", do_bench)
    monkeypatch.setattr(m, "_PLANS", {})
    monkeypatch.setattr(m, "_REPORTS", {})
    monkeypatch.setattr(m, "_validate", _validate_shapes_only)
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
    assert m._REPORTS[m._problem_key(a, b)] is rep and m.report_for(a, b) is rep
    # same process: nothing re-timed
    bench = fake_gpu["bench"]
    assert m.tune(a, b) is rep and fake_gpu["bench"] == bench
    # a new process (empty in-memory cache): the disk answers, nothing is checked or timed
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
        sig = tp.signature(bm, bn, bk, epilogue_subtile=tp.epilogue_subtile(c))
        k = compile_kernel(tp.matmul_kernel_tma_persistent, sig, dict(c, NUM_SMS=stride), "cuda:90", cand.num_warps)
        assert "cp.async.bulk.tensor.2d" in k.asm["ptx"]
    elif cand.family == "ws_persistent":
        sig = ws.signature(bm, bn, bk, epilogue_subtile=tp.epilogue_subtile(c))
        k = compile_kernel(ws.matmul_kernel_ws_persistent, sig, dict(c, NUM_SMS=132), "cuda:90", cand.num_warps)
        assert "setmaxnreg" in k.asm["ptx"] and "cp.async.bulk.tensor.2d" in k.asm["ptx"]
        # the estimate is an upper bound (barriers and alignment are not modelled byte for byte)
        assert k.metadata.shared <= cand.smem_bytes() <= m.SMEM_LIMIT
        assert cand.smem_bytes() - k.metadata.shared < ws.SMEM_SLACK
        assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16" in k.asm["ptx"]
        return
    elif cand.family == "ws_pingpong":
        sig = pp.signature(bm, bn, bk, epilogue_subtile=tp.epilogue_subtile(c))
        k = compile_kernel(pp.matmul_kernel_ws_pingpong, sig, dict(c, NUM_SMS=132), "cuda:90", cand.num_warps)
        ptx = k.asm["ptx"]
        assert "setmaxnreg" in ptx and "cp.async.bulk.tensor.2d" in ptx
        assert k.metadata.shared <= cand.smem_bytes() <= m.SMEM_LIMIT
        assert cand.smem_bytes() - k.metadata.shared < pp.SMEM_SLACK
        # each consumer owns a whole tile: one wgmma covers 64 rows, so BLOCK_M / 64 of them per k16 step
        assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16" in ptx
        assert spills(ptxas_report(ptx)) == (0, 0)
        return
    elif cand.family == "tma_streamk":
        sig = sk.signature(bm, bn, bk, epilogue_subtile=tp.epilogue_subtile(c))
        k = compile_kernel(sk.matmul_kernel_tma_streamk, sig, dict(c, NUM_SMS=132), "cuda:90", cand.num_warps)
        # the persistent kernel's shared memory plus the arrival counter's scratch (estimated from above)
        assert tp.smem_bytes(c) < k.metadata.shared <= cand.smem_bytes() <= m.SMEM_LIMIT
        assert "red.relaxed.gpu.global.add.v2.f32" in k.asm["ptx"]
        assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16" in k.asm["ptx"]
        return
    else:
        k = compile_kernel(hp.matmul_kernel_pipelined_hopper, hp.SIGNATURE, c, "cuda:90", cand.num_warps,
                           ones=("stride_ak", "stride_bn", "stride_cn"))
        assert "cp.async.cg" in k.asm["ptx"]
    assert k.metadata.shared == cand.smem_bytes() <= m.SMEM_LIMIT
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16" in k.asm["ptx"]  # every tile's N fits one wgmma


# --------------------------------------------------------------------------------------------------
# matmul(): the plan cache (hot path) on CPU tensors with a mock device


def _plans_made(monkeypatch):
    made = []
    real = m._make_plan

    def counting(a, b):
        made.append((tuple(a.shape), tuple(a.stride()), tuple(b.stride())))
        return real(a, b)

    monkeypatch.setattr(m, "_make_plan", counting)
    return made


def test_second_call_of_a_problem_is_one_lookup(fake_gpu, monkeypatch):
    torch = fake_gpu["torch"]
    made = _plans_made(monkeypatch)
    a, b = _inputs(torch, 64, 64, 32)
    c = m.matmul(a, b)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.05, rtol=0.01)
    runs = len(fake_gpu["runs"])
    a2, b2 = _inputs(torch, 64, 64, 32)  # other data, same problem
    a2.mul_(2)
    c2 = m.matmul(a2, b2)
    torch.testing.assert_close(c2.float(), a2.float() @ b2.float(), atol=0.05, rtol=0.01)
    assert len(made) == 1 and len(fake_gpu["runs"]) == runs + 1
    assert fake_gpu["runs"][-1][1:3] == (a2.data_ptr(), b2.data_ptr())
    assert len(m._PLANS) == 1 and m.plan_key(a2, b2) in m._PLANS


def test_plan_key_separates_what_a_launch_was_specialized_for(fake_gpu, monkeypatch):
    torch = fake_gpu["torch"]
    import tritonx

    made = _plans_made(monkeypatch)
    a, b = _inputs(torch, 64, 64, 32)
    m.matmul(a, b)
    m.matmul(a.bfloat16(), b.bfloat16())  # dtype
    big = torch.empty(64 * 32 + 1, dtype=torch.float16)
    a_off = big[1:].view(64, 32)  # data pointer 2 bytes off a 16-byte boundary
    a_off.copy_(a)
    m.matmul(a_off, b)
    m.matmul(a, b.T.contiguous().T)  # B column-major (strides)
    with tritonx.activate(tritonx.Pipeline("plan-key-test")):  # other active pipelines
        m.matmul(a, b)
    assert len(made) == 5 and len(m._PLANS) == 5
    m.matmul(a, b)
    m.matmul(a_off, b)
    assert len(made) == 5


def test_column_major_operands_are_not_copied(fake_gpu, monkeypatch):
    torch = fake_gpu["torch"]
    a, b = _inputs(torch, 64, 48, 32)
    bt = b.T.contiguous().T  # column-major [K, N] view
    at = a.T.contiguous().T
    c = m.matmul(at, bt)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.05, rtol=0.01)
    _, pa, pb, sa, sb = fake_gpu["runs"][-1]
    assert (pa, pb, sa, sb) == (at.data_ptr(), bt.data_ptr(), (1, 64), (1, 32))  # the views themselves ran
    rep = m.report_for(at, bt)
    assert rep.winner.id.endswith("/acol/bcol")
    assert fake_gpu["problems"][-1].a_col and fake_gpu["problems"][-1].b_col


def test_strided_operands_are_copied_to_row_major(fake_gpu):
    torch = fake_gpu["torch"]
    a, b = _inputs(torch, 64, 48, 64)
    a_strided = a[:, ::2]  # strides (64, 2): neither row- nor column-major
    c = m.matmul(a_strided, b[:32])
    torch.testing.assert_close(c.float(), a_strided.float() @ b[:32].float(), atol=0.05, rtol=0.01)
    _, pa, _, sa, _ = fake_gpu["runs"][-1]
    assert sa == (32, 1) and pa != a_strided.data_ptr()


def test_column_major_view_tma_cannot_address_is_copied_on_hopper(fake_gpu):
    torch = fake_gpu["torch"]
    x = torch.randn(40, 33).half()  # A = x.T is [33, 40] column-major with 66-byte columns: no TMA
    b = torch.randn(40, 16).half()
    c = m.matmul(x.T, b)
    torch.testing.assert_close(c.float(), x.T.float() @ b.float(), atol=0.05, rtol=0.01)
    assert fake_gpu["runs"][-1][3] == (40, 1)  # the row-major copy (80-byte rows) ran
    assert m.needs_copy(x.T, 40, "hopper") and not m.needs_copy(x.T, 40, "amd")


def test_plans_are_bounded(fake_gpu, monkeypatch):
    torch = fake_gpu["torch"]
    monkeypatch.setattr(m, "_PLANS_CAPACITY", 2)
    shapes = [(16, 16, 16), (32, 16, 16), (48, 16, 16)]
    for M, N, K in shapes:
        m.matmul(*_inputs(torch, M, N, K))
    assert len(m._PLANS) == 2
    assert [k[0][0] for k in m._PLANS] == [32, 48]  # the oldest plan went first


def test_empty_problems(fake_gpu):
    torch = fake_gpu["torch"]
    a, b = _inputs(torch, 8, 4, 0)
    assert torch.equal(m.matmul(a, b), torch.zeros(8, 4, dtype=torch.float16))
    a, b = _inputs(torch, 0, 4, 8)
    assert m.matmul(a, b).shape == (0, 4)
    assert not fake_gpu["runs"]


def test_capture_without_tuning_is_a_clear_error(fake_gpu, monkeypatch):
    torch = fake_gpu["torch"]
    monkeypatch.setattr(m, "_capturing", lambda: True)
    with pytest.raises(RuntimeError, match="tuning cannot run while a CUDA graph is being captured"):
        m.matmul(*_inputs(torch, 64, 64, 32))


def test_bad_inputs_are_named():
    torch = pytest.importorskip("torch")
    a = torch.randn(4, 8).half()
    with pytest.raises(TypeError, match="expected two torch tensors, got list and Tensor"):
        m.matmul([[1.0]], a)
    with pytest.raises(ValueError, match=r"expected 2-D tensors, got shapes \(4, 8, 1\)"):
        m.matmul(a[..., None], a)
    with pytest.raises(ValueError, match=r"inner dimensions differ: \(4, 8\) @ \(4, 8\)"):
        m.matmul(a, a)
    with pytest.raises(TypeError, match=r"expected two fp16 or two bf16 tensors, got torch\.float32"):
        m.matmul(a.float(), a.T.float())
    with pytest.raises(ValueError, match="both tensors must be on the same GPU, got cpu and cpu"):
        m.matmul(a, a.T)
