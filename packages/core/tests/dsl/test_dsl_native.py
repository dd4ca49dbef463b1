"""An op implemented by a native custom op (plugin ABI, Triton >= 3.7), with Triton's own dialect test plugin.

The wheel's ``libMLIRDialectPlugin.so`` declares one custom op, ``create_custom_op``; on 3.8 and 3.9 it
builds ``arith.addf %x, %x`` from ``operands[0]`` and Triton returns it, so the kernel's TTIR shows it in
place of the placeholder. 3.7.1's binding drops the value (and its plugin reads ``operands[1]``): the
compile must then fail with the error that says what a callback has to do. The template's native variant
tests a callback written for every version (``packages/plugin-template``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import triton
from tritonx.compat.native import parse_version

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
VERSION = parse_version(triton.__version__)[:2]
PLUGIN = Path(triton.__file__).resolve().parent / "plugins" / "libMLIRDialectPlugin.so"

pytestmark = [
    pytest.mark.smoke,
    pytest.mark.skipif(VERSION < (3, 7) or not PLUGIN.is_file(), reason="needs Triton >= 3.7 and its plugins"),
]


def _run() -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(HERE), os.environ.get("PYTHONPATH", "")]))
    env.pop("TRITONX_NATIVE_PLUGINS", None)
    if VERSION < (3, 9):
        env["TRITON_PLUGIN_PATHS"] = str(PLUGIN)  # 3.7/3.8 read it when libtriton is imported
    done = subprocess.run([sys.executable, str(HERE / "dsl_native_case.py"), str(PLUGIN)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return done.stdout


@pytest.mark.skipif(VERSION < (3, 8), reason="Triton 3.7's custom-op binding returns no value")
def test_the_custom_op_replaces_the_placeholder_in_ttir():
    out = _run()
    assert re.search(r"%(\w+) = tt\.load .*\n\s*%\w+ = arith\.addf %\1, %\1 : tensor<128xf32>", out), out[:3000]
    assert "dsltest|" not in out.split("=== PTX")[0]
    assert int(out.rsplit("=== PTX", 1)[1]) >= 2  # x + x, then + 1.0


@pytest.mark.skipif(VERSION != (3, 7), reason="the dropped-value case is Triton 3.7's")
def test_a_callback_that_does_not_take_over_is_named():
    out = _run()
    assert out.startswith("DslError:")
    assert "dsltest.double_native: the native custom op did not take over the op's result" in out
    assert "replace the uses of the last operand (a stand-in)" in out
    assert "dsl_kernels.py" in out  # where the kernel calls the op
