"""torch.compile(mode="max-autotune") GEMMs: stock Inductor vs Inductor + utlx's GEMM template, in one process.

Usage (on a Hopper GPU)::

    python tools/bench/bench_inductor_gemm.py [--mode allow|force] [--dtype bf16|fp16] [--iters N] [--only NAME ...]
    python tools/bench/bench_inductor_gemm.py --dry-run     # CPU: the whole flow on small shapes, eager, no GPU

Workloads: the 8 GEMM shapes of ``tools/bench/gemm.py`` (``a @ b``), linear + bias + GELU 16384x4096x4096 (the
issue-31 case: stock max-autotune picks cuBLAS plus a separate epilogue kernel), the same linear without bias or
GELU (to tell the bias epilogue's cost from the shape's), and a SwiGLU MLP
(``down(silu(gate(x)) * up(x))``, 8192 tokens, 4096 -> 11008 -> 4096). Each is compiled twice, with
``utlx.inductor`` off (stock) and on (``--mode``, ``allow`` by default: utlx's choices compete in Inductor's
autotuning, which keeps cuBLAS where it wins), both outputs are checked against the function run eagerly in
float32, and each is timed in a plain loop (host cost included): the median of 5 runs of ``--iters`` calls.
speedup = stock time / utlx time; the table ends with the geomean and ``utlx.inductor.stats`` (which GEMMs got
the utlx choice and how many times autotuning picked it).

``--dry-run`` runs the same flow on the CPU (shapes divided by 64, the functions run eagerly instead of compiled,
float32): what the tests exercise; its times mean nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")  # the utlx compile must not reuse the stock graph
os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")

import torch
import torch.nn.functional as F

#: tools/bench/gemm.py's SHAPES (M, N, K), repeated here so this script runs on its own.
GEMM_SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024),
               (4096, 16384, 4096), (16384, 4096, 4096), (1024, 16384, 8192), (8192, 8192, 16384)]
LINEAR_GELU = (16384, 4096, 4096)  # (tokens, out features, in features)
SWIGLU = (8192, 4096, 11008)  # (tokens, model dim, hidden dim)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
TOLERANCE = {"bf16": 2e-2, "fp16": 1e-2, "fp32": 1e-4}  # of the reference's largest magnitude


@dataclass(frozen=True)
class Workload:
    """One benchmark row: ``make(dtype, device, scale)`` returns the function and its inputs."""

    name: str
    flops: int
    make: Callable[[torch.dtype, str, int], tuple[Callable[..., Any], tuple[Any, ...]]]


def _rand(shape: Sequence[int], dtype: torch.dtype, device: str, gen: torch.Generator) -> torch.Tensor:
    return (torch.randn(*shape, generator=gen, device=device) / shape[-1] ** 0.25).to(dtype)


def _gen(device: str) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(int(time.time_ns() % 2**31))  # fresh data every run


def _mm_workload(m: int, n: int, k: int) -> Workload:
    def make(dtype, device, scale):
        g = _gen(device)
        return (lambda a, b: a @ b), (_rand((m // scale, k // scale), dtype, device, g),
                                      _rand((k // scale, n // scale), dtype, device, g))

    return Workload(f"mm {m}x{n}x{k}", 2 * m * n * k, make)


def _linear_gelu_workload(bias: bool = True) -> Workload:
    """linear + bias + GELU; with ``bias=False`` the bare linear of the same shape and layout (the weight read as a
    column-major B), which tells a slow bias epilogue from a slow shape (2026-12-04: utlx's addmm ran at 645
    TFLOPS here against 801 for its mm on the SwiGLU's shapes of the same layout)."""
    m, n, k = LINEAR_GELU

    def make(dtype, device, scale):
        g = _gen(device)
        x, w, b = (_rand(s, dtype, device, g) for s in ((m // scale, k // scale), (n // scale, k // scale),
                                                          (n // scale,)))
        if not bias:
            return (lambda x, w: F.linear(x, w)), (x, w)
        return (lambda x, w, b: F.gelu(F.linear(x, w, b))), (x, w, b)

    name = f"linear+bias+GELU {m}x{n}x{k}" if bias else f"linear (no bias) {m}x{n}x{k}"
    return Workload(name, 2 * m * n * k, make)


def _swiglu_workload() -> Workload:
    m, d, h = SWIGLU

    def make(dtype, device, scale):
        g = _gen(device)
        x = _rand((m // scale, d // scale), dtype, device, g)
        wg, wu = (_rand((h // scale, d // scale), dtype, device, g) for _ in range(2))
        wd = _rand((d // scale, h // scale), dtype, device, g)
        return (lambda x, wg, wu, wd: F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)), (x, wg, wu, wd)

    return Workload(f"SwiGLU MLP {m}x{d}x{h}", 3 * 2 * m * d * h, make)


def workloads() -> list[Workload]:
    return [*(_mm_workload(*s) for s in GEMM_SHAPES), _linear_gelu_workload(bias=False), _linear_gelu_workload(),
            _swiglu_workload()]


def compiled(fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
    """``fn`` compiled with max-autotune, utlx's GEMM template ``mode`` (``off`` = stock Inductor)."""
    import utlx.inductor

    torch._dynamo.reset()
    if mode == "off":
        utlx.inductor.disable()
    else:
        utlx.inductor.enable(mode)
    return torch.compile(fn, mode="max-autotune", fullgraph=True, dynamic=False)


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return (out.float() - ref).abs().max().item() / (ref.abs().max().item() + 1e-6)


def timed(fn: Callable[..., Any], args: tuple[Any, ...], iters: int, sync: Callable[[], None]) -> float:
    """Seconds per call: the median of 5 runs of ``iters`` back-to-back calls (host cost included)."""
    for _ in range(3):
        fn(*args)
    runs = []
    for _ in range(5):
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*args)
        sync()
        runs.append((time.perf_counter() - t0) / iters)
    return statistics.median(runs)


def run_workload(w: Workload, dtype: str, mode: str, iters: int, *, device: str = "cuda", scale: int = 1,
                 build: Callable[[Callable[..., Any], str], Callable[..., Any]] = compiled,
                 sync: Callable[[], None] | None = None) -> dict[str, Any]:
    """One row: both variants' error vs float32 eager and time (``error`` names what failed, if anything)."""
    sync = sync or (torch.cuda.synchronize if device == "cuda" else (lambda: None))
    fn, args = w.make(DTYPES.get(dtype, torch.float32), device, scale)
    ref = fn(*(a.float() for a in args))
    row: dict[str, Any] = {"name": w.name, "dtype": dtype, "flops": w.flops // scale ** 3}
    for variant in ("off", mode):
        key = "stock" if variant == "off" else "utlx"
        try:
            f = build(fn, variant)
            err = relative_error(f(*args), ref)
            row[f"{key}_err"] = err
            if not math.isfinite(err) or err > TOLERANCE[dtype]:
                row["error"] = f"{key}: relative error {err:.3g} > {TOLERANCE[dtype]}"
            row[f"{key}_s"] = timed(f, args, iters, sync)
        except Exception as e:  # one line in the table, then the next row
            row["error"] = f"{key}: {type(e).__name__}: {str(e)[:200]}"
            return row
    row["speedup"] = row["stock_s"] / row["utlx_s"]
    return row


def geomean(values: Sequence[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| workload | dtype | stock ms | stock TFLOPS | utlx ms | utlx TFLOPS | speedup | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [r["name"], r["dtype"]]
        for key in ("stock", "utlx"):
            s = r.get(f"{key}_s")
            cells += ([f"{s * 1e3:.3f}", f"{r['flops'] / s / 1e12:.1f}"] if s else ["-", "-"])
        cells += [f"{r['speedup']:.3f}x" if "speedup" in r else "-", r.get("error", "")]
        lines.append("| " + " | ".join(cells) + " |")
    speedups = [r["speedup"] for r in rows if "speedup" in r]
    lines.append(f"\ngeomean speedup {geomean(speedups):.3f}x over {len(speedups)} of {len(rows)} rows"
                 + (f", min {min(speedups):.3f}x" if speedups else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="allow", choices=("allow", "force"))
    ap.add_argument("--dtype", default="bf16", choices=tuple(DTYPES))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--only", nargs="*", help="workloads whose name contains one of these words")
    ap.add_argument("--dry-run", action="store_true", help="CPU, eager, shapes / 64, float32: the flow only")
    args = ap.parse_args(argv)
    todo = [w for w in workloads() if not args.only or any(word in w.name for word in args.only)]
    if args.dry_run:
        rows = [run_workload(w, "fp32", args.mode, 2, device="cpu", scale=64, build=lambda fn, mode: fn)
                for w in todo]
    else:
        import triton
        import utlx.inductor

        print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}, "
              f"mode {args.mode}, {args.dtype}", flush=True)
        rows = []
        for w in todo:
            rows.append(run_workload(w, args.dtype, args.mode, args.iters))
            print(markdown(rows[-1:]).splitlines()[2], flush=True)
        print(f"utlx.inductor stats: {utlx.inductor.stats['gemm']}")
    print(markdown(rows), flush=True)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
