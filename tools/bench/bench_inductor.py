"""torch.compile(flex_attention): stock Inductor vs Inductor + utlx (``utlx.inductor``), in one process.

Usage (on a Hopper GPU)::

    python tools/bench/bench_inductor.py [--check] [--bench] [--quick] [--mode force|allow] [--block]
    python tools/bench/bench_inductor.py --block --block-shape tiny --device cpu --masks causal   # CPU, seconds

``--check``: correctness first, on smaller shapes (B=2, H=8; N_CTX 2048, a ragged 1000, GQA 8:2): for every
mask/score_mod cell both compiled outputs against an fp32 eager reference, the utlx error within flex's
tolerance (no worse than twice stock Inductor's own error, and below 2e-2), plus one backward (causal: the
utlx forward with the stock backward template) against stock gradients.
``--block``: the real client (:mod:`inductor_block`): a transformer block (RMSNorm, QKV, FlexAttention with a
causal / sliding-window / document mask, output projection, SwiGLU MLP) under ``torch.compile(mode="max-autotune")``,
stock vs ``utlx.inductor`` (``--block-mode``, default allow), checked against the float32 eager block, forward and
forward+backward timed in a plain loop. ``--block-shape tiny --device cpu`` is the seconds-long CPU path (utlx
must be a no-op there); ``--json FILE`` writes the result rows.
``--bench``: the table: cells {none, causal, sliding window 1024, document mask, ALiBi, tanh softcap} x N_CTX
{2048, 8192} x {fp16, bf16}, B=4, H=32, D=128; a plain loop (host cost included), the median of 5 runs of
``--iters`` calls; speedup = stock time / utlx time, and the geomean.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import sys
import time

os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")  # the utlx compile must not reuse the stock graph
os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import inductor_block  # the sibling module (run as a script, this folder is sys.path[0])
import torch
import utlx.inductor
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

CELLS = ("none", "causal", "sliding1024", "document", "alibi", "softcap")


def cell_mods(cell: str, n_ctx: int, heads: int, device: str) -> tuple:
    """(score_mod, mask_mod) of a benchmark cell."""
    if cell == "none":
        return None, None
    if cell == "causal":
        return None, lambda b, h, q, kv: q >= kv
    if cell == "sliding1024":
        return None, lambda b, h, q, kv: (q >= kv) & (q - kv <= 1024)
    if cell == "document":
        g = torch.Generator().manual_seed(0)
        cuts = torch.sort(torch.randint(1, n_ctx, (max(n_ctx // 512, 1),), generator=g)).values
        doc = torch.zeros(n_ctx, dtype=torch.int32)
        doc[cuts] = 1
        doc = torch.cumsum(doc, 0).to(torch.int32).to(device)
        return None, lambda b, h, q, kv: doc[q] == doc[kv]
    if cell == "alibi":
        slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / heads) for i in range(heads)], device=device)
        return (lambda s, b, h, q, kv: s + slopes[h] * (kv - q)), None
    if cell == "softcap":
        return (lambda s, b, h, q, kv: 30.0 * torch.tanh(s / 30.0)), None
    raise ValueError(cell)


def compiled(mode: str):
    """A freshly compiled flex_attention under ``mode`` (off = stock)."""
    torch._dynamo.reset()
    if mode == "off":
        utlx.inductor.disable()
    else:
        utlx.inductor.enable(mode)

    def f(q, k, v, score_mod, block_mask):
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, enable_gqa=q.shape[1] != k.shape[1])

    return torch.compile(f, fullgraph=True, dynamic=False)


def inputs(b: int, hq: int, hkv: int, n: int, d: int, dtype: torch.dtype, grad: bool = False):
    g = torch.Generator(device="cuda").manual_seed(1)
    mk = lambda h: torch.randn(b, h, n, d, device="cuda", dtype=dtype, generator=g, requires_grad=grad)
    return mk(hq), mk(hkv), mk(hkv)


def run_cell(fn, q, k, v, cell):
    score_mod, mask_mod = cell_mods(cell, q.shape[2], q.shape[1], "cuda")
    bm = None if mask_mod is None else create_block_mask(mask_mod, None, None, q.shape[2], k.shape[2], device="cuda")
    return fn(q, k, v, score_mod, bm), (score_mod, bm)


def check(mode: str) -> bool:
    ok = True
    plan = [(torch.bfloat16, (2, 8, 8, 2048, 128), CELLS), (torch.float16, (2, 8, 8, 2048, 128), ("causal",)),
            (torch.bfloat16, (2, 8, 8, 1000, 128), ("causal", "document")),
            (torch.bfloat16, (2, 8, 2, 2048, 128), ("alibi",)), (torch.float16, (2, 8, 8, 2048, 64), ("causal",))]
    for dtype, shape, cells in plan:
        q, k, v = inputs(*shape, dtype)
        for cell in cells:
            try:
                score_mod, mask_mod = cell_mods(cell, shape[3], shape[1], "cuda")
                bm = None if mask_mod is None else create_block_mask(mask_mod, None, None, shape[3], shape[3],
                                                                     device="cuda")
                gqa = shape[1] != shape[2]
                ref = flex_attention(q.float(), k.float(), v.float(), score_mod=score_mod, block_mask=bm,
                                     enable_gqa=gqa)
                outs = {}
                added = utlx.inductor.stats["added"]
                for m in ("off", mode):
                    outs[m] = compiled(m)(q, k, v, score_mod, bm).float()
                if utlx.inductor.stats["added"] == added:
                    print(f"check: the utlx choice was not added: {utlx.inductor.stats}", flush=True)
                    ok = False
                e_stock = (outs["off"] - ref).abs().max().item()
                e_utlx = (outs[mode] - ref).abs().max().item()
                good = e_utlx <= max(2 * e_stock, 2e-2) and math.isfinite(e_utlx)
                ok &= good
                print(f"check {str(dtype)[6:]:8s} B,Hq,Hkv,N,D={shape} {cell:12s} err stock {e_stock:.2e} "
                      f"utlx {e_utlx:.2e} {'ok' if good else 'FAIL'}", flush=True)
            except Exception as e:  # one line per failing cell, then the next cell
                ok = False
                print(f"check {str(dtype)[6:]} {shape} {cell} ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
    try:
        ok &= check_backward(mode)
    except Exception as e:
        ok = False
        print(f"check backward ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
    return ok


def check_backward(mode: str) -> bool:
    """The utlx forward, then the stock backward template (it reads the utlx logsumexp), vs stock gradients."""
    ok = True
    q, k, v = inputs(2, 8, 8, 2048, 128, torch.bfloat16, grad=True)
    grads = {}
    for m in ("off", mode):
        out, _ = run_cell(compiled(m), q, k, v, "causal")
        out.float().square().sum().backward()
        grads[m] = [t.grad.float().clone() for t in (q, k, v)]
        for t in (q, k, v):
            t.grad = None
    for name, a, b in zip("qkv", grads["off"], grads[mode], strict=True):
        err = (a - b).abs().max().item() / max(a.abs().max().item(), 1e-6)
        good = err < 2e-2
        ok &= good
        print(f"check backward d{name} rel err utlx-vs-stock {err:.2e} {'ok' if good else 'FAIL'}", flush=True)
    return ok


def timed(fn, q, k, v, score_mod, bm, iters: int) -> float:
    for _ in range(3):
        fn(q, k, v, score_mod, bm)
    runs = []
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(q, k, v, score_mod, bm)
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t0) / iters)
    return statistics.median(runs)


def bench(mode: str, iters: int, quick: bool) -> None:
    rows = []
    b, h, d = 4, 32, 128
    dtypes = (torch.bfloat16,) if quick else (torch.float16, torch.bfloat16)
    for dtype in dtypes:
        for n in (2048, 8192):
            q, k, v = inputs(b, h, h, n, d, dtype)
            for cell in CELLS:
                score_mod, mask_mod = cell_mods(cell, n, h, "cuda")
                bm = None if mask_mod is None else create_block_mask(mask_mod, None, None, n, n, device="cuda")
                t = {}
                try:
                    for m in ("off", mode):
                        t[m] = timed(compiled(m), q, k, v, score_mod, bm, iters)
                except Exception as e:  # one line, then the next cell
                    print(f"bench N={n} {cell} ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
                    continue
                rows.append((str(dtype)[6:], n, cell, t["off"], t[mode]))
                print(f"bench {rows[-1][0]:8s} N={n:5d} {cell:12s} stock {t['off'] * 1e3:8.3f} ms  utlx "
                      f"{t[mode] * 1e3:8.3f} ms  {t['off'] / t[mode]:5.2f}x", flush=True)
    speedups = [r[3] / r[4] for r in rows] or [float("nan")]
    geo = math.exp(sum(map(math.log, speedups)) / len(speedups))
    print(f"utlx.inductor stats: {utlx.inductor.stats}")
    print(f"geomean speedup {geo:.3f}x, min {min(speedups):.3f}x over {len(rows)} cells", flush=True)
    print("| dtype | N_CTX | cell | stock ms | utlx ms | speedup |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3] * 1e3:.3f} | {r[4] * 1e3:.3f} | {r[3] / r[4]:.2f}x |")


def block(args: argparse.Namespace) -> bool:
    """``--block``: the transformer block, stock vs utlx; True when every mask passed its check."""
    shape = inductor_block.TINY if args.block_shape == "tiny" else inductor_block.H200
    if shape is inductor_block.H200 and args.device == "cpu":
        raise SystemExit("bench_inductor --block: the h200 shape on the CPU runs for hours: use --block-shape tiny")
    if args.block_dtype:
        shape = dataclasses.replace(shape, dtype=getattr(torch, args.block_dtype))
    print(f"block {args.block_shape} {shape} on {args.device}, utlx mode {args.block_mode}", flush=True)

    def write(rows: list[dict], done: bool = False) -> None:
        if args.json:
            ok = bool(rows) and all(r["ok"] for r in rows)
            with open(args.json, "w") as f:
                json.dump({"torch": torch.__version__, "triton": __import__("triton").__version__,
                           "device": args.device, "shape": str(shape), "mode": args.block_mode, "complete": done,
                           "ok": ok, "rows": rows}, f, indent=1, default=str)

    rows = inductor_block.run(shape, args.device, tuple(args.masks), args.block_mode, args.iters,
                              args.block_budget_s, emit=lambda line: print(line, flush=True), on_row=write)
    write(rows, done=True)
    ok = bool(rows) and all(r["ok"] for r in rows)
    print(f"block {'PASSED' if ok else 'FAILED'}", flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--block", action="store_true", help="the transformer block (see the module docstring)")
    ap.add_argument("--quick", action="store_true", help="bf16 only")
    ap.add_argument("--mode", default="force", choices=("force", "allow"))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                    help="--block only (--check/--bench need cuda)")
    ap.add_argument("--block-shape", default="h200", choices=("h200", "tiny"))
    ap.add_argument("--block-dtype", choices=("float32", "float16", "bfloat16"), help="override the shape's")
    ap.add_argument("--block-mode", default="allow", choices=("force", "allow"))
    ap.add_argument("--masks", nargs="+", default=list(inductor_block.MASKS), choices=inductor_block.MASKS)
    ap.add_argument("--block-budget-s", type=float, default=float("inf"),
                    help="start no further mask after this many seconds")
    ap.add_argument("--json", help="--block: write the result rows to this file")
    args = ap.parse_args(argv)
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA device"
    print(f"torch {torch.__version__}, triton {__import__('triton').__version__}, {gpu}", flush=True)
    if (args.check or args.bench or not args.block) and not torch.cuda.is_available():
        print("bench_inductor: --check and --bench need a CUDA GPU (--block runs on the CPU too)", file=sys.stderr)
        return 2
    ok = True
    if args.check:
        ok = check(args.mode)
        print(f"check {'PASSED' if ok else 'FAILED'}", flush=True)
    if args.bench or not (args.check or args.block):
        bench(args.mode, args.iters, args.quick)
    if args.block:
        ok &= block(args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
