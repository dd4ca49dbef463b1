"""GEMM benchmark (fp16 and bf16): cuBLAS, stock Triton, each utlx kernel and ``utlx.matmul``, side by side.

Usage: ``python tools/bench/gemm.py [--out DIR] [--dtypes fp16 bf16] [--shapes M,N,K ...] [--skinny M,N,K ...]
[--quick] [--skinny-only] [--only NAME ...] [--budget-s S] [--rounds R] [--rep-ms MS] [--tune full|quick]
[--tuning-cache FILE] [--reuse-tuning] [--no-precompile]``.

What it reports, per dtype (tables in the log and ``gemm.md``, everything in ``gemm.json``):

* **plain loop** (the headline, what users see): ``do_bench(lambda: impl(a, b))``, back-to-back calls, host
  cost included, the output allocated by every implementation alike (cuBLAS is ``torch.matmul(a, b)``);
  the 8 square/rectangular shapes, then the 3 skinny LLM shapes (M = 16, 128, 512; N = K = 8192) apart;
* **rotating rounds** (secondary): ``do_bench(lambda: impl(a, b, c))`` into a preallocated output
  (cuBLAS ``torch.matmul(a, b, out=c)``), the same ``--rounds`` in rotating order;
* ``utlx.matmul, PDL on``: utlx.matmul's winner per shape launched with programmatic dependent launch
  (``UTLX_PDL=1``; off by default), for an A/B of what PDL is worth; only when named
  (``--only utlx.matmul 'utlx.matmul, PDL on'``);
* ``utlx WS cooperative`` and ``utlx WS cluster (multicast A)``: the cooperative warp-specialized family and its
  2-CTA cluster form (not a ``utlx.matmul`` candidate), each with its best configuration per shape, for their
  A/B; only when named with ``--only``;
* **host us/call**: wall time per call of a burst of 20 allocating calls without a sync, after an untimed
  burst that fills the caching allocator; the median of 5 bursts, each started on an idle GPU
  (:func:`host_us_per_call`), per implementation.

Method: first every kernel any implementation will run is compiled in parallel worker processes (no
launch; ``utlx.matmul.precompile``), so tuning only times. Then per shape every implementation is
prepared (its tuning, untimed) and checked against a float32 reference on fresh random data; a wrong or
failing implementation is recorded and left out of the timing. Each table's number is the median over
``--rounds`` rounds whose order rotates, so drift hits every row alike. ``--budget-s`` (default 470)
bounds the whole run, both dtypes and tuning included: shapes that would not fit are reported as
skipped. ``utlx.matmul`` tunes afresh into a private cache unless ``--reuse-tuning`` or
``--tuning-cache FILE`` (a cache written by an earlier run: ``OUT/matmul-tuning.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024),
          (4096, 16384, 4096), (16384, 4096, 4096), (1024, 16384, 8192), (8192, 8192, 16384)]
#: LLM decode/prefill-like GEMMs (activations x weights), reported apart (issue 13: >= 0.95x cuBLAS).
SKINNY_SHAPES = [(16, 8192, 8192), (128, 8192, 8192), (512, 8192, 8192)]
DTYPES = ("fp16", "bf16")
BASELINE = "cuBLAS"
SUBJECT = "utlx.matmul"
#: utlx.matmul's winner launched with programmatic dependent launch (what ``UTLX_PDL=1`` runs; off by default)
WITH_PDL = "utlx.matmul, PDL on"
#: The cooperative warp-specialized family and its 2-CTA cluster form (multicast A), for their A/B; only
#: when named with ``--only``, like the PDL row
WS_COOPERATIVE = "utlx WS cooperative"
WS_CLUSTER = "utlx WS cluster (multicast A)"

Shape = tuple[int, int, int]


@dataclass
class Impl:
    """One benchmarked implementation.

    ``call(a, b)`` allocates and returns the product (the plain-loop table and host us/call);
    ``run(a, b, c)`` writes into ``c`` (the rotating-rounds table); ``prepare`` tunes for a problem
    (untimed) and returns what it chose.
    """

    name: str
    call: Callable[[Any, Any], Any]
    run: Callable[[Any, Any, Any], Any]
    prepare: Callable[[Any, Any, Any, float], dict[str, Any]] = field(default=lambda a, b, c, budget: {})
    #: (family, [(constexprs, num_warps)], grid_mode) of utlx kernels to precompile, or "utlx.matmul"
    precompile: Any = None


# ---------------------------------------------------------------------------------------------- implementations


def _bench(fn: Callable[[], Any], rep_ms: float) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=max(5.0, rep_ms / 4), rep=rep_ms, return_mode="median"))


def _cublas() -> Impl:
    import torch

    return Impl(BASELINE, lambda a, b: torch.matmul(a, b), lambda a, b, c: torch.matmul(a, b, out=c))


def _stock_triton() -> Impl:
    """A stock ``tl.dot`` GEMM (Triton's tutorial structure), autotuned over Hopper-friendly configs,
    launched the way users launch Triton kernels (``kernel[grid](...)``)."""
    import torch
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

    def call(a, b):
        c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
        run(a, b, c)
        return c

    def prepare(a, b, c, budget):
        run(a, b, c)  # the autotuner times its configs on the first call for this key
        best = getattr(stock_matmul, "best_config", None)
        return {"config": str(best) if best is not None else None}

    return Impl("triton tl.dot", call, run, prepare)


def _utlx_family(name: str, family: str, configs: list, grid_mode: str) -> Impl:
    """One utlx kernel family with the best of its configurations for each problem, launched through the
    same fast host path as ``utlx.matmul`` (``Candidate.bind``), so the rows compare kernels."""
    import importlib

    mm = importlib.import_module("utlx.matmul")
    from utlx.gemm_launch import Problem

    chosen: dict[tuple, Any] = {}

    def key(a, b):
        return (a.shape[0], b.shape[1], a.shape[1], a.dtype)

    def prepare(a, b, c, budget):
        import torch

        sms = torch.cuda.get_device_properties(a.device).multi_processor_count
        problem = Problem.of(a, b, sms)
        start = time.monotonic()
        timings, errors = {}, {}
        for i, (const, nw) in enumerate(configs):
            if timings and time.monotonic() - start > budget:
                errors[i] = "skipped: budget"
                continue
            try:
                launch = mm.Candidate(family, tuple(sorted(const.items())), nw, grid_mode).bind(problem)
                launch(a, b, c)
                timings[i] = (_bench(lambda launch=launch: launch(a, b, c), 30.0), launch)
            except Exception as exc:  # the configuration does not fit this GPU/shape: try the next one
                errors[i] = f"{type(exc).__name__}: {exc}"[:200]
        if not timings:
            raise RuntimeError("no configuration ran: " + " | ".join(errors.values()))
        best = min(timings, key=lambda i: timings[i][0])
        chosen[key(a, b)] = timings[best][1]
        return {"config": str(configs[best]), "config_ms": {str(i): t for i, (t, _) in timings.items()},
                "config_errors": errors}

    def call(a, b):
        return chosen[key(a, b)].matmul(a, b, a.data_ptr(), b.data_ptr())

    def run(a, b, c):
        chosen[key(a, b)](a, b, c)

    return Impl(name, call, run, prepare, precompile=(family, configs, grid_mode))


def _utlx_matmul(force: bool, effort: str) -> Impl:
    import importlib

    mm = importlib.import_module("utlx.matmul")  # the module (``utlx.matmul`` the attribute is the function)
    into: dict[tuple, Any] = {}

    def prepare(a, b, c, budget):
        report = mm.tune(a, b, force=force, budget_s=budget, effort=effort)
        mm.matmul(a, b)  # makes the plan (the launch the hot path runs)
        plan = mm._PLANS.get(mm.plan_key(a, b))
        if callable(plan):  # a GemmLaunch: the rotating-rounds table runs it into c
            into[mm.plan_key(a, b)] = plan
        return {"config": report.winner.id if report.winner else None, "tuning": report.to_dict()}

    def run(a, b, c):
        launch = into.get(mm.plan_key(a, b))
        if launch is None:
            c.copy_(mm.matmul(a, b))
        else:
            launch(a, b, c)

    # ``call`` is exactly what a user calls: checks, plan lookup, allocation, launch
    return Impl(SUBJECT, mm.matmul, run, prepare, precompile="utlx.matmul")


def _utlx_matmul_with_pdl() -> Impl:
    """utlx.matmul's winner (tuned by the utlx.matmul row, which runs first) launched with programmatic
    dependent launch: the A/B that says what PDL is worth per shape. ``call`` is the same allocating hot path."""
    import importlib

    from utlx.gemm_launch import Problem

    mm = importlib.import_module("utlx.matmul")
    launches: dict[tuple, Any] = {}

    def prepare(a, b, c, budget):
        winner = mm.tune(a, b, force=False, budget_s=budget).winner
        if winner is None:
            raise RuntimeError("utlx.matmul found no candidate")
        launches[mm.plan_key(a, b)] = winner.bind(Problem.of(a, b, mm._device_info(a.device).num_sms), pdl=True)
        return {"config": winner.id + " (PDL)"}

    def call(a, b):
        return launches[mm.plan_key(a, b)].matmul(a, b, a.data_ptr(), b.data_ptr())

    def run(a, b, c):
        launches[mm.plan_key(a, b)](a, b, c)

    return Impl(WITH_PDL, call, run, prepare)


def implementations(force_tuning: bool = True, effort: str = "full") -> dict[str, Callable[[], Impl]]:
    """Name -> factory; factories are called lazily so one failing import stays local."""

    def pipelined():
        from utlx.kernels.nvidia import hopper_pipelined

        return _utlx_family("utlx pipelined (cp.async+wgmma)", "hopper_pipelined", list(hopper_pipelined.CONFIGS),
                            "tiles")

    def tma_persistent():
        from utlx.kernels.nvidia import hopper_tma_persistent

        return _utlx_family("utlx TMA persistent", "tma_persistent", list(hopper_tma_persistent.CONFIGS),
                            "persistent")

    def register_staged():
        from utlx.kernels.amd import amd_pipelined

        return _utlx_family("utlx register-staged", "register_staged", list(amd_pipelined.CONFIGS), "tiles")

    def ws_cooperative():
        from utlx.kernels.nvidia import hopper_ws_persistent

        return _utlx_family(WS_COOPERATIVE, "ws_persistent", list(hopper_ws_persistent.CONFIGS), "persistent")

    def ws_cluster():
        from utlx.kernels.nvidia import hopper_ws_cluster

        return _utlx_family(WS_CLUSTER, "ws_cluster", list(hopper_ws_cluster.CONFIGS), "persistent")

    return {
        BASELINE: _cublas,
        "triton tl.dot": _stock_triton,
        "utlx pipelined (cp.async+wgmma)": pipelined,
        "utlx TMA persistent": tma_persistent,
        "utlx register-staged": register_staged,
        SUBJECT: lambda: _utlx_matmul(force_tuning, effort),
        WITH_PDL: _utlx_matmul_with_pdl,
        WS_COOPERATIVE: ws_cooperative,
        WS_CLUSTER: ws_cluster,
    }


# ---------------------------------------------------------------------------------------------- pure helpers


def tflops(M: int, N: int, K: int, ms: float) -> float:
    return 2.0 * M * N * K / (ms * 1e-3) / 1e12


def tolerance(dtype: str) -> float:
    """Relative tolerance (of the reference's largest magnitude) for fp32 accumulation, one rounding."""
    return {"fp16": 1e-2, "bf16": 2e-2}[dtype]


def check_result(out: Any, ref32: Any, dtype: str) -> str | None:
    """None when ``out`` matches the float32 reference, else what is wrong."""
    err = (out.float() - ref32).abs().max().item()
    scale = ref32.abs().max().item() + 1e-6
    tol = tolerance(dtype) * scale + 1e-2
    if not math.isfinite(err) or err > tol:
        return f"wrong result: max abs error {err:.3g} > {tol:.3g} (reference max {scale:.3g})"
    return None


def rotations(items: Sequence[Any], rounds: int) -> list[list[Any]]:
    """``rounds`` orders of ``items``, each starting one later: every item leads and trails alike."""
    n = len(items)
    return [list(items[r % n:]) + list(items[:r % n]) for r in range(rounds)] if n else []


def work_order(shapes: Sequence[Shape], skinny: Sequence[Shape],
               dtypes: Sequence[str]) -> list[tuple[str, Shape, bool]]:
    """(dtype, shape, skinny?) in run order: the main shapes dtype by dtype per shape, then the skinny ones,
    so a budget cut removes the same shapes from every dtype."""
    main = [(d, s, False) for s in shapes for d in dtypes]
    return main + [(d, s, True) for s in skinny for d in dtypes]


def summarize(rows: list[dict[str, Any]], metric: str = "plain_tflops", subject: str = SUBJECT,
              baseline: str = BASELINE) -> dict[str, Any]:
    """Shapes where ``subject`` >= ``baseline`` on ``metric``, the ratios and their geomean (measured shapes)."""
    ratios: dict[str, float] = {}
    for row in rows:
        u = row.get("impls", {}).get(subject, {}).get(metric)
        cb = row.get("impls", {}).get(baseline, {}).get(metric)
        if u is None or cb is None:
            continue
        ratios[f"{row['M']},{row['N']},{row['K']}"] = u / cb
    vals = list(ratios.values())
    geo = math.exp(sum(math.log(x) for x in vals) / len(vals)) if vals else None
    return {"wins": sum(v >= 1.0 for v in vals), "compared": len(vals), "shapes": len(rows), "geomean_ratio": geo,
            "min_ratio": min(vals) if vals else None, "ratios": ratios}


def host_summary(rows: list[dict[str, Any]], subject: str = SUBJECT, baseline: str = BASELINE) -> dict[str, Any]:
    """Shapes where ``subject``'s host us/call <= ``baseline``'s (issue 13: on every shape)."""
    pairs = []
    for row in rows:
        u = row.get("impls", {}).get(subject, {}).get("host_us_per_call")
        cb = row.get("impls", {}).get(baseline, {}).get("host_us_per_call")
        if isinstance(u, (int, float)) and isinstance(cb, (int, float)):
            pairs.append((u, cb))
    return {"at_most_baseline": sum(u <= cb for u, cb in pairs), "compared": len(pairs),
            "worst_ratio": max((u / cb for u, cb in pairs), default=None)}


def markdown_table(rows: list[dict[str, Any]], names: Sequence[str], metric: str, fmt: str = "{:.1f}",
                   ratio: bool = True) -> str:
    """A markdown table of ``metric`` per shape and implementation (ERR/skipped where missing), plus the
    subject/baseline ratio column and a geomean row for TFLOPS metrics."""
    head = ["M,N,K", *names] + (["utlx.matmul / cuBLAS"] if ratio else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    per_impl: dict[str, list[float]] = {n: [] for n in names}
    for row in rows:
        cells = [f"{row['M']},{row['N']},{row['K']}"]
        for n in names:
            cell = row.get("impls", {}).get(n, {})
            v = cell.get(metric)
            if isinstance(v, (int, float)):
                cells.append(fmt.format(v))
                per_impl[n].append(float(v))
            else:
                cells.append("skipped" if row.get("skipped") else "ERR")
        if ratio:
            u = row.get("impls", {}).get(SUBJECT, {}).get(metric)
            cb = row.get("impls", {}).get(BASELINE, {}).get(metric)
            cells.append(f"{u / cb:.3f}" if isinstance(u, (int, float)) and isinstance(cb, (int, float)) else "")
        lines.append("| " + " | ".join(cells) + " |")
    if ratio and any(per_impl.values()):
        geo = [fmt.format(math.exp(statistics.fmean(math.log(x) for x in v))) if v else "" for v in per_impl.values()]
        s = summarize(rows, metric)
        ratio_cell = f"**{s['geomean_ratio']:.3f}**" if s["geomean_ratio"] else ""
        lines.append("| **geomean** | " + " | ".join(geo) + " | " + ratio_cell + " |")
    return "\n".join(lines)


def report_markdown(results: dict[str, Any]) -> str:
    """The whole run as markdown: per dtype the headline, skinny, rotating and host tables and the choices."""
    out = [f"GEMM on {results['device']} (torch {results['torch']}, triton {results['triton']}, "
           f"{results['time']}); command: `{results['command']}`", ""]
    for dtype, part in results["dtypes"].items():
        names = part["names"]
        out += [f"### {dtype}: plain loop, TFLOPS (headline)", "", markdown_table(part["rows"], names, "plain_tflops"),
                "", f"### {dtype}: skinny shapes, plain loop, TFLOPS", "",
                markdown_table(part["skinny_rows"], names, "plain_tflops"), "",
                f"### {dtype}: rotating rounds into a preallocated output, TFLOPS", "",
                markdown_table(part["rows"] + part["skinny_rows"], names, "rounds_tflops"), "",
                f"### {dtype}: host us/call (allocating calls, no sync)", "",
                markdown_table(part["rows"] + part["skinny_rows"], names, "host_us_per_call", ratio=False), ""]
        chosen = [(f"{r['M']},{r['N']},{r['K']}", r["impls"].get(SUBJECT, {}).get("config"))
                  for r in part["rows"] + part["skinny_rows"]]
        out += [f"{dtype}: utlx.matmul ran " + "; ".join(f"{s}: `{c}`" for s, c in chosen if c), ""]
        s = part["summary"]
        out += [f"{dtype} summary: plain loop >= cuBLAS on {s['plain']['wins']} of {s['plain']['compared']} "
                f"(geomean {_fmt(s['plain']['geomean_ratio'])}); rotating rounds {s['rounds']['wins']} of "
                f"{s['rounds']['compared']} (geomean {_fmt(s['rounds']['geomean_ratio'])}); skinny min ratio "
                f"{_fmt(s['skinny']['min_ratio'])}; host us/call <= cuBLAS on {s['host']['at_most_baseline']} of "
                f"{s['host']['compared']}", ""]
    return "\n".join(out)


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def parse_shapes(texts: Sequence[str] | None) -> list[Shape]:
    shapes: list[Shape] = []
    for s in texts or []:
        parts = [int(x) for x in s.replace("x", ",").split(",")]
        if len(parts) != 3 or min(parts) <= 0:
            raise SystemExit(f"gemm.py: shapes are positive M,N,K triples, got {s!r}")
        shapes.append((parts[0], parts[1], parts[2]))
    return shapes


# ---------------------------------------------------------------------------------------------- precompile


def precompile_items(impls: dict[str, Impl | Exception], work: Sequence[tuple[str, Shape, bool]], num_sms: int,
                     kind: str = "hopper") -> list[tuple]:
    """One (dtype, shape, family, constexprs, num_warps, grid_mode) per distinct compile the utlx rows need.

    Two problems share a compiled kernel when the kernel, its constexprs (``NUM_SMS`` included: it
    depends on the grid) and warps, the dtype and the JIT's integer specialization (divisible by 16, equal
    to 1) of M, N, K agree; only the first such problem is kept, so no worker compiles what another does.
    """
    import importlib

    mm = importlib.import_module("utlx.matmul")
    from utlx.gemm_launch import Problem

    seen: set[tuple] = set()
    items = []
    for dtype, (M, N, K), _ in work:
        problem = Problem(M, N, K, (K, 1), (N, 1), dtype, _FakeDevice(), num_sms)
        for impl in impls.values():
            if not isinstance(impl, Impl) or impl.precompile is None:
                continue
            if impl.precompile == SUBJECT:
                cands = mm.for_problem(mm.candidates(kind, True, shape=(M, N, K)), M, N, num_sms, K)
            else:
                family, configs, grid_mode = impl.precompile
                cands = [mm.Candidate(family, tuple(sorted(c.items())), nw, grid_mode) for c, nw in configs]
            for cand in cands:
                launch = cand.bind(problem)
                spec = tuple((x % 16 == 0, x == 1) for x in (M, N, K))
                key = (dtype, launch.jit_fn.__name__, tuple(sorted(launch.kwargs.items())), spec)
                if key not in seen:
                    seen.add(key)
                    items.append((dtype, (M, N, K), cand.family, cand.constexprs, cand.num_warps, cand.grid_mode))
    return items


class _FakeDevice:
    """Stands in for a torch.device where only the index is read (deduplication needs no tensors)."""

    index = 0
    type = "cuda"


def precompile_chunk(chunk: list[tuple]) -> list[str]:
    """Worker process: compile (no launch) every item of the chunk (see :func:`precompile_items`)."""
    import importlib

    import torch

    mm = importlib.import_module("utlx.matmul")
    errors = []
    for dtype, (M, N, K), family, constexprs, num_warps, grid_mode in chunk:
        dt = getattr(torch, {"fp16": "float16", "bf16": "bfloat16"}[dtype])
        a = torch.empty(M, K, device="cuda", dtype=dt)
        b = torch.empty(K, N, device="cuda", dtype=dt)
        errors += mm.precompile(a, b, [mm.Candidate(family, constexprs, num_warps, grid_mode)])
    return errors


def run_precompile(items: list[tuple], workers: int) -> tuple[float, list[str]]:
    import concurrent.futures as cf
    import multiprocessing as mp

    start = time.perf_counter()
    if not items:
        return 0.0, []
    workers = max(1, min(workers, len(items)))
    chunks = [items[i::workers] for i in range(workers)]
    with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        errors = [e for part in pool.map(precompile_chunk, chunks) for e in part]
    return time.perf_counter() - start, sorted(set(errors))


# ---------------------------------------------------------------------------------------------- one shape


def bench_shape(impls: dict[str, Impl | Exception], dtype: str, M: int, N: int, K: int, *, rounds: int,
                rep_ms: float, tune_budget_s: float, host_calls: int = 20, host_repeats: int = 5, device: str = "cuda",
                bench: Callable[[Callable[[], Any], float], float] = _bench) -> dict[str, Any]:
    """Prepare and check every implementation on one problem, then the plain loop, rotating rounds and host cost.

    ``device`` and ``bench`` (the timer) are parameters so the flow is tested on the CPU.
    """
    import torch

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    dt = getattr(torch, {"fp16": "float16", "bf16": "bfloat16"}[dtype])
    gen = torch.Generator(device=device).manual_seed(M * 7 + N * 3 + K)
    a = torch.randn((M, K), device=device, dtype=dt, generator=gen)
    b = torch.randn((K, N), device=device, dtype=dt, generator=gen)
    c = torch.empty((M, N), device=device, dtype=dt)
    ref32 = a.float() @ b.float()
    row: dict[str, Any] = {"M": M, "N": N, "K": K, "dtype": dtype, "impls": {}}
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
            problem = check_result(impl.call(a, b), ref32, dtype)  # the timed entry points, both checked
            if problem is None:
                c.fill_(float("nan"))
                impl.run(a, b, c)
                problem = check_result(c, ref32, dtype)
            sync()
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"[:300]
            traceback.print_exc()
        cell["prepare_s"] = round(time.monotonic() - t0, 2)
        if problem:
            cell["error"] = problem
        else:
            ready.append(impl)
    del ref32

    for metric, fn_of in (("plain", lambda impl: (lambda: impl.call(a, b))),
                          ("rounds", lambda impl: (lambda: impl.run(a, b, c)))):
        samples: dict[str, list[float]] = {impl.name: [] for impl in ready}
        for order in rotations(ready, rounds):
            for impl in order:
                try:
                    samples[impl.name].append(bench(fn_of(impl), rep_ms))
                except Exception as exc:
                    row["impls"][impl.name]["error"] = f"timing: {type(exc).__name__}: {exc}"[:300]
        for impl in ready:
            cell = row["impls"][impl.name]
            if samples[impl.name] and "error" not in cell:
                ms = statistics.median(samples[impl.name])
                cell.update({f"{metric}_ms": ms, f"{metric}_tflops": tflops(M, N, K, ms),
                             f"{metric}_round_ms": samples[impl.name]})
    for impl in ready:
        try:
            per_call = host_us_per_call(lambda impl=impl: impl.call(a, b), sync, host_calls, host_repeats)
            row["impls"][impl.name]["host_us_per_call"] = round(statistics.median(per_call), 1)
            row["impls"][impl.name]["host_us_bursts"] = [round(x, 1) for x in per_call]
        except Exception as exc:
            row["impls"][impl.name]["host_us_per_call"] = f"{type(exc).__name__}: {exc}"[:100]
    return row


def host_us_per_call(call: Callable[[], Any], sync: Callable[[], None], calls: int, repeats: int,
                     clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Host microseconds per call of ``repeats`` bursts of ``calls`` back-to-back calls (no sync inside a burst).

    Why bursts: one timed loop of 50 calls read 11.5 to 19.2 us per call for the same kernel at 8192^3 across
    runs on the H200 (2026-12-01), enough to flip the comparison with cuBLAS. One-off costs (an allocator that
    must grow, a collection, a full launch queue behind long kernels) land in whichever loop they hit. Here a
    first, untimed burst lets the caching allocator grow, each timed burst starts on an idle GPU (sync before),
    and the median over bursts drops the outliers. Whether that is steadier on the H200 is not yet measured.
    """
    sync()
    for _ in range(calls):
        call()
    sync()
    out = []
    for _ in range(repeats):
        t0 = clock()
        for _ in range(calls):
            call()
        out.append((clock() - t0) / calls * 1e6)
        sync()
    return out


# ---------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("TRITONX_BENCH_OUT") or os.environ.get("OUT") or "bench-out")
    parser.add_argument("--dtypes", nargs="*", default=list(DTYPES), choices=list(DTYPES))
    parser.add_argument("--shapes", nargs="*", help="M,N,K triples (default: the 8 issue shapes)")
    parser.add_argument("--sizes", nargs="*", type=int, help="square sizes N (N,N,N), added to --shapes")
    parser.add_argument("--skinny", nargs="*", help="skinny M,N,K triples (default: M = 16, 128, 512; N = K = 8192)")
    parser.add_argument("--quick", action="store_true", help="first two shapes and the first skinny shape only")
    parser.add_argument("--skinny-only", action="store_true", help="the skinny shapes only (no main table)")
    parser.add_argument("--only", nargs="*", help="implementation names to run (default: all; cuBLAS always)")
    parser.add_argument("--budget-s", type=float, default=470.0, help="whole-run budget, both dtypes (default 470)")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds per table and shape (default 3)")
    parser.add_argument("--rep-ms", type=float, default=100.0, help="do_bench rep per round, ms (default 100)")
    parser.add_argument("--tune", choices=["full", "quick"], default="full", help="utlx.matmul's tuning effort")
    parser.add_argument("--tuning-cache", help="start from this utlx.matmul tuning cache (no re-tuning)")
    parser.add_argument("--reuse-tuning", action="store_true",
                        help="let utlx.matmul use its on-disk tuning cache (default: tune afresh, private cache)")
    parser.add_argument("--no-precompile", action="store_true", help="compile lazily (no parallel warm-up)")
    parser.add_argument("--workers", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)))
    args = parser.parse_args(argv)
    started = time.monotonic()

    import torch

    if not torch.cuda.is_available():
        print("gemm.py: no GPU; nothing to benchmark", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    reuse = args.reuse_tuning or bool(args.tuning_cache)
    if not args.reuse_tuning:
        cache_file = Path(tempfile.mkdtemp(prefix="utlx-gemm-")) / "tuning.json"
        if args.tuning_cache:
            shutil.copy(args.tuning_cache, cache_file)
        os.environ["UTLX_MATMUL_CACHE"] = str(cache_file)  # workers and this process alike
    try:
        import utlx.plugin

        utlx.plugin.ensure_active()
    except Exception:  # the utlx rows will record the failure
        traceback.print_exc()
    shapes = parse_shapes(args.shapes) + [(n, n, n) for n in (args.sizes or [])]
    shapes = shapes or list(SHAPES)
    skinny = parse_shapes(args.skinny) if args.skinny is not None else list(SKINNY_SHAPES)
    if args.quick:
        shapes, skinny = shapes[:2], skinny[:1]
    if args.skinny_only:
        shapes = []
    factories = implementations(force_tuning=not reuse, effort=args.tune)
    if args.only:
        factories = {k: v for k, v in factories.items() if k in args.only or k == BASELINE}
    else:  # the A/B rows compile kernels utlx.matmul's row already covers: only when asked for by name
        for name in (WITH_PDL, WS_COOPERATIVE, WS_CLUSTER):
            factories.pop(name)
    impls: dict[str, Impl | Exception] = {}
    for name, factory in factories.items():
        try:
            impls[name] = factory()
        except Exception as exc:
            impls[name] = exc
    names = list(impls)
    work = work_order(shapes, skinny, args.dtypes)

    import triton

    results: dict[str, Any] = {
        "device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
        "python": platform.python_version(), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "command": "python tools/bench/gemm.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "method": (f"per shape: tune (untimed) and check every implementation against a float32 reference, then "
                   f"{args.rounds} rotating rounds of do_bench(rep={args.rep_ms} ms, median) for the plain loop "
                   f"(allocating calls) and for calls into a preallocated output; the median over rounds"),
        "budget_s": args.budget_s, "tune": args.tune, "tuning_cache": os.environ.get("UTLX_MATMUL_CACHE"),
        "dtypes": {d: {"names": names, "rows": [], "skinny_rows": []} for d in args.dtypes}}
    if not args.no_precompile:
        import importlib

        info = importlib.import_module("utlx.matmul")._device_info(torch.device("cuda"))
        items = precompile_items(impls, work, info.num_sms, info.kind)
        seconds, errors = run_precompile(items, args.workers)
        results["precompile"] = {"kernels": len(items), "seconds": round(seconds, 1), "errors": errors}
        print(f"precompiled {len(items)} utlx kernels in {seconds:.0f} s with {args.workers} workers; "
              f"{len(errors)} compile errors", flush=True)
        for e in errors[:20]:
            print(f"    {e}")

    shape_times: list[float] = []
    for i, (dtype, (M, N, K), is_skinny) in enumerate(work):
        elapsed = time.monotonic() - started
        left = args.budget_s - elapsed
        expect = statistics.median(shape_times[-4:]) if shape_times else 0.0
        part = results["dtypes"][dtype]["skinny_rows" if is_skinny else "rows"]
        if left <= 0 or (shape_times and expect > left):
            part.append({"M": M, "N": N, "K": K, "dtype": dtype, "impls": {},
                         "skipped": f"budget: {elapsed:.0f} s of {args.budget_s:.0f} used, "
                                    f"a shape takes ~{expect:.0f} s"})
            print(f"{dtype} {M},{N},{K}: skipped (budget)", flush=True)
            continue
        tune_budget = max(10.0, min(120.0, 0.5 * left / (len(work) - i)))
        t0 = time.monotonic()
        try:
            row = bench_shape(impls, dtype, M, N, K, rounds=args.rounds, rep_ms=args.rep_ms, tune_budget_s=tune_budget)
        except Exception as exc:  # e.g. out of memory allocating the inputs
            traceback.print_exc()
            row = {"M": M, "N": N, "K": K, "dtype": dtype, "error": f"{type(exc).__name__}: {exc}"[:300], "impls": {}}
        torch.cuda.empty_cache()
        row["seconds"] = round(time.monotonic() - t0, 1)
        shape_times.append(row["seconds"])
        part.append(row)
        _print_row(row, names)

    for part in results["dtypes"].values():
        part["summary"] = {"plain": summarize(part["rows"], "plain_tflops"),
                           "rounds": summarize(part["rows"], "rounds_tflops"),
                           "skinny": summarize(part["skinny_rows"], "plain_tflops"),
                           "host": host_summary(part["rows"] + part["skinny_rows"])}
    results["elapsed_s"] = round(time.monotonic() - started, 1)
    cache_path = os.environ.get("UTLX_MATMUL_CACHE")
    if cache_path and Path(cache_path).is_file():
        shutil.copy(cache_path, out / "matmul-tuning.json")  # reusable with --tuning-cache
    (out / "gemm.json").write_text(json.dumps(results, indent=2, default=str))
    text = report_markdown(results)
    (out / "gemm.md").write_text(text + "\n")
    print()
    print(text)
    print(f"total {results['elapsed_s']} s; wrote {out / 'gemm.json'} and {out / 'gemm.md'}")
    return 0


def _print_row(row: dict, names: list[str]) -> None:
    label = f"{row['dtype']} {row['M']},{row['N']},{row['K']}"
    cells = []
    for n in names:
        r = row["impls"].get(n, {})
        cells.append(f"{n} {r['plain_tflops']:.0f}" if "plain_tflops" in r else f"{n} ERR")
    print(f"{label} ({row.get('seconds', '?')} s): " + ", ".join(cells), flush=True)
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
    um = row["impls"].get(SUBJECT, {})
    if um.get("config"):
        tuning = um.get("tuning", {})
        print(f"    utlx.matmul chose {um['config']} ({tuning.get('source', '?')}, {tuning.get('elapsed_s', '?')} s)",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
