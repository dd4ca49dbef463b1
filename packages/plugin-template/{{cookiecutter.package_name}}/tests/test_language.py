{%- if cookiecutter.variant == "python" -%}
"""The plugin's kernel-callable op: compiled into each backend's own instruction, checked, and interpreted."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tritonx
from triton.compiler.errors import CompilationError

from {{ cookiecutter.module_name }}.plugin import make_pipeline

from kernels import ASSEMBLY, BACKENDS, compile_rotate, compile_square_add

#: What ``rotate_left(x, 8)`` is in each backend's assembly: one instruction with x as both inputs.
ROTATE_BY_8 = {
    "cuda": r"shf\.l\.wrap\.b32 %r\d+, (%r\d+), \1, 8;",
    "hip": r"v_alignbit_b32 v\d+, (v\d+), \1, 24",
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_op_is_one_instruction_of_the_backend(backend):
    with tritonx.activate(make_pipeline()):
        assembly = compile_rotate(backend, 8).asm[ASSEMBLY[backend]]
    assert re.search(ROTATE_BY_8[backend], assembly), assembly[-3000:]
    # A kernel without the op has no such instruction.
    assert not re.search(ROTATE_BY_8[backend], compile_square_add(backend).asm[ASSEMBLY[backend]])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_bad_argument_names_op_argument_and_line(backend):
    with tritonx.activate(make_pipeline()), pytest.raises(CompilationError) as info:
        compile_rotate(backend, 32)
    text = str(info.value)
    assert "{{ cookiecutter.plugin_name }}.rotate_left: argument 'n' must satisfy 0 <= n < 32, got 32" in text
    assert "ops.rotate_left(x, BITS)" in text  # the kernel's line


def test_the_op_needs_the_plugin():
    with pytest.raises(CompilationError, match="the '{{ cookiecutter.plugin_name }}' language is not active"):
        compile_rotate(BACKENDS[0], 8)

{%- else -%}
"""The plugin's kernel-callable op: the library's custom op builds the dialect op, its conversion pass lowers it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tritonx

from {{ cookiecutter.module_name }}.native import SQUARE_OP
from {{ cookiecutter.module_name }}.plugin import language_pipeline

from kernels import ASSEMBLY, BACKENDS, compile_square_add, compile_square_op_add

pytestmark = pytest.mark.usefixtures("native_library")


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_op_is_the_dialect_op_before_its_conversion_and_arith_after(backend):
    # Only the language's passes: the square can only come from the kernel's call, not from x * x.
    with tritonx.activate(language_pipeline()):
        compiled = compile_square_op_add(backend)
    ttir, ttgir = compiled.asm["ttir"], compiled.asm["ttgir"]
    # Before the conversion pass (end of TTIR): the dialect's op, on the loaded x.
    assert re.search(rf"%(\w+) = tt\.load .*\n(?:.*\n)*?\s*%\w+ = {re.escape(SQUARE_OP)} %\1 ", ttir), ttir[-3000:]
    assert "arith.mulf" not in ttir
    # After it (TTGIR): stock arith, and the kernel compiles to the end.
    assert SQUARE_OP not in ttgir
    assert re.search(r"%(\w+) = arith\.mulf (%\w+), \2 ", ttgir)
    assert "square_op_add" in compiled.asm[ASSEMBLY[backend]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_kernels_without_the_op_stay_stock(backend):
    with tritonx.activate(language_pipeline()):
        assert SQUARE_OP not in compile_square_add(backend).asm["ttir"]

{%- endif %}


def test_the_interpreter_runs_the_op_against_numpy():
    pytest.importorskip("torch")  # the interpreter launches kernels on torch CPU tensors
    here = Path(__file__).resolve().parent
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, str(here / "interpret_language.py")], env=env, cwd=here,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
{%- if cookiecutter.variant == "python" %}
    assert done.stdout.split() == ["ok", "rotate_left", "ok", "error"]
{%- else %}
    assert done.stdout.split() == ["ok", "square"]
{%- endif %}
