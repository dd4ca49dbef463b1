"""The kernels filed by vendor keep their old import paths: ``utlx.kernels.hopper_*`` and ``utlx.kernels.amd_*``
are the very modules under ``utlx.kernels.nvidia`` / ``utlx.kernels.amd`` (one module object, one set of JIT
functions), by dotted import, by ``from utlx.kernels import ...`` and by ``importlib``."""

from __future__ import annotations

import importlib

import pytest

OLD_AND_NEW = [
    ("utlx.kernels.hopper_tma_persistent", "utlx.kernels.nvidia.hopper_tma_persistent"),
    ("utlx.kernels.hopper_ws_streamk", "utlx.kernels.nvidia.hopper_ws_streamk"),
    ("utlx.kernels.amd_pipelined", "utlx.kernels.amd.amd_pipelined"),
]


@pytest.mark.parametrize(("old", "new"), OLD_AND_NEW)
def test_an_old_path_is_the_vendor_module(old, new):
    module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new  # its own spec, not the alias's


def test_from_import_and_jit_functions_are_one_object():
    from utlx.kernels import amd_pipelined, hopper_pipelined
    from utlx.kernels.amd.amd_pipelined import matmul_kernel_pipelined_amd
    from utlx.kernels.nvidia import hopper_pipelined as new_hopper

    assert hopper_pipelined is new_hopper
    assert amd_pipelined.matmul_kernel_pipelined_amd is matmul_kernel_pipelined_amd


def test_other_names_are_not_aliased():
    import utlx.kernels

    with pytest.raises(AttributeError, match="has no attribute 'no_such_kernel'"):
        _ = utlx.kernels.no_such_kernel
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("utlx.kernels.hopper_no_such_kernel")
    assert importlib.import_module("utlx.kernels.tiles").__name__ == "utlx.kernels.tiles"
