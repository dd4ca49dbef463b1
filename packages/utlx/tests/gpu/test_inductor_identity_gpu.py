"""Integration off = stock on the GPU (issue 31's acceptance): the CPU test's twin, on cuda.

The same probe (``tests/compile/inductor_identity_probe.py``, bf16, head dim 128: where the utlx template would
apply) in a fresh process: Inductor's output code (Triton kernels included) with ``utlx.inductor`` never enabled
and after ``enable("allow")`` then ``disable()`` must be the same byte for byte, and the outputs bit-equal.
Default compile mode (max-autotune picks by timing, so even two stock compiles may differ).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

import gpu_env  # noqa: E402, F401  (skips this module on a machine without a GPU)
from test_inductor_identity import assert_same_code, run_probe  # noqa: E402


def test_off_and_enabled_then_disabled_generate_the_stock_code_on_cuda(tmp_path):
    report = run_probe("cuda", cache_dir=tmp_path)
    never = report["codes"]["never"]
    assert never and any("flex_attention" in code and "async_compile.triton" in code for code in never), never[:1]
    assert {"utlx.inductor-flex-record", "utlx.inductor-flex-choices"} <= set(report["seams"]["while_enabled"])
    assert report["seams"]["restored"] == []
    assert_same_code(report, "restored")
    assert report["equal"]["restored"], "outputs after enable()/disable() differ from stock"
