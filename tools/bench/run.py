"""Run every benchmark (GEMM, then tritonx overhead) into one output folder.

    python tools/bench/run.py [--out DIR]      # DIR defaults to $TRITONX_BENCH_OUT, $OUT, or bench-out

What `tools/device/run_gpu_tests.sh --bench` runs on the GPU machine; results go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("TRITONX_BENCH_OUT") or os.environ.get("OUT") or "bench-out")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = [
        [sys.executable, str(HERE / "gemm.py"), "--out", str(out), "--budget-s", "470", "--rounds", "3"],
        [sys.executable, str(HERE / "overhead.py"), "--json", str(out / "overhead.json")],
    ]
    worst = 0
    for cmd in steps:
        print("$", " ".join(cmd), flush=True)
        worst = max(worst, subprocess.call(cmd))
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
