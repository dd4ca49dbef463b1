"""Run one Blackwell tutorial case (``blackwell_cases.py``) in its own process: compile for cuda:100, or interpret.

    python run_blackwell_case.py CASE_ID                          # compile-only for cuda:100: RESULT {json}
    TRITON_INTERPRET=1 python run_blackwell_case.py CASE_ID --seed N   # under the interpreter, vs the reference
    python run_blackwell_case.py --summary [CASE ...]             # every case, one subprocess each, then a table

Why a process per case: ``TRITON_INTERPRET`` must be set before ``import triton``, autotuner caches live in
module globals, and an MLIR abort must not take the test session down. The tutorials come from the wheel
(``meta_wheel``) or the fork (``fbtriton_checkout``), as the case says.

``RESULT`` holds ``ok`` and, compiled, per launch the kernel name, whether it targets ``sm_100a``, whether a
utlx placeholder reached the final TTGIR and which of the case's PTX patterns it shows; interpreted, the max
abs error per checked output; or ``first_error`` (``Type: message``, as ``expected_blackwell.py`` quotes it).
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
for _p in (HERE, HERE.parent, HERE.parent / "fbtriton"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

INTERPRETER_SMS = 2


def tutorials_for(source: str) -> tuple[Path | None, str]:
    """The tutorials folder of ``source`` ("wheel" / "fork") and, when absent, why."""
    if source == "wheel":
        import meta_wheel

        found = meta_wheel.tutorials_dir()
        return found, "" if found else meta_wheel.unavailable_reason()
    import fbtriton_checkout

    found = fbtriton_checkout.tutorials_dir()
    return found, "" if found else fbtriton_checkout.unavailable_reason()


def run_case(case_id: str, seed: int) -> dict:
    import blackwell_cases
    import torch
    import tutorial_package
    import utlx  # noqa: F401  (the implementation under test: provides triton.language.extra.tlx)
    from compile_only_gpu import compile_only_gpu
    from run_amd_case import first_error
    from run_tutorial import compare
    from triton.backends.compiler import GPUTarget

    case = blackwell_cases.BY_ID[case_id]
    interpreting = os.environ.get("TRITON_INTERPRET") == "1"
    result: dict = {"case": case_id, "mode": "interpret" if interpreting else "compile", "seed": seed}
    tutorials, why = tutorials_for(case.source)
    if tutorials is None:
        return dict(result, ok=False, first_error="SkipReason: " + why)
    props = {"multi_processor_count": INTERPRETER_SMS} if interpreting else None
    start = time.time()
    with compile_only_gpu(GPUTarget("cuda", 100, 32), props=props) as gpu, \
            tutorial_package.tutorials_package(tutorials):
        try:
            checks = case.run(tutorial_package.load(case.module), torch, seed)
            if interpreting:
                result.update(compare([c for c in checks if c[1] is not None]))
            else:
                result["ok"] = True
        except Exception as exc:
            traceback.print_exc()
            result.update(ok=False, first_error=first_error(exc))
        if not interpreting:
            result["launches"] = [_launch_facts(launch, case.ptx) for launch in gpu.launches]
    result["seconds"] = round(time.time() - start, 1)
    return result


def _launch_facts(launch, patterns: tuple[str, ...]) -> dict:
    facts: dict = {"name": launch.name, "grid": list(launch.grid), "num_warps": launch.num_warps}
    try:
        ptx, ttgir = launch.asm("ptx"), launch.asm("ttgir")
    except KeyError as exc:
        return dict(facts, missing=str(exc))
    facts["sm_100a"] = bool(re.search(r"^\.target sm_100a", ptx, re.M))
    facts["placeholders_left"] = "utlx|" in ttgir
    facts["matched"] = [p for p in patterns if re.search(p, ptx)]
    return facts


def _subprocess(case_id: str, timeout: float, cache: str, interpret: bool, seed: int) -> dict:
    env = dict(os.environ, TRITON_CACHE_DIR=cache)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    cmd = [sys.executable, str(Path(__file__).resolve()), case_id, "--seed", str(seed)]
    from case_subprocess import run_case_script

    return run_case_script(cmd, case_id, timeout, env)


def run_in_subprocess(case_id: str, timeout: float = 900.0, cache: str | None = None, interpret: bool = False,
                      seed: int = 0) -> dict:
    """:func:`run_case` in a fresh interpreter; a crash or timeout becomes a ``first_error``."""
    if cache is not None:
        return _subprocess(case_id, timeout, cache, interpret, seed)
    with tempfile.TemporaryDirectory(prefix="utlx-blackwell-corpus-") as tmp:
        return _subprocess(case_id, timeout, tmp, interpret, seed)


def summary(case_ids: list[str], interpret: bool, errors_to: str | None = None) -> int:
    """One line per case and a count; ``errors_to``: a JSON file of ``{case: first_error}`` for the failures
    (what ``expected_blackwell.py`` quotes)."""
    import triton

    ok, errors = 0, {}
    for case_id in case_ids:
        r = run_in_subprocess(case_id, interpret=interpret)
        ok += bool(r["ok"])
        if not r["ok"] and "first_error" in r:
            errors[case_id] = r["first_error"]
        detail = r.get("max_abs_error") if interpret else [(x["name"], len(x.get("matched", [])))
                                                           for x in r.get("launches", [])]
        print(f"{'OK  ' if r['ok'] else 'FAIL'} {case_id:58s} {r.get('seconds', '-'):>6}s "
              f"{detail if r['ok'] else r.get('first_error', '')[:240]}", flush=True)
    print(f"Triton {triton.__version__}: {ok} / {len(case_ids)} {'interpreted' if interpret else 'compiled'}")
    if errors_to:
        Path(errors_to).write_text(json.dumps(errors, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", nargs="*")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--summary", action="store_true", help="run cases in subprocesses and print a table")
    ap.add_argument("--interpret", action="store_true", help="with --summary: run them under the interpreter")
    ap.add_argument("--errors-to", help="with --summary: write {case: first_error} of the failures to this JSON file")
    args = ap.parse_args(argv)
    import blackwell_cases

    unknown = [c for c in args.case if c not in blackwell_cases.BY_ID]
    if unknown:
        ap.error(f"unknown case {unknown}; known: {', '.join(blackwell_cases.BY_ID)}")
    if args.summary:
        return summary(args.case or list(blackwell_cases.BY_ID), args.interpret, args.errors_to)
    if len(args.case) != 1:
        ap.error("give one case id (or --summary)")
    if not os.environ.get("TRITON_CACHE_DIR"):
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="utlx-blackwell-corpus-")
    result = run_case(args.case[0], args.seed)
    print("RESULT " + json.dumps(result), flush=True)
    return 0 if result["ok"] else 2


if __name__ == "__main__":
    sys.exit(main())
