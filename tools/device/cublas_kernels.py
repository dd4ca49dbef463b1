"""Which kernel cuBLAS runs for each GEMM shape of ``tools/bench/gemm.py``, read from the torch profiler.

Why: cuBLAS's kernel names carry its tile, cluster shape and schedule (``..._128x256x64_cluster2x1x1_...``),
which says what design the reference uses at each shape. Not a test and not a benchmark.

Usage (on the device): ``python tools/device/cublas_kernels.py [--dtypes fp16 bf16]``; prints one line per
(dtype, shape) and writes ``cublas_kernels.json`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os

SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024), (4096, 16384, 4096),
          (16384, 4096, 4096), (1024, 16384, 8192), (8192, 8192, 16384), (16, 8192, 8192), (128, 8192, 8192),
          (512, 8192, 8192)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtypes", nargs="+", default=["fp16", "bf16"])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    out = []
    for name in args.dtypes:
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
        for M, N, K in SHAPES:
            a = torch.randn(M, K, device="cuda", dtype=dtype)
            b = torch.randn(K, N, device="cuda", dtype=dtype)
            torch.matmul(a, b)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                torch.matmul(a, b)
                torch.cuda.synchronize()
            kernels = [e.name for e in prof.events() if e.device_type.name == "CUDA"]
            print(f"{name} {M}x{N}x{K}: {kernels}", flush=True)
            out.append({"dtype": name, "M": M, "N": N, "K": K, "kernels": kernels})
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "cublas_kernels.json"), "w") as f:
        json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "shapes": out}, f, indent=1)


if __name__ == "__main__":
    main()
