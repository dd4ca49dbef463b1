"""The test kernel and the targets the tests compile it for (on the CPU: no GPU needed)."""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl
import tritonx

import {{ cookiecutter.module_name }}.language as ops

#: Backends the tests compile for (the template's "backends" answer).
BACKENDS = [{% for b in cookiecutter.backends.split(",") %}"{{ b.strip() }}"{% if not loop.last %}, {% endif %}{% endfor %}]
TARGETS = {"cuda": "cuda:90", "hip": "hip:gfx942"}
#: The final text stage of each backend.
ASSEMBLY = {"cuda": "ptx", "hip": "amdgcn"}
SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
CONSTEXPRS = {"BLOCK": 256}


@triton.jit
def block(n, BLOCK: tl.constexpr):
    """This program's ``BLOCK`` offsets and their in-bounds mask (every test kernel is one-dimensional)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    return offsets, offsets < n


@triton.jit
def square_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x * x + y: two global loads and one `arith.mulf %x, %x`."""
    offsets, mask = block(n, BLOCK)
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def compile_square_add(backend: str) -> Any:
    """Compile :func:`square_add` for ``backend`` under the active pipelines; every stage's text is in ``.asm``."""
    return tritonx.compile_for(TARGETS[backend], square_add, signature=SIGNATURE, constexprs=CONSTEXPRS)


def capture_square_add(backend: str) -> Any:
    """Every stage's pass list when compiling :func:`square_add` (active edits marked)."""
    return tritonx.capture(TARGETS[backend], square_add, signature=SIGNATURE, constexprs=CONSTEXPRS)
{%- if cookiecutter.variant == "python" %}


@triton.jit
def rotate(x_ptr, out_ptr, n, BLOCK: tl.constexpr, BITS: tl.constexpr):
    """out = x rotated left by BITS bits, through the plugin's op."""
    offsets, mask = block(n, BLOCK)
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, ops.rotate_left(x, BITS), mask=mask)


ROTATE_SIGNATURE = {"x_ptr": "*i32", "out_ptr": "*i32", "n": "i32"}


def compile_rotate(backend: str, bits: int) -> Any:
    """Compile :func:`rotate` for ``backend`` under the active pipelines."""
    return tritonx.compile_for(TARGETS[backend], rotate, signature=ROTATE_SIGNATURE,
                               constexprs={"BLOCK": 256, "BITS": bits})
{%- else %}


@triton.jit
def square_op_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = square(x) + y, with the square written as the plugin's op (not as x * x)."""
    offsets, mask = block(n, BLOCK)
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, ops.square(x) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def compile_square_op_add(backend: str) -> Any:
    """Compile :func:`square_op_add` for ``backend`` under the active pipelines."""
    return tritonx.compile_for(TARGETS[backend], square_op_add, signature=SIGNATURE, constexprs=CONSTEXPRS)
{%- endif %}
