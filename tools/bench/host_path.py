"""Where a GEMM call's host time goes: utlx.matmul vs cuBLAS vs the pieces of utlx's launch path.

Measures, at a shape small enough that the GPU never throttles the loop, the wall time per call of a loop
of back-to-back calls (no sync inside), then cProfile's top entries for utlx.matmul. Usage on a GPU:
``python tools/bench/host_path.py [--calls 2000] [--shape 256,256,256] [--dtype fp16|bf16] [--layout rr|rc|cr|cc]``.
Prints a table (``--json PATH`` also writes it); no timing is asserted anywhere (this is a measuring tool).
The allocation rows compare torch's ways to allocate the output (utlx.matmul uses the positional
``torch.empty(M, N, dtype=, device=)`` form).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import time


def per_call_us(fn, calls: int) -> float:
    import torch

    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    dt = time.perf_counter() - t0
    torch.cuda.synchronize()
    return dt / calls * 1e6


def operands(M: int, N: int, K: int, dtype, layout: str):
    import torch

    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(K, N, device="cuda", dtype=dtype)
    if layout[0] == "c":
        a = a.T.contiguous().T
    if layout[1] == "c":
        b = b.T.contiguous().T
    return a, b


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--shape", default="256,256,256")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--layout", default="rr", choices=["rr", "rc", "cr", "cc"], help="A, B row- or column-major")
    ap.add_argument("--json", help="also write the table here")
    ap.add_argument("--no-profile", action="store_true")
    args = ap.parse_args(argv)
    import importlib

    import torch
    import triton
    import utlx
    from triton.tools.tensor_descriptor import TensorDescriptor

    mm = importlib.import_module("utlx.matmul")  # the module (utlx.matmul the attribute is the function)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    M, N, K = map(int, args.shape.split(","))
    a, b = operands(M, N, K, dtype, args.layout)
    c = torch.empty(M, N, device="cuda", dtype=dtype)
    utlx.matmul(a, b)
    report = mm.report_for(a, b) or mm.report_for(a.contiguous(), b.contiguous())
    plan = mm._PLANS[mm.plan_key(a, b)]
    launch = getattr(plan, "inner", plan)  # a copying plan wraps the launch
    pa, pb = a.data_ptr(), b.data_ptr()
    dev, device = a.device.index, a.device
    rows = [
        ("torch.matmul(a, b)", lambda: torch.matmul(a, b)),
        ("torch.matmul(a, b, out=c)", lambda: torch.matmul(a, b, out=c)),
        ("utlx.matmul(a, b)", lambda: utlx.matmul(a, b)),
        ("torch.empty((M, N), device=, dtype=)", lambda: torch.empty((M, N), device=device, dtype=dtype)),
        ("torch.empty(M, N, dtype=, device=)", lambda: torch.empty(M, N, dtype=dtype, device=device)),
        ("torch.empty_strided((M, N), (N, 1), ...)", lambda: torch.empty_strided((M, N), (N, 1), dtype=dtype,
                                                                                  device=device)),
        ("a.new_empty((M, N))", lambda: a.new_empty((M, N))),
        ("plan_key(a, b)", lambda: mm.plan_key(a, b)),
        ("plan lookup (key + dict)", lambda: mm._PLANS[mm.plan_key(a, b)]),
        ("launch.matmul(a, b, pa, pb) (alloc + launch)", lambda: launch.matmul(a, b, pa, pb)),
        ("launch(a, b, c) (launch only)", lambda: launch(a, b, c)),
        ("3x TensorDescriptor.from_tensor", lambda: (TensorDescriptor.from_tensor(a, [128, 64]),
                                                    TensorDescriptor.from_tensor(b, [64, 128]),
                                                    TensorDescriptor.from_tensor(c, [128, 128]))),
        ("driver get_current_stream", lambda: triton.runtime.driver.active.get_current_stream(0)),
        ("torch.cuda.current_stream().cuda_stream", lambda: torch.cuda.current_stream().cuda_stream),
    ]
    d = getattr(launch, "direct", None)
    if d is not None:
        rows.append(("hooks_idle()", d.hooks_idle))
        rows.append(("stream(dev)", lambda: d.stream(dev)))
        pool = getattr(launch, "pool", None)  # split-K: the per-stream self-cleaning workspace
        if d.call is not None and pool is not None:
            table, stream = pool.table(dev), d.stream(dev)
            launch(a, b, c)  # makes the current stream's workspace
            expanded = launch._expanded(a, b, c, pa, pb, c.data_ptr(), table[stream][0])
            rows.append(("C launcher call alone (args prebuilt)", lambda: d.call(d.stream(dev), expanded)))
            rows.append(("split-K: capture check", launch.capturing))
            rows.append(("split-K: workspace lookup (stream + dict)", lambda: table.get(d.stream(dev))))
            rows.append(("split-K: torch.zeros(workspace) (the old per-call way)",
                         lambda: torch.zeros(launch.workspace_numel, dtype=torch.float32, device=device)))
        elif d.call is not None:
            expanded = launch._expanded(a, b, c, pa, pb, c.data_ptr())
            rows.append(("C launcher call alone (args prebuilt)", lambda: d.call(d.stream(dev), expanded)))
    if getattr(launch, "caches", None):
        cache = launch.caches[0]
        rows.append(("descriptor cache hit", lambda: cache.get(a, pa)))
    winner = report.winner.id if report and report.winner else "?"
    print(f"shape {M}x{N}x{K} {args.dtype} layout {args.layout}; utlx.matmul chose {winner}; "
          f"direct launch: {bool(d is not None and d.call is not None)}")
    table = {}
    for name, fn in rows:
        table[name] = round(per_call_us(fn, args.calls), 2)
        print(f"  {table[name]:8.2f} us  {name}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"shape": [M, N, K], "dtype": args.dtype, "layout": args.layout, "winner": winner,
                       "us_per_call": table, "torch": torch.__version__, "triton": triton.__version__}, f, indent=1)
    if not args.no_profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            utlx.matmul(a, b)
        prof.disable()
        torch.cuda.synchronize()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(18)
        print(out.getvalue()[-6000:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
