"""Compile one AMD tutorial case (``amd_cases.py``) through its host code for its target, in its own process.

    python run_amd_case.py CASE_ID             # prints one line: RESULT {json}
    python run_amd_case.py --summary [CASE..]  # every case (one subprocess each), then a table of results

Why a process per case: several files set environment variables at import (``TRITON_DISABLE_POST_MISCHED``),
autotuner caches live in module globals, and an MLIR crash must not take the test session down.

``RESULT`` holds ``ok``, the target, and per launch the kernel name, grid, LDS bytes and the AMDGCN counts
of every promise pattern; or ``first_error`` (``Type: message`` of what stopped the run, as the xfail
reasons in ``expected_amd.py`` quote it). The artifacts come from a private Triton cache (``TRITON_CACHE_DIR``
is set by the caller, or a temporary one here).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (HERE, HERE.parent, HERE.parent / "tutorials"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

#: Everything a result counts (the promise patterns and a few more for the summary).
PATTERNS = ("MFMA", "DIRECT_TO_LDS", "BUFFER_LOAD", "DS_READ", "DS_WRITE", "SETPRIO", "READFIRSTLANE")


def first_error(exc: BaseException) -> str:
    """``Type: message`` of the error that stopped a run: the innermost cause (a compile error inside a
    ``@jit`` helper is wrapped once per call level), a CompilationError's last line rather than its excerpt."""
    from triton.compiler.errors import CompilationError

    while exc.__cause__ is not None:
        exc = exc.__cause__
    if isinstance(exc, CompilationError):
        lines = [line for line in str(exc).splitlines() if line.strip()]
        return f"{type(exc).__name__}: {lines[-1] if lines else ''}".strip()
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def run_case(case_id: str) -> dict:
    import amd_cases
    import fbtriton_checkout
    import torch
    import tutorial_package
    import utlx  # noqa: F401  (the implementation under test: provides triton.language.extra.tlx)
    from compile_only_gpu import compile_only_gpu
    from triton.backends.compiler import GPUTarget

    case = amd_cases.BY_ID[case_id]
    tutorials = fbtriton_checkout.tutorials_dir()
    if tutorials is None:
        return {"case": case_id, "ok": False, "first_error": "SkipReason: " + fbtriton_checkout.unavailable_reason()}
    result: dict = {"case": case_id, "arch": case.arch}
    if case.arch not in ("gfx942", "gfx950"):
        result.update(ok=False, first_error=f"NoTarget: hip:{case.arch} has no compile-only stand-in "
                      "(Triton has no gfx1250 shared-memory table; outside issue 17's gfx942/gfx950)")
        return result
    start = time.time()
    with compile_only_gpu(GPUTarget("hip", case.arch, 64)) as gpu, tutorial_package.tutorials_package(tutorials):
        try:
            case.run(tutorial_package.load(case.module), torch)
            result["ok"] = True
        except Exception as exc:
            traceback.print_exc()
            result.update(ok=False, first_error=first_error(exc))
        result["launches"] = [_launch_facts(launch, amd_cases) for launch in gpu.launches]
    result["seconds"] = round(time.time() - start, 1)
    return result


def _launch_facts(launch, amd_cases) -> dict:
    facts = {"name": launch.name, "grid": list(launch.grid), "shared": launch.shared, "num_warps": launch.num_warps}
    try:
        asm, ttgir = launch.asm("amdgcn"), launch.asm("ttgir")
    except KeyError as exc:
        facts["missing"] = str(exc)
        return facts
    target = re.search(r'\.amdgcn_target "([^"]+)"', asm)
    facts["amdgcn_target"] = target.group(1) if target else None
    facts["placeholders_left"] = "utlx|" in ttgir
    facts["warp_pipeline_stages"] = len(re.findall(r"triton\.warp_pipeline\.stage", ttgir))
    facts["counts"] = {name: len(re.findall(getattr(amd_cases, name), asm)) for name in PATTERNS}
    return facts


def _subprocess(case_id: str, timeout: float, cache: str) -> dict:
    import amd_cases

    env = dict(os.environ, TRITON_CACHE_DIR=cache, **amd_cases.BY_ID[case_id].env)
    from case_subprocess import run_case_script

    return run_case_script([sys.executable, str(Path(__file__).resolve()), case_id], case_id, timeout, env)


def run_in_subprocess(case_id: str, timeout: float = 900.0, cache: str | None = None) -> dict:
    """:func:`run_case` in a fresh interpreter; a crash or timeout becomes a ``first_error``."""
    if cache is not None:
        return _subprocess(case_id, timeout, cache)
    with tempfile.TemporaryDirectory(prefix="utlx-amd-corpus-") as tmp:
        return _subprocess(case_id, timeout, tmp)


def summary(case_ids: list[str]) -> int:
    import amd_cases
    import triton

    rows = []
    for case_id in case_ids:
        r = run_in_subprocess(case_id)
        counts: dict = {}
        for launch in r.get("launches", []):
            for k, v in launch.get("counts", {}).items():
                counts[k] = counts.get(k, 0) + v
        rows.append(r)
        status = "OK  " if r["ok"] else "FAIL"
        print(f"{status} {case_id:34s} {r.get('seconds', '-'):>6}s launches={len(r.get('launches', []))} "
              f"{counts if r['ok'] else r.get('first_error', '')[:300]}", flush=True)
    gfx9 = [r for r in rows if amd_cases.BY_ID[r["case"]] in amd_cases.GFX9]
    print(f"Triton {triton.__version__}: {sum(r['ok'] for r in gfx9)} / {len(gfx9)} gfx942/gfx950 kernel entries "
          "compile")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", nargs="*")
    ap.add_argument("--summary", action="store_true", help="run cases in subprocesses and print a table")
    args = ap.parse_args(argv)
    import amd_cases

    unknown = [c for c in args.case if c not in amd_cases.BY_ID]
    if unknown:
        ap.error(f"unknown case {unknown}; known: {', '.join(amd_cases.BY_ID)}")
    if args.summary:
        return summary(args.case or [c.id for c in amd_cases.CASES])
    if len(args.case) != 1:
        ap.error("give one case id (or --summary)")
    if not os.environ.get("TRITON_CACHE_DIR"):
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="utlx-amd-corpus-")
    result = run_case(args.case[0])
    print("RESULT " + json.dumps(result), flush=True)
    return 0 if result["ok"] else 2


if __name__ == "__main__":
    sys.exit(main())
