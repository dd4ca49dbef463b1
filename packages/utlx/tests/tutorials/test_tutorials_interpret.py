"""Every Hopper TLX tutorial of Meta's wheel gives the right answer on utlx under ``TRITON_INTERPRET=1``.

Each case runs ``run_tutorial.py`` in a fresh Python with ``TRITON_INTERPRET=1`` (it must be set before
``import triton``; this process compiles for GPU targets): the tutorial's host function on small shapes
with fresh random data (a new seed per run, printed on failure), compared with a float32 torch reference.
Expected failures (``expected.INTERPRET``) are strict xfails quoting the first error.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

import cases
import expected

RUNNER = Path(__file__).resolve().parent / "run_tutorial.py"
TIMEOUT_S = 600


def _params() -> list:
    return [pytest.param(c, id=c.id, marks=expected.xfail_marks(expected.INTERPRET, c.id)) for c in cases.CASES]


def run_case(case_id: str, tutorials: Path, seed: int) -> tuple[subprocess.CompletedProcess, dict]:
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, str(RUNNER), case_id, "--seed", str(seed), "--tutorials", str(tutorials)],
                          env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    return proc, (json.loads(lines[-1][len("RESULT "):]) if lines else {})


@pytest.mark.parametrize("case", _params())
def test_matches_float32_reference_under_the_interpreter(case, tutorials_dir):
    seed = random.randrange(2**31)
    proc, result = run_case(case.id, tutorials_dir, seed)
    where = f"{case.id} (seed {seed})"
    assert result, f"{where}: no RESULT line (rc {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-6000:]}"
    if "first_error" in result:
        expected.raise_first_error(expected.INTERPRET, case.id, result["first_error"],
                                   f"seed {seed}\n{proc.stderr[-6000:]}")
    assert result["ok"] and proc.returncode == 0, f"{where}: max abs errors {result['max_abs_error']}"
