"""Where a GEMM call's host time goes: utlx.matmul vs cuBLAS vs a plain Triton launch, piece by piece.

Measures, at a shape small enough that the GPU never throttles the loop, the wall time per call of a loop
of back-to-back calls (no sync inside), then cProfile's top entries for utlx.matmul. Usage on a GPU:
``python tools/bench/host_path.py [--calls 2000] [--shape 256,256,256]``. Prints a table; no timing is
asserted anywhere (this is a measuring tool).
"""

from __future__ import annotations

import argparse
import cProfile
import io
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--shape", default="256,256,256")
    args = ap.parse_args()
    import importlib

    import torch
    import triton
    import utlx
    from triton.tools.tensor_descriptor import TensorDescriptor

    mm = importlib.import_module("utlx.matmul")  # the module (utlx.matmul the attribute is the function)
    M, N, K = map(int, args.shape.split(","))
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    utlx.matmul(a, b)
    report = mm.report_for(a, b)
    run = mm._PLANS[mm._problem_key(a, b)]
    stream = torch.cuda.current_stream().cuda_stream
    rows = [
        ("torch.matmul(a, b)", lambda: torch.matmul(a, b)),
        ("torch.matmul(a, b, out=c)", lambda: torch.matmul(a, b, out=c)),
        ("torch.empty(M, N)", lambda: torch.empty((M, N), device=a.device, dtype=a.dtype)),
        ("utlx.matmul(a, b)", lambda: utlx.matmul(a, b)),
        ("chosen launcher run(a, b, c)", lambda: run(a, b, c)),
        ("_problem_key(a, b)", lambda: mm._problem_key(a, b)),
        ("3x TensorDescriptor.from_tensor", lambda: (TensorDescriptor.from_tensor(a, [128, 64]),
                                                    TensorDescriptor.from_tensor(b, [64, 128]),
                                                    TensorDescriptor.from_tensor(c, [128, 128]))),
        ("driver get_current_stream", lambda: triton.runtime.driver.active.get_current_stream(0)),
        ("torch.cuda.current_stream().cuda_stream", lambda: torch.cuda.current_stream().cuda_stream),
    ]
    print(f"shape {M}x{N}x{K} fp16; utlx.matmul chose {report.winner.id if report else '?'}; stream {stream}")
    for name, fn in rows:
        print(f"  {per_call_us(fn, args.calls):8.2f} us  {name}")
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
