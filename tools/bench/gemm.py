"""FP16 GEMM benchmark: cuBLAS, stock Triton, each utlx kernel and ``utlx.matmul``, side by side.

Usage: ``python tools/bench/gemm.py [--out DIR] [--shapes 2048,2048,2048 ...] [--quick]``.
Prints a TFLOPS table, writes ``gemm.json`` and (when matplotlib is installed) ``gemm.png`` to ``--out``.

Built to run blind once on a GPU machine: every implementation is wrapped so that a failure (compile
error, unsupported GPU) is recorded in the table and the JSON instead of stopping the run, and every
result is checked against cuBLAS before it is timed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024),
          (4096, 16384, 4096), (16384, 4096, 4096), (1024, 16384, 8192), (8192, 8192, 16384)]


def _stock_triton_kernel():
    """A stock ``tl.dot`` GEMM (Triton's tutorial structure), autotuned over Hopper-friendly configs."""
    import triton
    import triton.language as tl

    configs = [
        triton.Config({"BM": 128, "BN": 256, "BK": 64, "GM": 8}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 128, "BK": 64, "GM": 8}, num_stages=4, num_warps=4),
        triton.Config({"BM": 128, "BN": 256, "BK": 64, "GM": 8}, num_stages=4, num_warps=8),
        triton.Config({"BM": 256, "BN": 128, "BK": 64, "GM": 8}, num_stages=3, num_warps=8),
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def stock_matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr):
        pid = tl.program_id(0)
        npm = tl.cdiv(M, BM)
        npn = tl.cdiv(N, BN)
        group = GM * npn
        first_m = (pid // group) * GM
        gsm = min(npm - first_m, GM)
        pm = first_m + ((pid % group) % gsm)
        pn = (pid % group) // gsm
        rm = (pm * BM + tl.arange(0, BM)) % M
        rn = (pn * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
        b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
            b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BK * sak
            b_ptrs += BK * sbk
        cm = pm * BM + tl.arange(0, BM)
        cn = pn * BN + tl.arange(0, BN)
        tl.store(c_ptr + cm[:, None] * scm + cn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
                 mask=(cm[:, None] < M) & (cn[None, :] < N))

    def run(a, b, c):
        M, K = a.shape
        N = b.shape[1]
        grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)
        stock_matmul[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                           c.stride(0), c.stride(1))

    return run


def _utlx_kernel(module_name: str, kernel_name: str) -> Callable[[Any, Any, Any], None]:
    """Launch one shipped utlx kernel with the best of its own configurations (timed on first use)."""
    import importlib

    import triton
    from triton.testing import do_bench

    mod = importlib.import_module(f"utlx.kernels.{module_name}")
    kernel = getattr(mod, kernel_name)
    chosen: dict[tuple, tuple] = {}

    def launch(cfg, a, b, c):
        const, nw = cfg
        M, K = a.shape
        N = b.shape[1]
        grid = (triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"]),)
        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                     c.stride(1), num_warps=nw, **const)

    def run(a, b, c):
        key = (tuple(a.shape), tuple(b.shape))
        if key not in chosen:
            best, best_ms, errors = None, math.inf, []
            for cfg in mod.CONFIGS:
                try:
                    launch(cfg, a, b, c)
                    ms = do_bench(lambda cfg=cfg: launch(cfg, a, b, c), warmup=5, rep=25)
                except Exception as exc:  # config does not fit this GPU: try the next one
                    errors.append(f"{cfg}: {exc}"[:200])
                    continue
                if ms < best_ms:
                    best, best_ms = cfg, ms
            if best is None:
                raise RuntimeError("no configuration ran: " + " | ".join(errors))
            chosen[key] = best
        launch(chosen[key], a, b, c)

    run.chosen = chosen
    return run


def _utlx_tma() -> Callable[[Any, Any, Any], None]:
    """The persistent TMA kernel with the best of its configurations (timed on first use)."""
    from triton.testing import do_bench
    from utlx.kernels import hopper_tma_persistent as tp

    chosen: dict[tuple, int] = {}

    def run(a, b, c):
        key = (tuple(a.shape), tuple(b.shape))
        if key not in chosen:
            timings = {}
            for i in range(len(tp.CONFIGS)):
                try:
                    tp.launch(a, b, c, config=i)
                    timings[i] = do_bench(lambda i=i: tp.launch(a, b, c, config=i), warmup=5, rep=25)
                except Exception:
                    continue
            if not timings:
                raise RuntimeError("no TMA configuration ran")
            chosen[key] = min(timings, key=timings.get)
        tp.launch(a, b, c, config=chosen[key])

    return run


def implementations() -> dict[str, Callable[[], Callable[[Any, Any, Any], None]]]:
    """Name -> factory of ``run(a, b, c)``; factories are called lazily so one failing import is local."""

    def cublas():
        import torch

        return lambda a, b, c: torch.matmul(a, b, out=c)

    def utlx_matmul():
        from utlx.matmul import matmul

        # Includes allocating the output, as a user call does.
        return lambda a, b, c: matmul(a, b)

    return {
        "cuBLAS": cublas,
        "triton tl.dot": _stock_triton_kernel,
        "utlx pipelined (cp.async+wgmma)": lambda: _utlx_kernel("hopper_pipelined", "matmul_kernel_pipelined_hopper"),
        "utlx TMA persistent": _utlx_tma,
        "utlx register-staged": lambda: _utlx_kernel("amd_pipelined", "matmul_kernel_pipelined_amd"),
        "utlx.matmul": utlx_matmul,
    }


def bench_one(run: Callable, a: Any, b: Any, c: Any, ref: Any) -> dict[str, Any]:
    import torch
    from triton.testing import do_bench

    out = run(a, b, c)
    out = c if out is None else out
    torch.cuda.synchronize()
    err = (out.float() - ref.float()).abs().max().item()
    scale = ref.float().abs().max().item() + 1e-6
    if not math.isfinite(err) or err > 2e-2 * scale + 1e-2:
        return {"error": f"wrong result: max abs error {err:.3g} (reference max {scale:.3g})"}
    ms = do_bench(lambda: run(a, b, c), warmup=25, rep=100, return_mode="median")
    M, K = a.shape
    N = b.shape[1]
    return {"ms": ms, "tflops": 2.0 * M * N * K / (ms * 1e-3) / 1e12, "max_abs_err": err}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    parser.add_argument("--shapes", nargs="*", help="M,N,K triples (default: the 8 issue shapes)")
    parser.add_argument("--quick", action="store_true", help="first two shapes only")
    parser.add_argument("--only", nargs="*", help="implementation names to run (default: all)")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("gemm.py: no GPU; nothing to benchmark", file=sys.stderr)
        return 2
    try:
        import utlx.plugin

        utlx.plugin.ensure_active()
    except Exception:  # the utlx rows will record the failure
        traceback.print_exc()
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes] if args.shapes else SHAPES
    if args.quick:
        shapes = shapes[:2]
    impls = implementations()
    if args.only:
        impls = {k: v for k, v in impls.items() if k in args.only}
    runners: dict[str, Any] = {}
    for name, factory in impls.items():
        try:
            runners[name] = factory()
        except Exception as exc:
            runners[name] = exc

    import triton

    results: dict[str, Any] = {
        "device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
        "python": platform.python_version(), "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "rows": []}
    for M, N, K in shapes:
        torch.manual_seed(M + N + K)
        a = torch.randn((M, K), device="cuda", dtype=torch.float16)
        b = torch.randn((K, N), device="cuda", dtype=torch.float16)
        c = torch.empty((M, N), device="cuda", dtype=torch.float16)
        ref = torch.matmul(a, b)
        row: dict[str, Any] = {"M": M, "N": N, "K": K, "impls": {}}
        for name, run in runners.items():
            if isinstance(run, Exception):
                row["impls"][name] = {"error": f"setup failed: {type(run).__name__}: {run}"[:300]}
                continue
            try:
                row["impls"][name] = bench_one(run, a, b, c, ref)
            except Exception as exc:
                row["impls"][name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        if "utlx.matmul" in runners and not isinstance(runners["utlx.matmul"], Exception):
            try:
                from utlx.matmul import selected

                row["utlx.matmul selected"] = selected(a, b)
            except Exception as exc:
                row["utlx.matmul selected"] = f"error: {exc}"[:200]
        results["rows"].append(row)
        _print_row(row, list(runners))
        del a, b, c, ref
        torch.cuda.empty_cache()

    _summary(results)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gemm.json").write_text(json.dumps(results, indent=2))
    _plot(results, out / "gemm.png")
    print(f"wrote {out / 'gemm.json'}")
    return 0


def _print_row(row: dict, names: list[str]) -> None:
    if not getattr(_print_row, "header", False):
        print(f"{'M,N,K':>20} " + " ".join(f"{n[:22]:>22}" for n in names))
        _print_row.header = True
    cells = []
    for n in names:
        r = row["impls"].get(n, {})
        cells.append(f"{r['tflops']:22.1f}" if "tflops" in r else f"{'ERR':>22}")
    print(f"{row['M']},{row['N']},{row['K']:>6}".rjust(20) + " " + " ".join(cells), flush=True)
    for n in names:
        if "error" in row["impls"].get(n, {}):
            print(f"    {n}: {row['impls'][n]['error']}")


def _summary(results: dict) -> None:
    wins = 0
    for row in results["rows"]:
        u = row["impls"].get("utlx.matmul", {}).get("tflops")
        cb = row["impls"].get("cuBLAS", {}).get("tflops")
        if u is not None and cb is not None and u >= cb:
            wins += 1
    results["utlx_matmul_ge_cublas"] = wins
    print(f"utlx.matmul >= cuBLAS on {wins} of {len(results['rows'])} shapes")


def _plot(results: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        print("matplotlib not available: no plot")
        return
    rows = results["rows"]
    names = sorted({n for r in rows for n in r["impls"]})
    labels = [f"{r['M']}x{r['N']}x{r['K']}" for r in rows]
    width = 0.8 / max(1, len(names))
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(rows)), 5))
    for i, n in enumerate(names):
        vals = [r["impls"].get(n, {}).get("tflops", 0.0) for r in rows]
        ax.bar([x + i * width for x in range(len(rows))], vals, width, label=n)
    ax.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(rows))])
    ax.set_xticklabels(labels, rotation=30, ha="right")
    ax.set_ylabel("TFLOPS (fp16 in, fp32 acc)")
    ax.set_title(f"GEMM on {results['device']} (triton {results['triton']})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
