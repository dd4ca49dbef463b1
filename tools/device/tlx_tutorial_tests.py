"""Run Meta's own TLX tutorial tests (Hopper) as they are, on utlx or on Meta's triton-utlx, on a GPU.

    python tools/device/tlx_tutorial_tests.py --impl utlx [--out DIR]     # this repo's utlx
    python tools/device/tlx_tutorial_tests.py --impl meta [--out DIR]     # Meta's build, its own process
    python tools/device/tlx_tutorial_tests.py --impl both                 # one after the other, joined table
    python tools/device/tlx_tutorial_tests.py --join A.json B.json        # join two earlier runs

What runs (issue 10's acceptance list): the Hopper tests of the wheel's ``tutorials/testing/
test_correctness.py`` plus ``test_op`` of ``hopper-persistent-gemm-ws-pingpong.py``,
``hopper-persistent-gemm-ws-cooperative.py`` and ``vector-add2.py``, with pytest, unchanged; then
("host checks") every Hopper tutorial's host function with its own autotuning against a float32 reference
(``packages/utlx/tests/tutorials/run_tutorial.py``): the wheel's ``test_op`` of the persistent GEMMs and of
vector-add2 assert nothing, and its two ``hopper_gemm_ws`` tests fail on Meta's build too.

Why separate processes: Meta's wheel ships a top-level ``utlx`` package and .pth start-up hooks; it must
never share ``sys.path`` with this repo's utlx. ``--impl meta`` builds a clean environment: the current
Triton's site folder (the bundle's, under run_gpu_tests.sh), the unpacked wheel, this harness folder, and
nothing of the repo; ``TRITON_PLUGIN_PATHS`` names its ``libutlx.so``; a private Triton cache. ``--impl utlx``
keeps the environment it is started in (run it under tools/device/run_gpu_tests.sh, e.g. as BENCH_CMD).

The wheel: ``UTLX_META_WHEEL_DIR`` (the bundle's ``extra/`` folder; run_gpu_tests.sh sets it) or a download
(``packages/utlx/tests/meta_wheel.py``). Writes ``tlx-tutorials-<impl>.json`` to --out (default
$TRITONX_BENCH_OUT, $OUT or bench-out); exit 0 when every test that passes on Meta's build and every host
check passed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "packages/utlx/tests/tutorials"
PLUGIN = "tlx_tutorials_pytest"


@dataclass(frozen=True)
class MetaTest:
    """One test of the wheel's tutorials, run with pytest as it is."""

    id: str
    file: str  # relative to tlx/tutorials
    name: str
    passes_on_meta: bool  # measured on the H200, 2026-11-30 (docs: shared/notes/h200-references)


CORRECTNESS = "testing/test_correctness.py"
META_TESTS = [
    MetaTest("test_hopper_gemm_pipelined", CORRECTNESS, "test_hopper_gemm_pipelined", True),
    MetaTest("test_hopper_gemm_ws", CORRECTNESS, "test_hopper_gemm_ws", False),
    MetaTest("test_hopper_gemm_ws_warp_barrier", CORRECTNESS, "test_hopper_gemm_ws_warp_barrier", False),
    MetaTest("test_hopper_fa_ws", CORRECTNESS, "test_hopper_fa_ws", True),
    MetaTest("test_hopper_fa_ws_pipelined", CORRECTNESS, "test_hopper_fa_ws_pipelined", True),
    MetaTest("test_hopper_fa_ws_pipelined_pingpong", CORRECTNESS, "test_hopper_fa_ws_pipelined_pingpong", True),
    MetaTest("test_hopper_fa_ws_pipelined_pingpong_persistent", CORRECTNESS,
             "test_hopper_fa_ws_pipelined_pingpong_persistent", True),
    MetaTest("pingpong::test_op", "hopper-persistent-gemm-ws-pingpong.py", "test_op", True),
    MetaTest("cooperative::test_op", "hopper-persistent-gemm-ws-cooperative.py", "test_op", True),
    MetaTest("vector-add2::test_op", "vector-add2.py", "test_op", True),
]


def _load(path: Path, name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def meta_wheel() -> ModuleType:
    return _load(ROOT / "packages/utlx/tests/meta_wheel.py", "meta_wheel")


def case_ids() -> list[str]:
    sys.path.insert(0, str(HARNESS))
    try:
        return list(_load(HARNESS / "cases.py", "cases").BY_ID)
    finally:
        sys.path.remove(str(HARNESS))


def triton_site() -> Path:
    """The folder the current Triton is imported from (the bundle's site under run_gpu_tests.sh)."""
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.origin:
        raise SystemExit("tlx_tutorial_tests.py: triton is not importable here")
    return Path(spec.origin).resolve().parents[1]


def environment(impl: str, wheel_root: Path, work: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The child processes' environment for ``impl`` (see the module docstring for why meta's is rebuilt)."""
    env = dict(os.environ if base is None else base)
    tutorials = wheel_root / "tlx" / "tutorials"
    env.update(UTLX_TUTORIALS_IMPL=impl, UTLX_TUTORIALS_DIR=str(tutorials), PYTHONUNBUFFERED="1",
               PYTHONDONTWRITEBYTECODE="1")
    if impl == "utlx":
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HARNESS), env.get("PYTHONPATH", "")) if p)
        return env
    env["PYTHONPATH"] = os.pathsep.join((str(HARNESS), str(triton_site()), str(wheel_root)))
    env["TRITON_PLUGIN_PATHS"] = str(wheel_root / "utlx_plugin" / "libutlx.so")
    env["TRITON_CACHE_DIR"] = str(work / "meta-triton-cache")
    for var in ("TRITONX_PTH_DIRS", "TRITONX_PLUGINS", "UTLX_META_WHEEL_DIR"):
        env.pop(var, None)
    return env


def _junit_outcomes(xml: Path) -> dict[str, dict[str, Any]]:
    outcomes = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        seconds = float(case.get("time", 0.0))
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                message = (node.get("message") or node.text or "").strip()
                break
        outcomes[case.get("name", "")] = {"outcome": outcome, "seconds": round(seconds, 1),
                                          "first_error": message.splitlines()[0][:400] if message else ""}
    return outcomes


def first_error_line(output: str) -> str:
    """The first ``E   ...`` line of pytest's output (a collection error's message), without the prefix."""
    for line in output.splitlines():
        if line.startswith("E   "):
            return line[4:].strip()[:400]
    return ""


def run_meta_tests(impl: str, wheel_root: Path, work: Path, tests: list[MetaTest] = META_TESTS,
                   timeout: float = 900) -> dict[str, dict[str, Any]]:
    """Run the tests with pytest, one process per test file; outcome per test id."""
    tutorials = wheel_root / "tlx" / "tutorials"
    env = environment(impl, wheel_root, work)
    ini = work / "pytest.ini"
    ini.write_text("[pytest]\n")  # none of this repo's pytest options (markers, -m, import mode)
    results: dict[str, dict[str, Any]] = {}
    for file in dict.fromkeys(t.file for t in tests):
        group = [t for t in tests if t.file == file]
        xml = work / f"junit-{impl}-{Path(file).stem}.xml"
        cmd = [sys.executable, "-m", "pytest", "-p", PLUGIN, "-p", "no:cacheprovider", "-c", str(ini),
               "--rootdir", str(tutorials), "--import-mode=importlib", "-q", "-rfE", f"--junitxml={xml}",
               *[f"{tutorials / t.file}::{t.name}" for t in group]]
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
            output, rc = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as exc:
            output, rc = f"timed out after {timeout:.0f} s: {str(exc.stdout or '')[-2000:]}", -1
        tail = output[-4000:]
        print(f"[{impl}] {file}: rc {rc} in {time.monotonic() - t0:.0f} s", flush=True)
        found = _junit_outcomes(xml) if xml.is_file() else {}
        for t in group:
            cell = found.get(t.name) or {"outcome": "error", "seconds": 0.0,
                                         "first_error": first_error_line(output) or f"no result (pytest rc {rc})"}
            results[t.id] = {**cell, "file": t.file, "passes_on_meta": t.passes_on_meta}
            if cell["outcome"] != "passed":
                results[t.id]["output_tail"] = tail
    return results


def run_host_checks(impl: str, wheel_root: Path, work: Path, cases: list[str] | None = None,
                    timeout: float = 900) -> dict[str, dict[str, Any]]:
    """Every tutorial's host function (own autotuning) on the GPU against a float32 reference, one process."""
    cases = cases or case_ids()
    env = environment(impl, wheel_root, work)
    cmd = [sys.executable, str(HARNESS / "run_tutorial.py"), *cases, "--device", "cuda", "--impl", impl,
           "--tutorials", str(wheel_root / "tlx" / "tutorials"), "--seed", str(int(time.time()) % 100000)]
    try:
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
        out, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out, rc = f"timed out after {timeout:.0f} s\n{exc.stdout or ''}", -1
    results = {}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            results[r["case"]] = r
    for case in cases:
        results.setdefault(case, {"case": case, "ok": False,
                                  "first_error": f"no result (rc {rc}): {out.strip().splitlines()[-1:] or ''}"})
    print(f"[{impl}] host checks: rc {rc}", flush=True)
    return results


def run(impl: str, out: Path, only: list[str] | None, skip_host: bool, timeout: float) -> dict[str, Any]:
    mw = meta_wheel()
    root = mw.meta_wheel_dir()
    if root is None:
        raise SystemExit(f"tlx_tutorial_tests.py: {mw.unavailable_reason()}")
    tests = [t for t in META_TESTS if not only or t.id in only]
    with tempfile.TemporaryDirectory(prefix=f"tlx-tutorials-{impl}-") as scratch:
        work = Path(scratch)
        report: dict[str, Any] = {"impl": impl, "wheel": str(root), "triton_site": str(triton_site()),
                                  "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                  "meta_tests": run_meta_tests(impl, root, work, tests, timeout)}
        if not skip_host:
            report["host_checks"] = run_host_checks(impl, root, work, timeout=timeout)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"tlx-tutorials-{impl}.json"
    path.write_text(json.dumps(report, indent=1))
    print(f"wrote {path}")
    return report


def table(reports: list[dict[str, Any]]) -> str:
    """One row per test / host check, one column per report (utlx, meta)."""
    impls = [r["impl"] for r in reports]
    lines = [f"{'test':<50} " + " ".join(f"{i:>8}" for i in impls) + "  first error (first report that failed)"]
    ids = list(dict.fromkeys(k for r in reports for k in r.get("meta_tests", {})))
    for key in ids:
        cells = [r.get("meta_tests", {}).get(key, {}) for r in reports]
        err = next((c.get("first_error", "") for c in cells if c and c.get("outcome") != "passed"), "")
        lines.append(f"{key:<50} " + " ".join(f"{c.get('outcome', '-'):>8}" for c in cells) + f"  {err[:110]}")
    host = list(dict.fromkeys(k for r in reports for k in r.get("host_checks", {})))
    for key in host:
        cells = [r.get("host_checks", {}).get(key, {}) for r in reports]
        marks = ["-" if not c else "ok" if c.get("ok") else "ERROR" if "first_error" in c else "WRONG" for c in cells]
        err = next((c.get("first_error", f"max abs error {c.get('max_abs_error')}") for c in cells
                    if c and not c.get("ok")), "")
        lines.append(f"{'host: ' + key:<50} " + " ".join(f"{m:>8}" for m in marks) + f"  {err[:110]}")
    return "\n".join(lines)


def all_good(report: dict[str, Any]) -> bool:
    tests = report.get("meta_tests", {})
    return all(c["outcome"] == "passed" for c in tests.values() if c.get("passes_on_meta")) and \
        all(c.get("ok") for c in report.get("host_checks", {}).values())


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--impl", choices=("utlx", "meta", "both"), default="utlx")
    ap.add_argument("--out", default=os.environ.get("TRITONX_BENCH_OUT") or os.environ.get("OUT") or "bench-out")
    ap.add_argument("--only", nargs="*", help="test ids to run (default: all ten)")
    ap.add_argument("--no-host-checks", action="store_true", help="only the wheel's own tests")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per pytest/host-check process")
    ap.add_argument("--join", nargs="+", metavar="JSON", help="print the joined table of earlier runs and exit")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.join:
        reports = [json.loads(Path(p).read_text()) for p in args.join]
        print(table(reports))
        return 0
    impls = ["utlx", "meta"] if args.impl == "both" else [args.impl]
    reports = [run(i, Path(args.out), args.only, args.no_host_checks, args.timeout) for i in impls]
    print(table(reports))
    for r in reports:
        for key, cell in r["meta_tests"].items():
            if cell["outcome"] != "passed" and cell.get("output_tail"):
                print(f"\n--- [{r['impl']}] {key} ---\n{cell['output_tail'][-1500:]}")
    return 0 if all(all_good(r) for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
