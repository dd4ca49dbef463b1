"""Every GEMM kernel configuration for the skinny LLM shapes, timed beside cuBLAS in one process on the H200.

Why: ``utlx.matmul`` picks one winner per shape, and ``tools/bench/gemm.py`` reports only that winner; to
decide which configurations a skinny problem should offer (issue 13: >= 0.95x cuBLAS at M = 16, 128, 512,
N = K = 8192), the whole field has to be seen, including configurations the tuner would drop
(:data:`EXTRA`). Each candidate is compiled in parallel worker processes, checked against a float32
reference on fresh random data, then timed the way gemm.py's headline is: ``do_bench`` (median) of
allocating calls through the bound launcher, back to back, cuBLAS (``torch.matmul``) in the same rounds.

``--power``: also run cuBLAS and one utlx kernel for a few seconds each at 4096^3 while ``nvidia-smi`` samples
SM clock and power, to say whether these GEMMs run at the power limit.

``--big``: also the 8 regular shapes, with :data:`EXTRA_BIG` (the cooperative kernel in other tile orders, the
2-CTA cluster kernel sharing B or A). ``--families``: time only those kernel families beside cuBLAS.

Usage: ``python tools/device/skinny_sweep.py [--shapes M,N,K ...] [--big] [--dtypes fp16 bf16] [--rounds 3]
[--power]``.
Not a test and not the headline benchmark.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import functools
import json
import math
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time

SHAPES = [(16, 8192, 8192), (128, 8192, 8192), (512, 8192, 8192)]
BIG_SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024),
              (4096, 16384, 4096), (16384, 4096, 4096), (1024, 16384, 8192), (8192, 8192, 16384)]

def _cfg(family: str, bm: int, bn: int, bk: int, stages: int, split_k: int = 0, group_m: int = 8,
         subtile: int = 1, grid: str = "tiles", share_b: bool = False) -> tuple[str, dict[str, int], int, str]:
    """One configuration as (family, constexprs, num_warps, grid mode); one consumer warpgroup's num_warps."""
    const = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group_m,
             "NUM_STAGES": stages}
    if split_k:
        const["SPLIT_K"] = split_k
    if subtile != 1:
        const["EPILOGUE_SUBTILE"] = subtile
    if share_b:
        const["SHARE_B"] = 1
    return family, const, 4, grid


#: Configurations outside the candidate lists, tried directly on the skinny shapes.
EXTRA = [
    _cfg("tma_splitk", 64, 128, 64, 8, 2),
    _cfg("tma_splitk", 64, 256, 128, 2, 4),
    _cfg("tma_splitk", 64, 128, 256, 2, 2),
    _cfg("ws_persistent", 128, 64, 128, 4, grid="persistent"),
    # two programs per SM (<= 114 KB each), twice the slices: one program's loads overlap the other's reduction
    _cfg("tma_splitk", 64, 128, 128, 2, 2),
    _cfg("tma_splitk", 128, 64, 128, 2, 2),
    _cfg("tma_splitk", 64, 256, 64, 2, 8),
    # three programs per SM (<= 76 KB each)
    _cfg("tma_splitk", 64, 128, 64, 2, 4),
    _cfg("tma_splitk", 64, 128, 64, 2, 6),
    _cfg("tma_splitk", 64, 64, 128, 2, 3),
    _cfg("tma_splitk", 64, 64, 128, 3, 2),
]

#: For the 8 regular shapes (``--big``): the cooperative kernel in other tile orders (L2 reuse).
EXTRA_BIG = [_cfg("ws_persistent", 128, 256, 64, 3, group_m=4, grid="persistent"),
             _cfg("ws_persistent", 128, 256, 64, 3, group_m=16, grid="persistent"),
             _cfg("ws_persistent", 128, 256, 64, 4, group_m=16, subtile=4, grid="persistent"),
             _cfg("ws_persistent", 128, 256, 64, 3, group_m=32, grid="persistent"),
             # 2-CTA clusters (not utlx.matmul candidates): B shared by multicast (each CTA pulls 32 KB of a
             # 48 KB stage from L2), and A shared on 256x128 tiles, where A is the larger operand
             _cfg("ws_cluster", 128, 256, 64, 3, grid="persistent", share_b=True),
             _cfg("ws_cluster", 128, 256, 64, 3, group_m=16, grid="persistent", share_b=True),
             _cfg("ws_cluster", 128, 256, 64, 4, subtile=4, grid="persistent", share_b=True),
             _cfg("ws_cluster", 256, 128, 64, 3, grid="persistent")]


def _torch_dtype(name: str):
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]


def _candidates(M: int, N: int, K: int, sms: int, families: list[str] | None = None):
    import importlib

    mm = importlib.import_module("utlx.matmul")
    space = mm.for_problem(mm.candidates("hopper", True, shape=(M, N, K)), M, N, sms, K)
    if not mm.is_skinny(M, N, K):  # the families that win there (docs/benchmarks.md)
        space = [c for c in space if c.family in ("ws_persistent", "ws_pingpong", "tma_streamk")
                 or (c.family == "tma_persistent" and c.grid_mode == "persistent" and c.config["BLOCK_SIZE_N"] == 256)]
    seen = {c.id for c in space}
    for family, const, nw, grid in EXTRA if mm.is_skinny(M, N, K) else EXTRA_BIG:
        cand = mm.Candidate(family, tuple(sorted(const.items())), nw, grid)
        if cand.id not in seen and (cand.smem_bytes() or 0) <= mm.SMEM_LIMIT:
            seen.add(cand.id)
            space.append(cand)
    return [c for c in space if c.family in families] if families else space


def _compile_chunk(chunk: list[tuple]) -> list[str]:
    """Worker: compile (no launch) each (dtype, shape, family, constexprs, num_warps, grid) of the chunk."""
    import importlib

    import torch

    mm = importlib.import_module("utlx.matmul")
    errors = []
    for dtype, (M, N, K), family, const, nw, grid in chunk:
        a = torch.empty(M, K, device="cuda", dtype=_torch_dtype(dtype))
        b = torch.empty(K, N, device="cuda", dtype=_torch_dtype(dtype))
        errors += mm.precompile(a, b, [mm.Candidate(family, const, nw, grid)])
    return errors


def _power_probe(dtype: str, seconds: float) -> dict:
    """SM clock and board power while cuBLAS, then utlx.matmul, run back to back at 4096^3."""
    import torch
    import utlx

    a = torch.randn(4096, 4096, device="cuda", dtype=_torch_dtype(dtype))
    b = torch.randn(4096, 4096, device="cuda", dtype=_torch_dtype(dtype))
    utlx.matmul(a, b)
    out = {}
    for name, fn in (("cuBLAS", lambda: torch.matmul(a, b)), ("utlx.matmul", lambda: utlx.matmul(a, b))):
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active",
                                "--format=csv,noheader,nounits", "-lms", "100"], stdout=subprocess.PIPE, text=True)
        end = time.monotonic() + seconds
        calls = 0
        start = time.perf_counter()
        while time.monotonic() < end:
            for _ in range(50):
                fn()
            calls += 50
            torch.cuda.synchronize()
        ms = (time.perf_counter() - start) * 1e3 / calls
        smi.terminate()
        rows = [line.split(", ") for line in smi.communicate()[0].splitlines() if line.count(",") == 2]
        rows = rows[len(rows) // 4:]  # past the ramp
        clocks = [float(r[0]) for r in rows]
        power = [float(r[1]) for r in rows]
        out[name] = {"tflops": 2 * 4096 ** 3 / ms / 1e9, "sm_mhz_median": statistics.median(clocks) if clocks else None,
                     "power_w_median": statistics.median(power) if power else None,
                     "throttle_reasons": sorted({r[2] for r in rows})}
        print(f"power {dtype} 4096^3 {name}: {out[name]}", flush=True)
    return out


def _sweep_shape(dtype: str, shape: tuple[int, int, int], cands: list, sms: int, rounds: int, rep_ms: float,
                 results: list[dict], wrong: list[str]) -> None:
    """Check every candidate on fresh data, then time the correct ones and cuBLAS in rotating rounds."""
    import torch
    from triton.testing import do_bench
    from utlx.gemm_launch import Problem

    M, N, K = shape
    g = torch.Generator(device="cuda").manual_seed(M * 7 + K)
    a = torch.randn((M, K), device="cuda", dtype=_torch_dtype(dtype), generator=g)
    b = torch.randn((K, N), device="cuda", dtype=_torch_dtype(dtype), generator=g)
    ref = a.float() @ b.float()
    tol = (2e-2 if dtype == "bf16" else 1e-2) * ref.abs().max().item() + 1e-2
    calls = {"cuBLAS": lambda: torch.matmul(a, b)}
    for cand in cands:
        try:
            launch = cand.bind(Problem.of(a, b, sms))
            err = (launch.matmul(a, b, a.data_ptr(), b.data_ptr()).float() - ref).abs().max().item()
        except Exception as exc:  # reported, the sweep goes on
            print(f"{dtype} {M}x{N}x{K} {cand.id}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            continue
        if not math.isfinite(err) or err > tol:
            wrong.append(f"{dtype} {M}x{N}x{K} {cand.id}: max abs error {err:.3g} > {tol:.3g}")
            print("WRONG", wrong[-1], flush=True)
            continue
        calls[cand.id] = functools.partial(launch.matmul, a, b, a.data_ptr(), b.data_ptr())
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(do_bench(calls[name], warmup=10, rep=rep_ms, return_mode="median"))
    flops = 2 * M * N * K
    base = statistics.median(times["cuBLAS"])
    print(f"\n{dtype} {M}x{N}x{K} (cuBLAS {flops / base / 1e9:.1f} TFLOPS):", flush=True)
    for ms, name in sorted((statistics.median(t), name) for name, t in times.items()):
        print(f"  {flops / ms / 1e9:7.1f} TFLOPS  {base / ms:6.3f}x  {name}", flush=True)
        results.append({"dtype": dtype, "M": M, "N": N, "K": K, "impl": name, "ms": ms, "ratio": base / ms})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="*", help="M,N,K triples (default: M = 16, 128, 512; N = K = 8192)")
    ap.add_argument("--dtypes", nargs="+", default=["fp16", "bf16"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=50.0)
    ap.add_argument("--big", action="store_true", help="also the 8 regular shapes of tools/bench/gemm.py")
    ap.add_argument("--families", nargs="*", help="time only these kernel families (and cuBLAS)")
    ap.add_argument("--power", action="store_true")
    ap.add_argument("--power-s", type=float, default=4.0)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes] if args.shapes else list(SHAPES)
    if args.big:
        shapes = list(dict.fromkeys(shapes + BIG_SHAPES))

    import torch
    import utlx  # noqa: F401  (activates the TLX plugin)

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    plan = {(d, s): _candidates(*s, sms, args.families) for d in args.dtypes for s in shapes}
    items = [(d, s, c.family, c.constexprs, c.num_warps, c.grid_mode) for (d, s), cs in plan.items() for c in cs]
    workers = max(1, min(14, len(items), (os.cpu_count() or 2) - 2))
    t0 = time.perf_counter()
    with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        errors = [e for part in pool.map(_compile_chunk, [items[i::workers] for i in range(workers)]) for e in part]
    print(f"compiled {len(items)} kernels in {time.perf_counter() - t0:.0f} s; {len(errors)} errors", flush=True)
    for e in errors:
        print("  compile error:", e, flush=True)

    results: list[dict] = []
    wrong: list[str] = []
    for (dtype, shape), cands in plan.items():
        _sweep_shape(dtype, shape, cands, sms, args.rounds, args.rep_ms, results, wrong)
        torch.cuda.empty_cache()

    power = {d: _power_probe(d, args.power_s) for d in args.dtypes} if args.power else {}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "skinny_sweep.json"), "w") as f:
        json.dump({"results": results, "wrong": wrong, "compile_errors": errors, "power": power,
                   "torch": torch.__version__, "device": torch.cuda.get_device_name()}, f, indent=1)
    if wrong:
        sys.exit("skinny_sweep: wrong results: " + "; ".join(wrong))


if __name__ == "__main__":
    main()
