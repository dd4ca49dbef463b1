"""Run every benchmark (GEMM, flash attention, then tritonx overhead) into one output folder.

    python tools/bench/run.py [--out DIR] [--only gemm attention overhead]
    # DIR defaults to $TRITONX_BENCH_OUT, $OUT, or bench-out

What `tools/device/run_gpu_tests.sh --bench` runs on the GPU machine; results go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = ("gemm", "attention", "overhead")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("TRITONX_BENCH_OUT") or os.environ.get("OUT") or "bench-out")
    ap.add_argument("--only", nargs="+", choices=STEPS, help="run only these benchmarks (default: all)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = {
        "gemm": [sys.executable, str(HERE / "gemm.py"), "--out", str(out), "--budget-s", "470", "--rounds", "3"],
        "attention": [sys.executable, str(HERE / "attention.py"), "--out", str(out), "--budget-s", "180"],
        "overhead": [sys.executable, str(HERE / "overhead.py"), "--json", str(out / "overhead.json")],
    }
    worst = 0
    for cmd in [steps[name] for name in (args.only or STEPS)]:
        print("$", " ".join(cmd), flush=True)
        worst = max(worst, subprocess.call(cmd))
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
