"""FP16 GEMM benchmark: cuBLAS, stock Triton, each utlx kernel and ``utlx.matmul``, side by side.

Usage: ``python tools/bench/gemm.py [--out DIR] [--shapes M,N,K ...] [--sizes N ...] [--quick]
[--only NAME ...] [--budget-s S] [--rounds R] [--rep-ms MS] [--reuse-tuning]``.
Prints a TFLOPS table, the kernel ``utlx.matmul`` chose per shape, how many shapes ``utlx.matmul`` >=
cuBLAS and the geomean ratio; writes ``gemm.json`` and (when matplotlib is installed) ``gemm.png``.

Built to run blind once on a GPU machine:

* per shape, every implementation is *prepared* first (its autotuning for that shape, then a
  correctness check against cuBLAS); only then is anything timed, so tuning never enters a measurement;
* timing is ``do_bench`` (median) in ``--rounds`` rounds whose order rotates, and each implementation's
  number is the median over rounds: slow drift (clocks, temperature) hits every row alike instead of
  whichever ran last;
* a failure of one implementation (compile error, unsupported GPU, wrong result) is recorded in the table
  and the JSON and the run goes on; ``--budget-s`` (default 480) bounds the whole run: shapes that
  would not fit are reported as skipped. ``utlx.matmul`` tunes into a private cache (fresh choices every
  run) unless ``--reuse-tuning``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024),
          (4096, 16384, 4096), (16384, 4096, 4096), (1024, 16384, 8192), (8192, 8192, 16384)]

Run = Callable[[Any, Any, Any], Any]


@dataclass
class Impl:
    """One benchmarked implementation: ``prepare`` tunes for a shape (untimed), ``run`` is timed."""

    name: str
    run: Run
    prepare: Callable[[Any, Any, Any, float], dict[str, Any]] = field(default=lambda a, b, c, budget: {})


def _bench(fn: Callable[[], Any], rep_ms: float) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=max(5.0, rep_ms / 4), rep=rep_ms, return_mode="median"))


def _stock_triton() -> Impl:
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

    def prepare(a, b, c, budget):
        run(a, b, c)  # the autotuner times its configs on the first call for this key
        best = getattr(stock_matmul, "best_config", None)
        return {"config": str(best) if best is not None else None}

    return Impl("triton tl.dot", run, prepare)


def _config_tuned(name: str, configs: list, make_launch: Callable[[Any, Any, Any], Callable]) -> Impl:
    """An implementation that times each of ``configs`` on the shape (in ``prepare``) and runs the best.

    ``make_launch(cfg, M, N)`` returns ``run(a, b, c)`` for that configuration.
    """
    chosen: dict[tuple, Run] = {}

    def prepare(a, b, c, budget):
        M, K = a.shape
        N = b.shape[1]
        start = time.monotonic()
        timings, errors = {}, {}
        for i, cfg in enumerate(configs):
            if timings and time.monotonic() - start > budget:
                errors[i] = "skipped: budget"
                continue
            try:
                launch = make_launch(cfg, M, N)
                launch(a, b, c)
                timings[i] = (_bench(lambda launch=launch: launch(a, b, c), 30.0), launch)
            except Exception as exc:  # config does not fit this GPU/shape: try the next one
                errors[i] = f"{type(exc).__name__}: {exc}"[:200]
        if not timings:
            raise RuntimeError("no configuration ran: " + " | ".join(errors.values()))
        best = min(timings, key=lambda i: timings[i][0])
        chosen[(M, N, K)] = timings[best][1]
        return {"config": str(configs[best]), "config_ms": {str(i): t for i, (t, _) in timings.items()},
                "config_errors": errors}

    def run(a, b, c):
        chosen[(a.shape[0], b.shape[1], a.shape[1])](a, b, c)

    return Impl(name, run, prepare)


def _pointer_kernel(module_name: str, kernel_name: str, label: str) -> Impl:
    import importlib

    import triton

    mod = importlib.import_module(f"utlx.kernels.{module_name}")
    kernel = getattr(mod, kernel_name)

    def make_launch(cfg, M, N):
        const, nw = cfg
        grid = (triton.cdiv(M, const["BLOCK_SIZE_M"]) * triton.cdiv(N, const["BLOCK_SIZE_N"]),)

        def launch(a, b, c):
            kernel[grid](a, b, c, a.shape[0], b.shape[1], a.shape[1], a.stride(0), a.stride(1), b.stride(0),
                         b.stride(1), c.stride(0), c.stride(1), num_warps=nw, **const)

        return launch

    return _config_tuned(label, list(mod.CONFIGS), make_launch)


def _utlx_tma() -> Impl:
    """The persistent TMA kernel with the best of its (persistent-grid) configurations."""
    import torch
    from utlx.kernels import hopper_tma_persistent as tp

    def make_launch(cfg, M, N):
        sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        return tp.make_launcher(M, N, cfg, sms, "persistent")

    return _config_tuned("utlx TMA persistent", list(tp.CONFIGS), make_launch)


def _utlx_matmul(force: bool) -> Impl:
    import importlib

    mm = importlib.import_module("utlx.matmul")  # the module (``utlx.matmul`` the attribute is the function)

    def prepare(a, b, c, budget):
        report = mm.tune(a, b, force=force, budget_s=budget)
        return {"config": report.winner.id if report.winner else None, "tuning": report.to_dict()}

    # Includes allocating the output and the per-call checks, as a user call does.
    return Impl("utlx.matmul", lambda a, b, c: mm.matmul(a, b), prepare)


def implementations(force_tuning: bool = True) -> dict[str, Callable[[], Impl]]:
    """Name -> factory; factories are called lazily so one failing import stays local."""

    def cublas():
        import torch

        return Impl("cuBLAS", lambda a, b, c: torch.matmul(a, b, out=c))

    return {
        "cuBLAS": cublas,
        "triton tl.dot": _stock_triton,
        "utlx pipelined (cp.async+wgmma)": lambda: _pointer_kernel(
            "hopper_pipelined", "matmul_kernel_pipelined_hopper", "utlx pipelined (cp.async+wgmma)"),
        "utlx TMA persistent": _utlx_tma,
        "utlx register-staged": lambda: _pointer_kernel(
            "amd_pipelined", "matmul_kernel_pipelined_amd", "utlx register-staged"),
        "utlx.matmul": lambda: _utlx_matmul(force_tuning),
    }


def check_result(out: Any, ref: Any) -> str | None:
    """None when ``out`` matches the cuBLAS reference, else what is wrong."""
    err = (out.float() - ref.float()).abs().max().item()
    scale = ref.float().abs().max().item() + 1e-6
    if not math.isfinite(err) or err > 2e-2 * scale + 1e-2:
        return f"wrong result: max abs error {err:.3g} (reference max {scale:.3g})"
    return None


def bench_shape(impls: dict[str, Impl | Exception], M: int, N: int, K: int, *, rounds: int, rep_ms: float,
                tune_budget_s: float) -> dict[str, Any]:
    """Prepare (tune + check) every implementation for one shape, then time them in rotating rounds."""
    import torch

    torch.manual_seed(M + N + K)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    ref = torch.matmul(a, b)
    row: dict[str, Any] = {"M": M, "N": N, "K": K, "impls": {}}
    ready: list[Impl] = []
    for name, impl in impls.items():
        cell: dict[str, Any] = {}
        row["impls"][name] = cell
        if isinstance(impl, Exception):
            cell["error"] = f"setup failed: {type(impl).__name__}: {impl}"[:300]
            continue
        t0 = time.monotonic()
        try:
            cell.update(impl.prepare(a, b, c, tune_budget_s))
            c.fill_(float("nan"))
            out = impl.run(a, b, c)
            torch.cuda.synchronize()
            problem = check_result(c if out is None else out, ref)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"[:300]
            traceback.print_exc()
        cell["prepare_s"] = round(time.monotonic() - t0, 2)
        if problem:
            cell["error"] = problem
        else:
            ready.append(impl)

    samples: dict[str, list[float]] = {impl.name: [] for impl in ready}
    for r in range(rounds):
        order = ready[r % len(ready):] + ready[:r % len(ready)] if ready else []
        for impl in order:
            try:
                samples[impl.name].append(_bench(lambda impl=impl: impl.run(a, b, c), rep_ms))
            except Exception as exc:
                row["impls"][impl.name]["error"] = f"timing: {type(exc).__name__}: {exc}"[:300]
    for impl in ready:  # host cost per call (launch-bound small shapes show it): 50 calls, no sync inside
        try:
            t0 = time.perf_counter()
            for _ in range(50):
                impl.run(a, b, c)
            row["impls"][impl.name]["host_us_per_call"] = round((time.perf_counter() - t0) / 50 * 1e6, 1)
            torch.cuda.synchronize()
        except Exception as exc:
            row["impls"][impl.name]["host_us_per_call"] = f"{type(exc).__name__}: {exc}"[:100]
    flops = 2.0 * M * N * K
    for name, ms_list in samples.items():
        cell = row["impls"][name]
        if ms_list and "error" not in cell:
            ms = statistics.median(ms_list)
            cell.update(ms=ms, tflops=flops / (ms * 1e-3) / 1e12, round_ms=ms_list)
    return row


def summarize(rows: list[dict[str, Any]], subject: str = "utlx.matmul", baseline: str = "cuBLAS") -> dict[str, Any]:
    """Shapes where ``subject`` >= ``baseline`` and the geomean of their TFLOPS ratio (measured shapes only)."""
    ratios = []
    wins = 0
    for row in rows:
        u = row.get("impls", {}).get(subject, {}).get("tflops")
        cb = row.get("impls", {}).get(baseline, {}).get("tflops")
        if u is None or cb is None:
            continue
        ratios.append(u / cb)
        wins += u >= cb
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None
    return {"wins": wins, "compared": len(ratios), "shapes": len(rows), "geomean_ratio": geo}


def _parse_shapes(args: argparse.Namespace) -> list[tuple[int, int, int]]:
    shapes: list[tuple[int, int, int]] = []
    for s in args.shapes or []:
        parts = [int(x) for x in s.replace("x", ",").split(",")]
        if len(parts) != 3:
            raise SystemExit(f"gemm.py: --shapes takes M,N,K triples, got {s!r}")
        shapes.append((parts[0], parts[1], parts[2]))
    shapes += [(n, n, n) for n in (args.sizes or [])]
    shapes = shapes or list(SHAPES)
    return shapes[:2] if args.quick else shapes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("TRITONX_BENCH_OUT") or os.environ.get("OUT") or "bench-out")
    parser.add_argument("--shapes", nargs="*", help="M,N,K triples (default: the 8 issue shapes)")
    parser.add_argument("--sizes", nargs="*", type=int, help="square sizes N (N,N,N), added to --shapes")
    parser.add_argument("--quick", action="store_true", help="first two shapes only")
    parser.add_argument("--only", nargs="*", help="implementation names to run (default: all; cuBLAS always)")
    parser.add_argument("--budget-s", type=float, default=480.0, help="whole-run time budget (default 480)")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds per shape (default 3)")
    parser.add_argument("--rep-ms", type=float, default=100.0, help="do_bench rep per round, ms (default 100)")
    parser.add_argument("--reuse-tuning", action="store_true",
                        help="let utlx.matmul use its on-disk tuning cache (default: tune afresh, private cache)")
    args = parser.parse_args(argv)
    started = time.monotonic()

    import torch

    if not torch.cuda.is_available():
        print("gemm.py: no GPU; nothing to benchmark", file=sys.stderr)
        return 2
    if not args.reuse_tuning:
        os.environ["UTLX_MATMUL_CACHE"] = os.path.join(tempfile.mkdtemp(prefix="utlx-gemm-"), "tuning.json")
    try:
        import utlx.plugin

        utlx.plugin.ensure_active()
    except Exception:  # the utlx rows will record the failure
        traceback.print_exc()
    shapes = _parse_shapes(args)
    factories = implementations(force_tuning=not args.reuse_tuning)
    if args.only:
        factories = {k: v for k, v in factories.items() if k in args.only or k == "cuBLAS"}
    impls: dict[str, Impl | Exception] = {}
    for name, factory in factories.items():
        try:
            impls[name] = factory()
        except Exception as exc:
            impls[name] = exc

    import triton

    results: dict[str, Any] = {
        "device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
        "python": platform.python_version(), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "method": f"per shape: tune+check every implementation, then {args.rounds} rotating rounds of "
                  f"do_bench(rep={args.rep_ms} ms, median); TFLOPS from the median over rounds",
        "rows": []}
    names = list(impls)
    shape_times: list[float] = []
    for i, (M, N, K) in enumerate(shapes):
        elapsed = time.monotonic() - started
        left = args.budget_s - elapsed
        expect = max(shape_times) if shape_times else 0.0
        if left <= 0 or (shape_times and expect > left):
            results["rows"].append({"M": M, "N": N, "K": K, "skipped": f"budget: {elapsed:.0f} s of {args.budget_s:.0f}"
                                    f" used, a shape took up to {expect:.0f} s", "impls": {}})
            print(f"{M},{N},{K}: skipped (budget)", flush=True)
            continue
        tune_budget = max(15.0, min(120.0, 0.5 * left / (len(shapes) - i)))
        t0 = time.monotonic()
        try:
            row = bench_shape(impls, M, N, K, rounds=args.rounds, rep_ms=args.rep_ms, tune_budget_s=tune_budget)
        except Exception as exc:  # e.g. out of memory allocating the inputs
            traceback.print_exc()
            row = {"M": M, "N": N, "K": K, "error": f"{type(exc).__name__}: {exc}"[:300], "impls": {}}
        torch.cuda.empty_cache()  # the shape's tensors are gone with bench_shape's frame
        row["seconds"] = round(time.monotonic() - t0, 1)
        shape_times.append(row["seconds"])
        results["rows"].append(row)
        _print_row(row, names)

    summary = summarize(results["rows"])
    results["summary"] = summary
    results["utlx_matmul_ge_cublas"] = summary["wins"]
    results["elapsed_s"] = round(time.monotonic() - started, 1)
    geo = summary["geomean_ratio"]
    print(f"utlx.matmul >= cuBLAS on {summary['wins']} of {summary['shapes']} shapes "
          f"({summary['compared']} measured); geomean utlx.matmul/cuBLAS = "
          f"{'n/a' if geo is None else f'{geo:.3f}'}; total {results['elapsed_s']} s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gemm.json").write_text(json.dumps(results, indent=2, default=str))
    _plot(results, out / "gemm.png")
    print(f"wrote {out / 'gemm.json'}")
    return 0


def _print_row(row: dict, names: list[str]) -> None:
    if not getattr(_print_row, "header", False):
        print(f"{'M,N,K':>20} " + " ".join(f"{n[:22]:>22}" for n in names))
        _print_row.header = True  # type: ignore[attr-defined]
    cells = []
    for n in names:
        r = row["impls"].get(n, {})
        cells.append(f"{r['tflops']:22.1f}" if "tflops" in r else f"{'ERR':>22}")
    print(f"{row['M']},{row['N']},{row['K']:>6}".rjust(20) + " " + " ".join(cells), flush=True)
    if "error" in row:
        print(f"    shape failed: {row['error']}")
    for n in names:
        cell = row["impls"].get(n, {})
        if "error" in cell:
            print(f"    {n}: {cell['error']}")
    host = {n: row["impls"][n]["host_us_per_call"] for n in names
            if isinstance(row["impls"].get(n, {}).get("host_us_per_call"), float)}
    if host:
        print("    host us/call: " + ", ".join(f"{n} {v:.1f}" for n, v in host.items()))
    um = row["impls"].get("utlx.matmul", {})
    if um.get("config"):
        tuning = um.get("tuning", {})
        print(f"    utlx.matmul chose {um['config']} ({tuning.get('source', '?')}, "
              f"{tuning.get('elapsed_s', '?')} s, {len(tuning.get('candidates', []))} candidates; "
              f"shape took {row.get('seconds', '?')} s)", flush=True)
        timed = sorted((c for c in tuning.get("candidates", []) if c.get("ms")), key=lambda c: c["ms"])[:4]
        if timed:
            flops = 2.0 * row["M"] * row["N"] * row["K"]
            print("      tuning best: " + ", ".join(f"{c['id']} {flops / (c['ms'] * 1e-3) / 1e12:.0f}" for c in timed))


def _plot(results: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        print("matplotlib not available: no plot")
        return
    rows = [r for r in results["rows"] if r.get("impls")]
    if not rows:
        return
    names = list(dict.fromkeys(n for r in rows for n in r["impls"]))
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
    plt.close(fig)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
