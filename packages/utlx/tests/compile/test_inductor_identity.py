"""Integration off = stock (issue 31's acceptance), on the CPU: Inductor generates the same code, bit-equal outputs.

One FlexAttention + matmul graph (``inductor_identity_probe.py``) is compiled in a fresh process with
``utlx.inductor`` never enabled, after ``enable("allow")`` then ``disable()``, and with ``enable("allow")`` on:
on a CPU utlx has no kernel, so all three must give Inductor's stock output code byte for byte (the probe blanks
only the per-process ``# AOT ID`` counter) and bit-equal outputs, and ``utlx.inductor.stats`` must say why the
enabled compile got no utlx choice. The GPU twin is ``tests/gpu/test_inductor_identity_gpu.py``.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch._inductor.kernel.flex.flex_attention")

PROBE = Path(__file__).with_name("inductor_identity_probe.py")


def run_probe(device: str, *extra: str, cache_dir: Path) -> dict:
    """The probe's JSON report (a fresh process: nothing enabled utlx.inductor before it)."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache_dir), "UTLX_INDUCTOR": "off"}
    out = subprocess.run([sys.executable, str(PROBE), device, *extra], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(x for x in out.stdout.splitlines() if x.startswith("PROBE "))
    return json.loads(line.removeprefix("PROBE "))


def first_difference(a: list[str], b: list[str]) -> str:
    """A short unified diff of the first differing output-code module (for the assertion message)."""
    if len(a) != len(b):
        return f"{len(a)} vs {len(b)} output-code modules"
    for x, y in zip(a, b, strict=True):
        if x != y:
            return "".join(list(difflib.unified_diff(x.splitlines(True), y.splitlines(True), n=1))[:60])
    return ""


def assert_same_code(report: dict, way: str) -> None:
    never, other = report["codes"]["never"], report["codes"][way]
    assert never == other, f"'{way}' differs from utlx never enabled:\n{first_difference(never, other)}"


def test_off_enabled_then_disabled_and_enabled_on_cpu_are_stock(tmp_path):
    report = run_probe("cpu", "--enabled", cache_dir=tmp_path)
    never = report["codes"]["never"]
    # The comparison covers the flex kernel: the stock CPU output code holds the C++ flex kernels and the matmul.
    assert never and any("flex_attention" in code and "extern_kernels.mm" in code for code in never), never[:1]
    assert report["mode_before_never"] == "off" and report["seams"]["never"] == []
    # enable really installed something (else the comparison would prove nothing) and disable took all of it out
    assert {"utlx.inductor-flex-record", "utlx.inductor-flex-choices"} <= set(report["seams"]["while_enabled"])
    assert report["seams"]["restored"] == []
    assert_same_code(report, "restored")
    assert report["equal"]["restored"], "outputs after enable()/disable() differ from stock"
    # enable("allow") on a CPU device: a no-op, and stats say why
    assert_same_code(report, "enabled")
    assert report["equal"]["enabled"], "outputs with enable('allow') on the CPU differ from stock"
    assert report["stats_enabled"]["added"] == 0
    assert report["stats_enabled"]["skipped_new"] == {
        "cpu device: Inductor's C++ flex lowering runs (utlx has no CPU kernel)": 1}


def test_the_comparison_sees_a_real_difference():
    """The code comparison is not blind: one changed line of a module shows up in the diff."""
    a = ["x = 1\ny = 2\n"]
    assert first_difference(a, ["x = 1\ny = 3\n"]).count("y = 3") == 1
    assert first_difference(a, a) == ""
    assert first_difference(a, a + a) == "1 vs 2 output-code modules"
