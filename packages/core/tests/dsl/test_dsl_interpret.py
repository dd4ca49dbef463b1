"""Ops declared through ``tritonx.dsl`` run under Triton's interpreter (``TRITON_INTERPRET=1``) against numpy
references, and bad calls name the op, the argument and the kernel line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

# Marked smoke: the repo's compile smoke runs it on every Triton version of the matrix.
pytestmark = pytest.mark.smoke

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
CASES = ["rotate", "shared", "native_meaning", "raw_value", "bad_argument", "missing_cpu_body", "outside_a_kernel"]


def test_interpreter_cases():
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([str(SRC), str(HERE), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(HERE / "dsl_interp_cases.py"), *CASES], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-6000:]
    assert done.stdout.split() == [w for c in CASES for w in ("ok", c)]
