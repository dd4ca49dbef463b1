"""The Python pass runs where the pipeline puts it, and its effect is in the IR."""

from __future__ import annotations

import pytest
import tritonx

from {{ cookiecutter.module_name }}.passes import NUM_LOADS_ATTR, VISITED_ATTR
from {{ cookiecutter.module_name }}.plugin import ANCHOR, make_pipeline

from kernels import ASSEMBLY, BACKENDS, capture_square_add, compile_square_add


@pytest.mark.parametrize("backend", BACKENDS)
def test_pass_marks_the_kernel_in_ttgir(backend):
    with tritonx.activate(make_pipeline()):
        compiled = compile_square_add(backend)
    ttgir = compiled.asm["ttgir"]
    assert f"{VISITED_ATTR} = true" in ttgir
    assert f"{NUM_LOADS_ATTR} = 2 : i32" in ttgir
    # It runs inside the TTGIR stage, so TTIR is untouched ...
    assert VISITED_ATTR not in compiled.asm["ttir"]
    # ... and the kernel still compiles to the end.
    assert "square_add" in compiled.asm[ASSEMBLY[backend]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_stock_compile_is_unmarked(backend):
    assert VISITED_ATTR not in compile_square_add(backend).asm["ttgir"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_pass_sits_right_after_its_anchor(backend):
    with tritonx.activate(make_pipeline()):
        capture = capture_square_add(backend)
    names = capture.names("ttgir")
    position = names.index(ANCHOR)
    inserted = capture["ttgir"][position + 1]
    assert inserted.name == "python:mark_kernels"
    assert inserted.mark == "inserted"
