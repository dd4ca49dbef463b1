"""A tiny kernel compiled on the CPU to prove the process still works after a refusal."""

from __future__ import annotations

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget


@triton.jit
def add_one(X, N: tl.constexpr):
    offsets = tl.arange(0, N)
    tl.store(X + offsets, tl.load(X + offsets) + 1.0)


def compile_add_one(n: int = 64):
    """Compile ``add_one`` for cuda:90 down to PTX; returns the compiled kernel."""
    source = triton.compiler.ASTSource(fn=add_one, signature={"X": "*fp32"}, constexprs={"N": n})
    return triton.compile(source, target=GPUTarget("cuda", 90, 32))


def assert_compiles(n: int = 64) -> None:
    compiled = compile_add_one(n)
    assert "tt.func public @add_one" in compiled.asm["ttir"]
    assert ".visible .entry add_one" in compiled.asm["ptx"]
