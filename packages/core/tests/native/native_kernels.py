"""A tiny kernel compiled on the CPU to prove the process still works after a refusal."""

from __future__ import annotations

import os
from typing import Any

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


def parsed_ttir(compiled: Any, directory: str) -> tuple[Any, Any, Any]:
    """``compiled``'s TTIR written to ``directory/k.ttir`` and parsed back: (MLIR context, module, an empty pass
    manager), to run a native pass on a real module the way Triton's stages do."""
    from triton._C import libtriton as L

    path = os.path.join(directory, "k.ttir")
    os.makedirs(directory, exist_ok=True)
    with open(path, "w") as f:
        f.write(compiled.asm["ttir"])
    ctx = L.ir.context()
    L.ir.load_dialects(ctx)
    return ctx, L.ir.parse_mlir_module(path, ctx), L.ir.pass_manager(ctx)
