"""tools/bench/bench_inductor_gemm.py without a GPU: ``--help``, the ``--dry-run`` flow (every workload built, run,
checked against float32 and timed on the CPU), and that a wrong variant is reported, not timed as a win."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "tools/bench/bench_inductor_gemm.py"


@pytest.fixture(scope="module")
def bench():
    """The script loaded by path (tools/bench is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("tritonx_bench_inductor_gemm", ROOT / SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_help_runs():
    out = subprocess.run([sys.executable, str(ROOT / SCRIPT), "--help"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "--dry-run" in out.stdout and "--mode" in out.stdout


def test_dry_run_covers_every_workload(bench, capsys):
    assert bench.main(["--dry-run"]) == 0
    text = capsys.readouterr().out
    assert len(bench.workloads()) == len(bench.GEMM_SHAPES) + 3
    for w in bench.workloads():
        assert f"| {w.name} | fp32 |" in text
    assert "linear+bias+GELU 16384x4096x4096" in text and "SwiGLU MLP" in text
    assert "linear (no bias) 16384x4096x4096" in text
    assert f"over {len(bench.workloads())} of {len(bench.workloads())} rows" in text


def test_a_wrong_variant_is_an_error_row(bench):
    w = bench.workloads()[-2]  # linear + bias + GELU

    def build(fn, mode):
        return fn if mode == "off" else (lambda *args: fn(*args) + 1.0)

    row = bench.run_workload(w, "fp32", "allow", 1, device="cpu", scale=64, build=build)
    assert "utlx: relative error" in row["error"]
    assert bench.main(["--dry-run", "--only", "SwiGLU"]) == 0


def test_gemm_shapes_are_the_gemm_benchmarks(bench):
    spec = importlib.util.spec_from_file_location("tritonx_bench_gemm_shapes", ROOT / "tools/bench/gemm.py")
    gemm = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = gemm  # its dataclasses look their module up
    spec.loader.exec_module(gemm)
    assert bench.GEMM_SHAPES == gemm.SHAPES
