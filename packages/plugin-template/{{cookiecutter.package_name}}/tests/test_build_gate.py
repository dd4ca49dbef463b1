"""The build refuses a Triton that the LLVM/MLIR headers do not match, with a message saying what to do."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "locate_deps", Path(__file__).resolve().parents[1] / "cmake" / "locate_deps.py"
)
locate_deps = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(locate_deps)


def test_pypi_headers_build_for_triton_371():
    locate_deps.check_triton_version("3.7.1", custom_llvm=False)


@pytest.mark.parametrize("version", ["3.8.0", "3.9.0"])
def test_other_triton_needs_its_own_llvm(version):
    with pytest.raises(locate_deps.BuildGateError) as info:
        locate_deps.check_triton_version(version, custom_llvm=False)
    message = str(info.value)
    assert f"installed Triton is {version}" in message
    assert "TRITONX_LLVM_DIR" in message
    assert locate_deps.TRITON_LLVM_COMMITS[version] in message


def test_custom_llvm_dir_lifts_the_gate():
    locate_deps.check_triton_version("3.8.0", custom_llvm=True)


def test_triton_without_plugin_api_is_refused_even_with_custom_llvm():
    with pytest.raises(locate_deps.BuildGateError, match="no native plugin API"):
        locate_deps.check_triton_version("3.6.0", custom_llvm=True)


def test_custom_llvm_dir_must_hold_headers_and_tblgen(tmp_path):
    with pytest.raises(locate_deps.BuildGateError, match="lacks"):
        locate_deps.llvm_paths({"TRITONX_LLVM_DIR": str(tmp_path)})
