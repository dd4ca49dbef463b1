"""The native library loads into Triton (passes, dialect, custom op), and its dialect appears in TTIR and is gone
by TTGIR."""

from __future__ import annotations

import pytest
import tritonx

from {{ cookiecutter.module_name }} import __version__
from {{ cookiecutter.module_name }}.language import SQUARE_CUSTOM_OP
from {{ cookiecutter.module_name }}.native import FROM_SQUARE, SQUARE_OP, TAG, TAG_ATTR, TO_SQUARE, library_path
from {{ cookiecutter.module_name }}.plugin import TAG_VALUE, make_pipeline

from kernels import ASSEMBLY, BACKENDS, compile_square_add

pytestmark = pytest.mark.usefixtures("native_library")


def test_library_passes_tritonx_checks():
    import triton

    info = tritonx.check_native(str(library_path()))  # raises PluginLoadError naming the failed check
    assert info.plugin_name == "{{ cookiecutter.plugin_name }}"
    assert info.plugin_version == __version__
    assert info.triton_version == triton.__version__.split("+")[0]
    assert {TO_SQUARE, FROM_SQUARE, TAG} <= set(info.pass_names)
    assert [name for name, _ in info.dialects] == ["{{ cookiecutter.plugin_name }}"]
    assert info.ops == [SQUARE_CUSTOM_OP]


def test_triton_sees_the_custom_op():
    from triton._C.libtriton import ir

    assert callable(getattr(ir.builder, SQUARE_CUSTOM_OP, None))


def test_triton_sees_the_passes():
    from triton._C.libtriton import passes

    names = set(dir(passes.plugin))
    assert {TO_SQUARE, FROM_SQUARE, TAG} <= names or {f"add_{n}" for n in (TO_SQUARE, FROM_SQUARE, TAG)} <= names


@pytest.mark.parametrize("backend", BACKENDS)
def test_dialect_round_trip(backend):
    with tritonx.activate(make_pipeline()):
        compiled = compile_square_add(backend)
    ttir, ttgir = compiled.asm["ttir"], compiled.asm["ttgir"]
    # Conversion: the kernel's x * x became the dialect's op at the end of TTIR.
    assert f"{SQUARE_OP} " in ttir
    assert "arith.mulf" not in ttir
    # Lowering: back to stock arith before TTGIR, which then compiles to the end.
    assert SQUARE_OP not in ttgir
    assert "arith.mulf" in ttgir
    assert f'{TAG_ATTR} = "{TAG_VALUE}"' in ttgir
    assert "square_add" in compiled.asm[ASSEMBLY[backend]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_stock_compile_has_no_dialect(backend):
    compiled = compile_square_add(backend)
    assert SQUARE_OP not in compiled.asm["ttir"]
    assert TAG_ATTR not in compiled.asm["ttgir"]
