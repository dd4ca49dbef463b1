"""A/B evidence for issue 15 on a GPU: the pipelined TLX GEMM with and without utlx's cp.async drain.

Runs the 64-row tile (and a 128-row control) on the shapes of issue 15, several times each on fresh random
data, once with the lowering as shipped and once with ``utlx.compiler.drain.insert_drains`` switched off,
each mode in its own process and Triton cache. Prints the worst relative error per (mode, tile, shape).
Not a test: the "off" mode is expected to fail sometimes (it is a race). Usage on the H200:
``python tools/device/drain_ab.py [--reps 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

SHAPES = [(4096, 4096, 4096), (2048, 2048, 128), (1000, 1000, 1000), (512, 768, 192), (8192, 8192, 8192),
          (64, 128, 128), (128, 256, 80)]
TILES = [(64, 128, 64, 3, 4), (64, 128, 64, 4, 4), (128, 128, 64, 4, 4)]


def _child(mode: str, reps: int) -> None:
    import torch
    import triton
    import utlx  # noqa: F401
    from utlx.compiler.common import drain
    from utlx.kernels.nvidia.hopper_pipelined import matmul_kernel_pipelined_hopper as kernel

    if mode == "off":
        drain.insert_drains = lambda module, builder, allocs: []
    out = []
    for bm, bn, bk, st, nw in TILES:
        for M, N, K in SHAPES:
            worst = 0.0
            for rep in range(reps):
                g = torch.Generator(device="cuda").manual_seed(rep + 7)
                a = torch.randn((M, K), device="cuda", generator=g).half()
                b = torch.randn((K, N), device="cuda", generator=g).half()
                c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
                grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
                kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                             c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
                             NUM_STAGES=st, num_warps=nw)
                ref = a.float() @ b.float()
                err = float((c.float() - ref).norm() / ref.norm())
                worst = err if err != err else max(worst, err)
            out.append({"mode": mode, "tile": f"{bm}x{bn}x{bk}-s{st}-w{nw}", "shape": f"{M}x{N}x{K}", "err": worst})
    print("RESULT " + json.dumps(out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--child", choices=("on", "off"))
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.reps)
        return 0
    rows = []
    for mode in ("off", "on"):
        env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(prefix=f"drain-{mode}-"))
        proc = subprocess.run([sys.executable, __file__, "--child", mode, "--reps", str(args.reps)], env=env,
                              capture_output=True, text=True)
        line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode or not line:
            print(proc.stdout[-3000:], proc.stderr[-3000:])
            return 1
        rows += json.loads(line[0][7:])
    print(f"{'tile':<20} {'shape':<16} {'drain off':>12} {'drain on':>12}")
    by = {(r["mode"], r["tile"], r["shape"]): r["err"] for r in rows}
    for bm, bn, bk, st, nw in TILES:
        t = f"{bm}x{bn}x{bk}-s{st}-w{nw}"
        for M, N, K in SHAPES:
            s = f"{M}x{N}x{K}"
            print(f"{t:<20} {s:<16} {by[('off', t, s)]:>12.3g} {by[('on', t, s)]:>12.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
