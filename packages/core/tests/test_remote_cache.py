"""Triton's Redis remote cache stays correct with tritonx: each pipeline gets its own binaries.

Processes with different pipelines share one real Redis server (127.0.0.1) and have separate local
cache dirs: each gets binaries made with its own pipelines, and a process that comes back to a
pipeline gets a remote hit (its local dir is empty, so the binary can only come from Redis).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tritonx_redis

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, sys
from pathlib import Path
import triton, tritonx
import tritonx_stress as stress

names, kernels_dir = json.loads(sys.argv[1]), Path(sys.argv[2])
ps = stress.pipelines()
kernel = stress.twin_kernels(kernels_dir, 1)[0]
hits = []
triton.knobs.compilation.listener = lambda *, cache_hit, **_: hits.append(cache_hit)
with tritonx.activate(*(ps[n] for n in names)) if names else open(__file__):
    k = tritonx.compile_for(stress.TARGET, kernel, stress.SIGNATURE, {"N": 64})
print("@@remote@@" + json.dumps({"marks": sorted(stress.marks(k.asm["ptx"])), "hit": hits[-1],
                                 "manager": type(triton.knobs.cache.manager_class).__name__,
                                 "local": [p.name for p in Path(triton.knobs.cache.dir).glob("*")]}))
"""


@pytest.fixture(scope="module")
def redis_server():
    yield from tritonx_redis.redis_server()


def _compile_in_process(tmp_path: Path, server, names: list[str], local: str, namespace: str) -> dict:
    env = dict(os.environ, TRITONX_PLUGINS="none", TRITON_CACHE_DIR=str(tmp_path / local),
               PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]))
    env.update(server.environment(namespace))
    code_file = tmp_path / "child.py"
    code_file.write_text(CHILD)
    done = subprocess.run([sys.executable, str(code_file), json.dumps(names), str(tmp_path / "kernels")],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("@@remote@@")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("@@remote@@"):])


def test_processes_with_different_pipelines_share_one_redis(tmp_path, redis_server):
    ns = os.urandom(6).hex()
    a = _compile_in_process(tmp_path, redis_server, ["A"], "local-a", ns)
    b = _compile_in_process(tmp_path, redis_server, ["B"], "local-b", ns)
    stock = _compile_in_process(tmp_path, redis_server, [], "local-stock", ns)
    a_again = _compile_in_process(tmp_path, redis_server, ["A"], "local-a2", ns)
    both = _compile_in_process(tmp_path, redis_server, ["A", "B"], "local-ab", ns)
    assert a["marks"] == ["A"] and not a["hit"]
    assert b["marks"] == ["B"] and not b["hit"]  # not A's binary, although the kernel and options are the same
    assert stock["marks"] == [] and not stock["hit"]
    assert both["marks"] == ["A", "B"] and not both["hit"]
    assert a_again["marks"] == ["A"] and a_again["hit"]  # a remote hit: its own local dir started empty
    stock_again = _compile_in_process(tmp_path, redis_server, [], "local-stock2", ns)
    assert stock_again["marks"] == [] and stock_again["hit"]


@pytest.mark.slow
def test_stress_over_redis_in_several_processes(tmp_path, redis_server):
    """Three processes, 600 compiles each under toggles and binds, separate local dirs, one Redis."""
    import tritonx_stress as stress

    kernels = tmp_path / "kernels"
    stress.twin_kernels(kernels)
    env = dict(os.environ, TRITONX_PLUGINS="none")
    env.update(redis_server.environment(os.urandom(6).hex()))
    procs, outs, dirs = [], [], []
    for i in range(3):
        out, local = tmp_path / f"run{i}.json", tmp_path / f"local{i}"
        outs.append(out)
        dirs.append(local)
        command = [sys.executable, str(HERE / "tritonx_stress.py"), "run", "--cache", str(local), "--kernels",
                   str(kernels), "--compiles", "600", "--seed", str(200 + i), "--out", str(out)]
        procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=3600)
        assert p.returncode == 0, err[-3000:]
    runs = [json.loads(o.read_text()) for o in outs]
    assert sum(r["compiles"] for r in runs) == 1800 and all(r["mismatches"] == [] and not r["errors"] for r in runs)
    for local in [*dirs, tmp_path / "fresh-local"]:  # each local dir, then an empty one served by Redis only
        command = [sys.executable, str(HERE / "tritonx_stress.py"), "verify", "--cache", str(local), "--kernels",
                   str(kernels), "--keys", *map(str, outs)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800, check=False)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("@@stress@@")]
        assert done.returncode == 0 and lines, done.stderr[-3000:]
        checked = json.loads(lines[-1][len("@@stress@@"):])
        assert checked["mismatches"] == [] and checked["hits"] > 0
