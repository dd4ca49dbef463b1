"""Run one tutorial case (``cases.py``) through its host function and check it against the float32 reference.

    TRITON_INTERPRET=1 python run_tutorial.py CASE_ID [--seed N] [--tutorials DIR]     # CPU, interpreter
    python run_tutorial.py CASE_ID [CASE_ID ...] --device cuda [--impl utlx|meta]        # a real GPU

On a GPU the tutorial's own autotuning runs (every config it keeps after its own pruning); ``--impl meta``
runs the same check on Meta's build, in an environment prepared by ``tools/device/tlx_tutorial_tests.py``
(its wheel on ``sys.path``, this repo's utlx not).

Why a script run in a subprocess: ``TRITON_INTERPRET=1`` must be set before ``import triton`` (Triton's own
``@jit`` library functions are decorated at import), and the pytest process compiles for GPU targets.
The compile-only driver is installed here too, because the tutorials ask for the active driver's torch
device at import and for the SM count in their host functions; it reports 2 SMs so that persistent kernels
loop over several tiles per program (and pingpong consumers both get work) on these small shapes.

Prints one line ``RESULT {json}`` per case and exits 0 when every output matches, 1 on a wrong result, 2
when a run raised (``first_error`` then holds the exception, as the xfail reasons quote it). Several cases
share one process (on a GPU that saves a torch/Triton start-up per case); each is caught on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from contextlib import nullcontext
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
    ap.add_argument("case", nargs="+", help="case ids of cases.py")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tutorials", help="tlx/tutorials folder (default: meta_wheel.tutorials_dir())")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--impl", choices=("utlx", "meta"), default="utlx", help="whose TLX runs the tutorial")
    args = ap.parse_args(argv)
    if args.device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        print("run_tutorial.py: set TRITON_INTERPRET=1 (on the CPU results are checked under Triton's interpreter)",
              file=sys.stderr)
        return 3
    import cases
    import meta_wheel
    from tlx_tutorials_pytest import import_implementation

    unknown = [c for c in args.case if c not in cases.BY_ID]
    if unknown:
        ap.error(f"unknown case {unknown}; known: {', '.join(cases.BY_ID)}")
    tutorials = Path(args.tutorials) if args.tutorials else meta_wheel.tutorials_dir()
    if tutorials is not None:  # the implementation first: it provides the `triton.language.extra.tlx` alias
        import_implementation(args.impl, tutorials)
    worst = 0
    for case_id in args.case:
        result: dict = {"case": case_id, "seed": args.seed, "device": args.device, "impl": args.impl}
        if tutorials is None:
            result.update(ok=False, first_error=meta_wheel.unavailable_reason())
        else:
            result.update(run_case(cases.BY_ID[case_id], tutorials, args.seed, args.device))
        print("RESULT " + json.dumps(result), flush=True)
        worst = max(worst, 0 if result["ok"] else 2 if "first_error" in result else 1)
    return worst


def run_case(case, tutorials: Path, seed: int, device: str) -> dict:
    """One case through its host function: {"ok", "max_abs_error"} or {"ok": False, "first_error"}."""
    import torch
    import tutorial_package
    from compile_only_gpu import compile_only_gpu

    host = compile_only_gpu(props={"multi_processor_count": INTERPRETER_SMS}) if device == "cpu" else nullcontext()
    try:
        with host, tutorial_package.tutorials_package(tutorials):
            return compare(case.run(tutorial_package.load(case.tutorial), torch, seed, device))
    except Exception as exc:
        traceback.print_exc()
        return {"ok": False, "first_error": first_error(exc)}


if __name__ == "__main__":
    sys.exit(main())
