"""Run one tutorial case (``cases.py``) on the CPU and check it against the float32 reference.

    TRITON_INTERPRET=1 python run_tutorial.py CASE_ID [--seed N] [--tutorials DIR]

Why a script run in a subprocess: ``TRITON_INTERPRET=1`` must be set before ``import triton`` (Triton's own
``@jit`` library functions are decorated at import), and the pytest process compiles for GPU targets.
The compile-only driver is installed here too, because the tutorials ask for the active driver's torch
device at import and for the SM count in their host functions; it reports 2 SMs so that persistent kernels
loop over several tiles per program (and pingpong consumers both get work) on these small shapes.

Prints one line ``RESULT {json}`` and exits 0 when every output matches, 1 on a wrong result, 2 when the
run raised (``first_error`` then holds the exception, as the xfail reasons quote it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (HERE, HERE.parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

INTERPRETER_SMS = 2


def first_error(exc: BaseException) -> str:
    """``Type: message`` of the error that stopped the run (a CompilationError's cause, not its source excerpt)."""
    from triton.compiler.errors import CompilationError

    if isinstance(exc, CompilationError):
        text = [line for line in str(exc).splitlines() if line.strip()]
        return f"{type(exc).__name__}: {text[-1] if text else ''}".strip()
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"


def compare(checks: list) -> dict:
    """Max abs error per output and whether all are within tolerance (NaN/Inf never are)."""
    import torch

    errors, ok = [], True
    for out, ref, atol, rtol in checks:
        diff = (out.float() - ref.float()).abs()
        bound = atol + rtol * ref.float().abs()
        good = bool(torch.isfinite(out.float()).all()) and bool((diff <= bound).all())
        errors.append(float(diff.max()) if diff.numel() else 0.0)
        ok = ok and good
    return {"ok": ok, "max_abs_error": errors}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tutorials", help="tlx/tutorials folder (default: meta_wheel.tutorials_dir())")
    args = ap.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") != "1":
        print("run_tutorial.py: set TRITON_INTERPRET=1 (this script checks results under Triton's interpreter)",
              file=sys.stderr)
        return 3

    import cases
    import meta_wheel
    import torch
    import tutorial_package
    import utlx  # noqa: F401  (the implementation under test: ops, interpreter support, the tlx alias)
    from compile_only_gpu import compile_only_gpu

    case = cases.BY_ID[args.case]
    tutorials = Path(args.tutorials) if args.tutorials else meta_wheel.tutorials_dir()
    if tutorials is None:
        print("RESULT " + json.dumps({"case": case.id, "ok": False, "first_error": meta_wheel.unavailable_reason()}))
        return 2
    result: dict = {"case": case.id, "seed": args.seed}
    try:
        with compile_only_gpu(props={"multi_processor_count": INTERPRETER_SMS}), \
                tutorial_package.tutorials_package(tutorials):
            checks = case.run(tutorial_package.load(case.tutorial), torch, args.seed)
        result.update(compare(checks))
    except Exception as exc:
        traceback.print_exc()
        result.update(ok=False, first_error=first_error(exc))
        print("RESULT " + json.dumps(result))
        return 2
    print("RESULT " + json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
