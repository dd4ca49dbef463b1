"""No wrong binary in the cache under concurrency: key and edits always come from one snapshot.

Compiles run on two threads while a third toggles global activations and a fourth binds a pipeline to
kernels, all over one cache dir; a second process then checks every cached binary against the
pipelines its key claims and looks every state up through Triton. Each pipeline marks the PTX, so a
binary shows what really ran (see ``tritonx_stress``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
import tritonx
import tritonx_stress as stress

HERE = Path(__file__).resolve().parent


def _verify_in_child(cache: Path, kernels: Path, key_files: list[Path], timeout: float = 600) -> dict:
    env = dict(os.environ, TRITONX_PLUGINS="none")
    done = subprocess.run([sys.executable, str(HERE / "tritonx_stress.py"), "verify", "--cache", str(cache),
                           "--kernels", str(kernels), "--keys", *map(str, key_files)],
                          capture_output=True, text=True, env=env, timeout=timeout, check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("@@stress@@")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("@@stress@@"):])


def test_mismatch_detection_works(tmp_path):
    """The checker itself: a binary whose marks differ from its key's claim is reported."""
    ps = stress.pipelines()
    table = stress.claims(ps)
    digest_a = next(d for d, names in table.items() if names == {"A"})
    edited = f"ptx\n{stress.MARK}A\n"
    assert stress.check(f"base-tritonx-{digest_a}", edited, table, "x") is None
    assert "claims []" in stress.check("base", edited, table, "x")  # edited binary under the stock key
    assert "claims ['A']" in stress.check(f"base-tritonx-{digest_a}", "ptx", table, "x")  # stock under A's key
    assert "unknown tritonx digest" in stress.check("base-tritonx-" + "0" * 32, "ptx", table, "x")


def test_compiles_under_toggles_and_binds_never_mismatch(tmp_path, fresh_cache):
    kernels_dir = tmp_path / "kernels"
    result = stress.run(stress.twin_kernels(kernels_dir), 200, threads=2, seed=11)
    print(f"stress: {result.compiles} compiles in {result.seconds:.1f} s, {result.toggles} toggles, "
          f"{result.binds} binds, {len(result.mismatches)} mismatches, "
          f"{result.ast_retries} retries after CPython's AST race")
    assert not result.errors, result.errors[:3]
    assert result.compiles == 200
    assert result.toggles > 10 and result.binds == len(stress.BOUND)  # the other threads really interfered
    assert len({k for k in result.keys.values() if "-tritonx-" in k}) > 3  # several pipeline states were keyed
    assert result.mismatches == []

    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": result.keys}))
    checked = _verify_in_child(fresh_cache, kernels_dir, [keys])
    print(f"second process: {checked['entries']} cache entries checked, {checked['hits']}/{checked['lookups']} "
          f"lookups hit, {len(checked['mismatches'])} mismatches")
    assert checked["entries"] >= 10
    assert checked["hits"] > 0, checked["misses"]
    assert checked["mismatches"] == []


def test_a_process_without_tritonx_gets_stock_binaries(tmp_path, fresh_cache):
    """The original defect: another process, never importing tritonx, loaded p's edited PTX from the stock key."""
    kernels_dir = tmp_path / "kernels"
    result = stress.run(stress.twin_kernels(kernels_dir), 40, threads=2, seed=5)
    assert result.mismatches == [] and not result.errors
    code = f"""
import importlib.util, json, sys
import triton
from triton.backends.compiler import GPUTarget
spec = importlib.util.spec_from_file_location("plain_twin", {str(kernels_dir / "stress_kernel.py")!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
out = []
for n in {list(stress.SIZES)!r}:
    src = triton.compiler.ASTSource(fn=mod.stress_kernel, signature={stress.SIGNATURE!r}, constexprs={{"N": n}})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    out.append(k.asm["ptx"].count({stress.MARK!r}))
print(json.dumps({{"marks": out, "tritonx": "tritonx" in sys.modules}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                          env=dict(os.environ), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"marks": [0] * len(stress.SIZES), "tritonx": False}


@pytest.mark.slow
def test_thousands_of_compiles_in_several_processes(tmp_path, fresh_cache):
    """Four processes at once, 800 compiles each, two compile threads each, one shared cache dir."""
    kernels_dir = tmp_path / "kernels"
    stress.twin_kernels(kernels_dir)
    env = dict(os.environ, TRITONX_PLUGINS="none")
    procs, outs = [], []
    for i in range(4):
        out = tmp_path / f"run{i}.json"
        outs.append(out)
        command = [sys.executable, str(HERE / "tritonx_stress.py"), "run", "--cache", str(fresh_cache),
                   "--kernels", str(kernels_dir), "--compiles", "800", "--seed", str(100 + i), "--out", str(out)]
        procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=3600)
        assert p.returncode == 0, err[-3000:]
    runs = [json.loads(o.read_text()) for o in outs]
    total = sum(r["compiles"] for r in runs)
    print(f"stress (4 processes): {total} compiles, {max(r['seconds'] for r in runs):.0f} s, "
          f"{sum(len(r['mismatches']) for r in runs)} mismatches")
    assert total == 3200 and all(not r["errors"] for r in runs)
    assert all(r["mismatches"] == [] for r in runs)
    checked = _verify_in_child(fresh_cache, kernels_dir, outs, timeout=1800)
    assert checked["mismatches"] == [] and checked["hits"] > 0


def test_stress_pipelines_are_keyed_without_warnings(recwarn):
    ps = stress.pipelines()
    with tritonx.activate(ps["A"], ps["B"]):
        pass
    assert not [w for w in recwarn if issubclass(w.category, tritonx.UnkeyedStateWarning)]


def test_only_cpythons_ast_race_is_retried(tmp_path, fresh_cache, monkeypatch):
    """The harness retries a compile that hit CPython 3.11's AST-constructor race and reports anything else."""
    real = tritonx.compile_for
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise SystemError("AST constructor recursion depth mismatch (before=30, after=22)")
        if calls["n"] == 5:
            raise SystemError("some other interpreter error")
        return real(*args, **kwargs)

    monkeypatch.setattr(tritonx, "compile_for", flaky)
    result = stress.run(stress.twin_kernels(tmp_path / "kernels"), 8, threads=1, seed=3)
    assert result.ast_retries == 1
    assert [e.split(": ", 1)[1] for e in result.errors] == ["SystemError: some other interpreter error"]
    assert result.compiles == 7


# ------------------------------------------------------------------------------------------------------
# Issue 28's acceptance: threads, processes, one cache dir and a Redis that dies and comes back mid-run
# ------------------------------------------------------------------------------------------------------

#: Short remote-cache timeouts and cool-down, so the dead server costs little and the restart is seen soon.
REDIS_FAST = {"TRITONX_REDIS_CONNECT_TIMEOUT": "0.5", "TRITONX_REDIS_TIMEOUT": "0.5",
              "TRITONX_REDIS_BREAKER_FAILURES": "3", "TRITONX_REDIS_BREAKER_COOLDOWN": "0.3"}


class _RedisKiller:
    """Kills the Redis server once a third of the in-process compiles are done, restarts it (same port, empty)
    at two thirds: called from the compile threads through ``stress.run(on_compile=...)``."""

    def __init__(self, server, compiles: int) -> None:
        self.server, self.kill_at, self.restart_at = server, compiles // 3, 2 * compiles // 3
        self.lock = threading.Lock()
        self.events: list[str] = []

    def __call__(self, done: int) -> None:
        with self.lock:
            if done >= self.kill_at and not self.events:
                self.server.kill()
                self.events.append(f"killed after {done}")
            elif done >= self.restart_at and len(self.events) == 1:
                time.sleep(0.5)  # some compiles meet the dead server (and the open breaker) meanwhile
                self.server.start()
                self.events.append(f"restarted after {done}")


def _threads_processes_and_redis_restart(tmp_path, fresh_cache, monkeypatch, *, threads: int, compiles: int,
                                         processes: int, process_compiles: int, timeout: float) -> None:
    import tritonx_redis
    from tritonx import compat

    kernels_dir = tmp_path / "kernels"
    kernels = stress.twin_kernels(kernels_dir)
    with tritonx_redis.RedisProcess() as server:
        for var, value in {**server.environment(os.urandom(6).hex()), **REDIS_FAST}.items():
            monkeypatch.setenv(var, value)
        getattr(compat, "reset_remote_cache", lambda: None)()
        env = dict(os.environ, TRITONX_PLUGINS="none")
        procs, outs = [], []
        for i in range(processes):  # the same cache dir as this process, the same Redis
            outs.append(tmp_path / f"run{i}.json")
            command = [sys.executable, str(HERE / "tritonx_stress.py"), "run", "--cache", str(fresh_cache),
                       "--kernels", str(kernels_dir), "--compiles", str(process_compiles), "--threads", "2",
                       "--seed", str(300 + i), "--out", str(outs[-1])]
            procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        killer = _RedisKiller(server, compiles)
        start = time.monotonic()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", getattr(tritonx, "RemoteCacheWarning", UserWarning))
                result = stress.run(kernels, compiles, threads=threads, seed=21, on_compile=killer)
            local_remote = getattr(compat, "remote_cache_stats", dict)()
            runs = []
            for p, out in zip(procs, outs, strict=True):
                try:
                    _, err = p.communicate(timeout=max(1.0, timeout - (time.monotonic() - start)))
                except subprocess.TimeoutExpired:
                    pytest.fail(f"a stress process hung: not done {timeout:.0f} s after the start")
                assert p.returncode == 0, err[-3000:]
                runs.append(json.loads(out.read_text()))
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        seconds = time.monotonic() - start
        print(f"stress with Redis: {result.compiles} compiles on {threads} threads {result.targets} + "
              f"{sum(r['compiles'] for r in runs)} in {processes} processes, {seconds:.0f} s; {killer.events}; "
              f"this process's remote cache: {local_remote}; the others': {[r['remote'] for r in runs]}")
        assert killer.events[:1] == [f"killed after {killer.kill_at}"] and len(killer.events) == 2
        assert not result.errors and result.compiles == compiles  # every compile completed
        assert set(result.targets) == set(stress.TARGETS) and result.binds == len(stress.BOUND)
        assert all(not r["errors"] and r["compiles"] == process_compiles for r in runs)
        assert result.mismatches == [] and all(r["mismatches"] == [] for r in runs)  # 0 wrong binaries
        everyone = [local_remote, *(r["remote"] for r in runs)]
        assert local_remote.get("errors", 0) > 0  # this process met the dead server ...
        assert local_remote.get("stored", 0) > 0 and sum(r.get("hits", 0) for r in everyone) > 0  # ... and the live one
        assert not any(r.get("rejected") for r in everyone)  # sound entries only, although writes were cut off

        key_file = tmp_path / "keys-here.json"
        key_file.write_text(json.dumps({"keys": result.keys}))
        # a fresh process: every binary in the shared dir against its key, then every state looked up through
        # Triton (Redis serves what was stored after the restart)
        checked = _verify_in_child(fresh_cache, kernels_dir, [key_file, *outs], timeout=timeout)
        assert checked["mismatches"] == [] and checked["hits"] > 0, checked


def test_threads_processes_and_a_redis_restart_never_give_a_wrong_binary(tmp_path, fresh_cache, monkeypatch):
    """The short variant of issue 28's acceptance stress: 8 threads x 3 pipelines x 2 targets here, 2 more
    processes on the same cache dir, one Redis killed and restarted mid-run."""
    _threads_processes_and_redis_restart(tmp_path, fresh_cache, monkeypatch, threads=8, compiles=48, processes=2,
                                         process_compiles=12, timeout=600)


@pytest.mark.slow
def test_acceptance_stress_threads_processes_and_a_redis_restart(tmp_path, fresh_cache, monkeypatch):
    """Issue 28's acceptance stress: 8 threads x 3 pipelines x 2 targets plus 4 processes on one cache dir, and
    a Redis killed and restarted mid-run: 0 wrong binaries, 0 hangs, every compile completes."""
    _threads_processes_and_redis_restart(tmp_path, fresh_cache, monkeypatch, threads=8, compiles=400, processes=4,
                                         process_compiles=150, timeout=3000)
