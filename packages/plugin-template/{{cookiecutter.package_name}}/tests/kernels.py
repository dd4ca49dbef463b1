"""The test kernel and the targets the tests compile it for (on the CPU: no GPU needed)."""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl
import tritonx

#: Backends the tests compile for (the template's "backends" answer).
BACKENDS = [{% for b in cookiecutter.backends.split(",") %}"{{ b.strip() }}"{% if not loop.last %}, {% endif %}{% endfor %}]
TARGETS = {"cuda": "cuda:90", "hip": "hip:gfx942"}
#: The final text stage of each backend.
ASSEMBLY = {"cuda": "ptx", "hip": "amdgcn"}
SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
CONSTEXPRS = {"BLOCK": 256}


@triton.jit
def square_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x * x + y: two global loads and one `arith.mulf %x, %x`."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * x + y, mask=mask)


def compile_square_add(backend: str) -> Any:
    """Compile :func:`square_add` for ``backend`` under the active pipelines; every stage's text is in ``.asm``."""
    return tritonx.compile_for(TARGETS[backend], square_add, signature=SIGNATURE, constexprs=CONSTEXPRS)


def capture_square_add(backend: str) -> Any:
    """Every stage's pass list when compiling :func:`square_add` (active edits marked)."""
    return tritonx.capture(TARGETS[backend], square_add, signature=SIGNATURE, constexprs=CONSTEXPRS)
