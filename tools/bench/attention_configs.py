"""Each ``utlx.attention`` configuration against torch SDPA, forward, in TFLOPS (for choosing and tuning).

Usage: ``python tools/bench/attention_configs.py [--d 128] [--n 1024,2048,4096,8192] [--causal both|yes|no]
[--batch 4] [--heads 32] [--dtype float16] [--rounds 3] [--rep-ms 100] [--only SUBSTR] [--no-public] [--out DIR]``

* Every configuration is compiled first, in parallel worker processes, so no compile enters a timing.
* Per (N_CTX, causal): each configuration is checked against SDPA on the same inputs (max abs error),
  then timed with ``triton.testing.do_bench`` (median) in ``--rounds`` rounds of rotating order, with SDPA
  (torch's default backend: cuDNN on the H200) in every round; a configuration's number is its median
  over rounds. TFLOPS = 4*B*H*N^2*D / t (half of that for causal), the convention of the notes.
* ``utlx.attention`` itself (its tuner's choice, tuned into a private cache) is timed too, as "public".
Prints one table per (D, causal) with the ratio to SDPA and writes ``attention_configs.json`` to --out.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for sub in ("packages/core/src", "packages/utlx/src"):
    if str(ROOT / sub) not in sys.path:
        sys.path.insert(0, str(ROOT / sub))


def _warm(job: tuple) -> str:
    """Worker: compile one configuration by running it once on a small problem of the same specialisation."""
    d, causal, cid, dtype, b, h = job
    import torch
    from utlx.attention import config_by_id, run_config

    try:
        cfg = config_by_id(d, causal, cid)
        q, k, v = (torch.randn(b, h, 256, d, device="cuda", dtype=getattr(torch, dtype)) for _ in range(3))
        run_config(q, k, v, cfg, causal)
        torch.cuda.synchronize()
        return ""
    except Exception as exc:  # reported in the table
        return f"{cid}: {type(exc).__name__}: {exc}"[:300]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", default="128")
    ap.add_argument("--n", default="1024,2048,4096,8192")
    ap.add_argument("--causal", default="both", choices=("both", "yes", "no"))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--only", default="", help="only configurations whose id contains this")
    ap.add_argument("--no-public", action="store_true", help="skip utlx.attention (tuning) itself")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args()

    import concurrent.futures as cf
    import multiprocessing as mp

    import torch
    import triton
    from utlx.attention import CONFIGS

    os.environ.setdefault("UTLX_ATTENTION_CACHE", str(Path(tempfile.mkdtemp()) / "tuning.json"))
    dims = [int(x) for x in args.d.split(",")]
    ns = [int(x) for x in args.n.split(",")]
    causals = {"both": [False, True], "yes": [True], "no": [False]}[args.causal]
    b, h, dtype = args.batch, args.heads, getattr(torch, args.dtype)
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}, "
          f"B={b} H={h} {args.dtype}, SDPA default backend", flush=True)

    jobs = [(d, c, cfg.id, args.dtype, b, h) for d in dims for c in causals for cfg in CONFIGS[(d, c)]
            if args.only in cfg.id]
    start = time.perf_counter()
    with cf.ProcessPoolExecutor(max(1, min(len(jobs), (os.cpu_count() or 2) - 1)),
                                mp_context=mp.get_context("spawn")) as pool:
        warm_errors = dict(zip([j[2] + str(j[:2]) for j in jobs], pool.map(_warm, jobs), strict=True))
    print(f"compiled {len(jobs)} configurations in {time.perf_counter() - start:.0f} s", flush=True)

    results = []
    for d in dims:
        for causal in causals:
            cfgs = [c for c in CONFIGS[(d, causal)] if args.only in c.id]
            table = {}
            for n in ns:
                row, errs = _measure(b, h, n, d, dtype, causal, cfgs, warm_errors, args)
                table[n] = (row, errs)
                results.append({"d": d, "causal": causal, "n": n, "tflops": row, "check": errs})
            print(f"\nD={d} {'causal' if causal else 'non-causal'}: TFLOPS (ratio to SDPA)")
            names = ["sdpa", *[c.id for c in cfgs], *([] if args.no_public else ["public"])]
            print(f"{'config':34s}" + "".join(f"{n:>16d}" for n in ns))
            for name in names:
                cells = []
                for n in ns:
                    row, _ = table[n]
                    if name in row:
                        ratio = row[name] / row["sdpa"]
                        cells.append(f"{row[name]:7.1f} ({ratio:4.2f})")
                    else:
                        cells.append(f"{'-':>15s}")
                print(f"{name:34s}" + "".join(f"{c:>16s}" for c in cells))
            for n in ns:
                print(f"  N={n} check (max abs err vs SDPA / errors): {table[n][1]}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "attention_configs.json").write_text(json.dumps(results, indent=1))
    bad = [r for r in results for cid, e in r["check"].items() if cid != "public" and not _small(e)]
    return 1 if bad else 0


def _measure(b: int, h: int, n: int, d: int, dtype, causal: bool, cfgs: list, warm_errors: dict,
             args) -> tuple[dict[str, float], dict[str, str]]:
    """TFLOPS of SDPA, each configuration and utlx.attention on one fresh problem, and their checks."""
    import torch
    import utlx
    from triton.testing import do_bench
    from utlx.attention import chosen, make_runner, run_config

    flops = 4 * b * h * n * n * d / (2 if causal else 1)
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype) for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    ref = sdpa(q, k, v, is_causal=causal).float()
    fns = {"sdpa": lambda: sdpa(q, k, v, is_causal=causal)}
    errs: dict[str, str] = {}
    for cfg in cfgs:
        err = warm_errors.get(cfg.id + str((d, causal)))
        if err:
            errs[cfg.id] = err
            continue
        o = torch.empty_like(q)
        try:
            run_config(q, k, v, cfg, causal, out=o)
            torch.cuda.synchronize()
            errs[cfg.id] = f"{(o.float() - ref).abs().max().item():.2e}"
            run = make_runner(q, cfg, causal)
            fns[cfg.id] = (lambda run=run, o=o: run(q, k, v, o, d ** -0.5))
        except Exception as exc:
            errs[cfg.id] = f"{type(exc).__name__}: {exc}"[:200]
    if not args.no_public:
        t0 = time.perf_counter()
        utlx.attention(q, k, v, causal=causal)
        torch.cuda.synchronize()
        errs["public"] = f"tuned in {time.perf_counter() - t0:.1f} s: {chosen(q, causal)}"
        fns["public"] = lambda: utlx.attention(q, k, v, causal=causal)
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(do_bench(fns[name], warmup=25, rep=args.rep_ms, return_mode="median"))
    return {name: flops / (statistics.median(ts) * 1e-3) / 1e12 for name, ts in times.items()}, errs


def _small(text: str) -> bool:
    try:
        return math.isfinite(float(text)) and float(text) < 5e-2
    except ValueError:
        return False


if __name__ == "__main__":
    sys.exit(main())
