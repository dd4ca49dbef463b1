"""H200 acceptance of issue 10: Meta's own TLX tutorial tests, as they are, pass on utlx.

* The 8 of the 10 Hopper tests (``testing/test_correctness.py`` Hopper tests, ``test_op`` of the two
  persistent ws GEMMs and of vector-add2) that pass on Meta's triton-utlx, run with pytest unchanged in a
  child process (``tools/device/tlx_tutorial_tests.py``, which also runs them on Meta's build for the
  comparison table: ``--impl meta``).
* Every Hopper tutorial's host function with its own autotuning against a float32 reference
  (``run_tutorial.py --device cuda``): the wheel's ``test_op`` of the persistent GEMMs and of vector-add2
  assert nothing, and its two ``hopper_gemm_ws`` tests fail on Meta's build too (no ``NUM_CTAS`` in their
  config), so ``hopper_gemm_ws.matmul(a, b)`` autotuned is checked here instead.

The wheel comes from ``UTLX_META_WHEEL_DIR`` (run_gpu_tests.sh points it at the bundle's ``extra/``; build
the bundle with ``--extra-wheel triton-utlx==3.8.0.post16``) or a download; without either, skipped.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[4]


def _hopper() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and torch.version.hip is None and torch.cuda.get_device_capability()[0] == 9


def _runner():
    name = "tlx_tutorial_tests"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tools/device/tlx_tutorial_tests.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


RUNNER = _runner()
META_PASSING = [t.id for t in RUNNER.META_TESTS if t.passes_on_meta]
HOST_CASES = [c for c in RUNNER.case_ids() if c != "hopper_gemm_ws"]


@pytest.fixture(scope="module")
def wheel_and_work(tmp_path_factory):
    if not _hopper():
        pytest.skip("needs an NVIDIA Hopper GPU (sm_90)")
    import meta_wheel

    root = meta_wheel.meta_wheel_dir()
    if root is None:
        pytest.skip(meta_wheel.unavailable_reason())
    return root, tmp_path_factory.mktemp("tlx-tutorials-gpu")


@pytest.fixture(scope="module")
def meta_tests_on_utlx(wheel_and_work):
    return RUNNER.run_meta_tests("utlx", *wheel_and_work)


@pytest.fixture(scope="module")
def host_checks_on_utlx(wheel_and_work):
    return RUNNER.run_host_checks("utlx", *wheel_and_work, cases=HOST_CASES)


@pytest.mark.parametrize("test_id", META_PASSING)
def test_metas_tutorial_test_passes_unchanged_on_utlx(test_id, meta_tests_on_utlx):
    cell = meta_tests_on_utlx[test_id]
    assert cell["outcome"] == "passed", f"{test_id}: {cell['first_error']}\n{cell.get('output_tail', '')[-3000:]}"


@pytest.mark.parametrize("case_id", HOST_CASES)
def test_tutorial_host_function_matches_float32_reference(case_id, host_checks_on_utlx):
    result = host_checks_on_utlx[case_id]
    assert result["ok"], f"{case_id}: {result.get('first_error') or result.get('max_abs_error')}"


def test_hopper_gemm_ws_matmul_with_its_own_autotuning_is_correct(wheel_and_work):
    (result,) = RUNNER.run_host_checks("utlx", *wheel_and_work, cases=["hopper_gemm_ws"]).values()
    assert result["ok"], f"hopper_gemm_ws.matmul(a, b): {result.get('first_error') or result.get('max_abs_error')}"
