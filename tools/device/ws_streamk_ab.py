"""First GPU check of the warp-specialized stream-K GEMM (``utlx.kernels.nvidia.hopper_ws_streamk``) against the
cooperative kernel it extends and cuBLAS, in one process on the H200.

Correctness first (fresh random data, float32 reference, several seeds, one reused workspace that must stay
zero), then each implementation timed in a plain loop (``do_bench``, median) on the shapes whose last round
is partial. Not a test and not the headline benchmark (``tools/bench/gemm.py`` is): the kernel is not a
``utlx.matmul`` candidate until this A/B says it should be. Usage: ``python tools/device/ws_streamk_ab.py``.
"""

from __future__ import annotations

import argparse
import functools
import math

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (1000, 1000, 1000)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtypes", nargs="+", default=["float16", "bfloat16"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rep-ms", type=int, default=60)
    args = ap.parse_args()

    import torch
    import triton
    import utlx  # noqa: F401
    from utlx.kernels.nvidia import hopper_ws_persistent as ws
    from utlx.kernels.nvidia import hopper_ws_streamk as wsk

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    wrong = []
    for dtype_name in args.dtypes:
        dtype = getattr(torch, dtype_name)
        for M, N, K in SHAPES:
            for cfg in range(len(wsk.CONFIGS)):
                const = wsk.CONFIGS[cfg][0]
                wspace = torch.zeros(wsk.workspace_numel(M, N, const, sms), device="cuda")
                worst = 0.0
                for seed in range(args.seeds):
                    g = torch.Generator(device="cuda").manual_seed(seed + M)
                    a = torch.randn((M, K), device="cuda", generator=g).to(dtype)
                    b = torch.randn((K, N), device="cuda", generator=g).to(dtype)
                    c = torch.full((M, N), float("nan"), device="cuda", dtype=dtype)
                    wsk.launch(a, b, c, config=cfg, num_sms=sms, workspace=wspace)
                    ref = a.float() @ b.float()
                    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                    err = err if math.isfinite(err) else math.inf  # an unwritten (NaN) C must not read as 0
                    worst = max(worst, err)
                    left = wspace.count_nonzero().item()
                    assert left == 0, f"workspace left {left} words set"
                ok = worst < (1e-2 if dtype == torch.bfloat16 else 2e-3)
                if not ok:
                    wrong.append(f"{dtype_name} {M}x{N}x{K} cfg{cfg}")
                print(f"check {dtype_name} {M}x{N}x{K} cfg{cfg}: worst rel err {worst:.2e} {'ok' if ok else 'WRONG'}",
                      flush=True)
        for M, N, K in SHAPES[:3]:
            a = torch.randn((M, K), device="cuda").to(dtype)
            b = torch.randn((K, N), device="cuda").to(dtype)
            c = torch.empty((M, N), device="cuda", dtype=dtype)
            flops = 2 * M * N * K
            calls = {"cuBLAS": functools.partial(torch.matmul, a, b)}
            for cfg, (const, nw) in enumerate(ws.CONFIGS):
                if const["BLOCK_SIZE_N"] == 256:
                    calls[f"coop cfg{cfg}"] = functools.partial(ws.make_launcher(M, N, (const, nw), sms), a, b, c)
            for cfg in range(len(wsk.CONFIGS)):
                wspace = torch.zeros(wsk.workspace_numel(M, N, wsk.CONFIGS[cfg][0], sms), device="cuda")
                run = wsk.make_launcher(M, N, wsk.CONFIGS[cfg], sms, wspace)
                calls[f"ws-streamk cfg{cfg}"] = functools.partial(run, a, b, c)
            row = {name: triton.testing.do_bench(fn, rep=args.rep_ms) for name, fn in calls.items()}
            print(f"time {dtype_name} {M}x{N}x{K}: " + ", ".join(f"{k} {flops / ms / 1e9:.1f} TFLOPS"
                                                                for k, ms in row.items()), flush=True)

    if wrong:
        raise SystemExit(f"ws_streamk_ab: wrong results for {', '.join(wrong)}")


if __name__ == "__main__":
    main()
