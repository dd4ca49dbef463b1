"""README command 1 runs ``tools/demo.py``: it must keep working end to end (a kernel parameter gained a
default once and the demo broke while every unit test passed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_and_shows_every_section():
    pytest.importorskip("torch")
    env = dict(os.environ, COLUMNS="110")
    proc = subprocess.run([sys.executable, str(ROOT / "tools/demo.py")], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "python:utlx-lower" in out and "inserted" in out  # the pass list with utlx's passes marked
    assert "disable('tritongpu-pipeline')" in out  # the user pipeline's effect
    for label in ("for cuda:90", "for hip:gfx942", "for hip:gfx950"):
        assert label in out, out[-3000:]
    assert "wgmma.mma_async=8" in out
    assert "done in" in out
