"""tritonx overhead: compile time (stock vs no-op pipeline), the no-argument hook call, launch latency.

    python tools/bench/overhead.py [--repeats 5] [--json out.json]

Compile time uses the six-kernel corpus of the core tests on cuda:90 (CPU only; Triton's cache is
bypassed), interleaving stock and no-op-pipeline compiles so drift hits both. The no-argument hook
call is what Triton makes on every launch (3.7+). Launch latency needs an NVIDIA GPU: a tiny kernel is
launched N times stock (before tritonx installs its hook) and then with a pipeline active. Without a GPU,
``--jit-path`` measures the same host path on the CPU: ``kernel.warmup`` of a cached kernel through a
stand-in driver (key computation, the hook call, the cache lookup: everything a launch does on the host but
the driver's launch call), in a fresh process for stock and one with tritonx active.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packages" / "core" / "tests"))


def launch_latency(n: int) -> dict[str, float] | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    import triton
    import triton.language as tl

    @triton.jit
    def tiny(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)

    import tritonx

    x = torch.zeros(128, device="cuda")

    def run() -> float:
        for _ in range(200):
            tiny[(1,)](x, BLOCK=128)
        torch.cuda.synchronize()
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                tiny[(1,)](x, BLOCK=128)
            torch.cuda.synchronize()
            best.append((time.perf_counter() - t0) / n * 1e6)
        return min(best)

    stock = run()
    with tritonx.activate(tritonx.Pipeline("noop-launch")):
        active = run()
    return {"stock_us": stock, "tritonx_active_us": active, "delta_us": active - stock}


def compile_times(repeats: int) -> dict[str, float]:
    import triton
    import tritonx
    from tritonx.integration.capture import divisible
    from tritonx_corpus import CORPUS

    def one(name: str) -> float:
        kernel, sig, consts, ndiv = CORPUS[name]
        opts = {"num_warps": 4} if name == "gluon" else None
        with triton.knobs.compilation.scope():
            triton.knobs.compilation.always_compile = True
            t0 = time.perf_counter()
            tritonx.compile_for("cuda:90", kernel, sig, consts, options=opts, attrs=divisible(ndiv))
            return time.perf_counter() - t0

    noop = tritonx.Pipeline("noop")
    # an edit that never matches: every stage goes through record-and-replay, output stays stock
    replay = tritonx.Pipeline("replay").disable("canonicalize", occurrence=99, required=False)
    for name in CORPUS:  # warm up imports and caches of the compiler itself
        one(name)
    stock_t, noop_t, replay_t = [], [], []
    for _ in range(repeats):
        stock_t.append(sum(one(n) for n in CORPUS))
        with tritonx.activate(noop):
            noop_t.append(sum(one(n) for n in CORPUS))
        with tritonx.activate(replay):
            replay_t.append(sum(one(n) for n in CORPUS))
    s, t, r = statistics.median(stock_t), statistics.median(noop_t), statistics.median(replay_t)
    return {"stock_s": s, "noop_pipeline_s": t, "overhead_pct": (t / s - 1) * 100,
            "replay_pipeline_s": r, "replay_overhead_pct": (r / s - 1) * 100}


def hook_call() -> dict[str, float]:
    import triton
    import tritonx
    from tritonx.runtime import current

    current().hook.ensure_installed()
    hook = triton.knobs.runtime.add_stages_inspection_hook
    n = 200_000
    idle = min(timeit.repeat(hook, number=n, repeat=5)) / n * 1e9
    with tritonx.activate(tritonx.Pipeline("a"), tritonx.Pipeline("b").disable("tritongpu-pipeline")):
        active = min(timeit.repeat(hook, number=n, repeat=5)) / n * 1e9
    return {"idle_ns": idle, "two_pipelines_active_ns": active}


def _stand_in_driver():
    """Enough of a CUDA driver for ``warmup`` on the CPU: the launch-path test's stand-in."""
    from cpu_stand_in_driver import CpuStandInDriver  # packages/core/tests (on sys.path above)

    return CpuStandInDriver()


def jit_path_us(mode: str, n: int) -> float:
    """Host cost of one cached ``kernel.warmup`` (us, best of 5) in this process: ``stock`` or ``tritonx``."""
    import torch
    import triton
    import triton.language as tl
    from triton.runtime import driver as driver_config

    driver_config.set_active(_stand_in_driver())

    @triton.jit
    def tiny(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)

    x = torch.empty(128)
    if mode == "tritonx":
        import tritonx

        tritonx.activate(tritonx.Pipeline("noop-launch"))
    tiny.warmup(x, BLOCK=128, grid=(1,))  # compile once
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            tiny.warmup(x, BLOCK=128, grid=(1,))
        best.append((time.perf_counter() - t0) / n * 1e6)
    return min(best)


def jit_path(n: int) -> dict[str, float]:
    """Stock and tritonx-active JIT host paths, each in its own fresh process (the hook cannot be unset)."""
    import subprocess

    out = {}
    for mode in ("stock", "tritonx"):
        proc = subprocess.run([sys.executable, __file__, "--jit-path-child", mode, "--launches", str(n)],
                              capture_output=True, text=True, check=True)
        out[f"{mode}_us"] = float(proc.stdout.strip().splitlines()[-1])
    out["delta_us"] = out["tritonx_us"] - out["stock_us"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--jit-path", action="store_true", help="only the CPU JIT-path measurement (no GPU needed)")
    ap.add_argument("--jit-path-child", choices=("stock", "tritonx"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.jit_path_child:
        print(jit_path_us(args.jit_path_child, args.launches))
        return 0
    if args.jit_path:
        r = jit_path(args.launches)
        print(f"JIT launch path on the host (cached kernel.warmup, stand-in driver): stock {r['stock_us']:.2f} us, "
              f"tritonx active {r['tritonx_us']:.2f} us, delta {r['delta_us']:+.2f} us")
        if args.json:
            args.json.write_text(json.dumps({"jit_path": r}, indent=1))
        return 0
    import triton
    import tritonx

    result: dict = {"triton": triton.__version__, "tritonx": tritonx.__version__}
    result["launch"] = launch_latency(args.launches)  # first: before tritonx installs its hook
    result["compile"] = compile_times(args.repeats)
    result["hook_call"] = hook_call()
    c, h, lat = result["compile"], result["hook_call"], result["launch"]
    print(f"triton {result['triton']}, tritonx {result['tritonx']}")
    print(f"compile corpus (cuda:90): stock {c['stock_s']:.3f}s, no-op pipeline {c['noop_pipeline_s']:.3f}s, "
          f"overhead {c['overhead_pct']:+.2f}%; record-and-replay pipeline {c['replay_pipeline_s']:.3f}s "
          f"({c['replay_overhead_pct']:+.2f}%)")
    print(f"no-argument hook call: {h['idle_ns']:.0f} ns idle, "
          f"{h['two_pipelines_active_ns']:.0f} ns with two pipelines")
    if lat:
        print(f"launch latency: stock {lat['stock_us']:.2f} us, tritonx active {lat['tritonx_active_us']:.2f} us, "
              f"delta {lat['delta_us']:+.2f} us")
    else:
        print("launch latency: no GPU here")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
