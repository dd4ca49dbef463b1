"""Compile-path bodies of the fork's ``inline_ptx_lib`` (packed fp32 pairs and tanh) for Blackwell.

Each is one ``tt.elementwise_inline_asm`` emitted while tracing (no placeholder): ``pack=2`` hands the asm two
elements of each operand, which become one 64-bit register pair of a ``.f32x2`` instruction (PTX ISA 8.6, sm_100).
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx.compiler.common.errors import UtlxCompileError
from utlx.language._dispatch import register_compiler_impl

from ..targets import BLACKWELL


def _operands(_semantic: Any, op: str, values: tuple[Any, ...]) -> list[tl.tensor]:
    out = []
    for i, v in enumerate(values):
        t = v if isinstance(v, tl.tensor) else _semantic.to_tensor(v)
        if t.dtype != tl.float32:
            raise UtlxCompileError(op, f"operand {i} must be fp32, got {t.dtype}")
        out.append(t)
    block = next((t for t in out if t.type.is_block()), None)
    if block is not None:
        out = [t if t.type.is_block() else _semantic.broadcast_impl_shape(t, block.shape) for t in out]
    return out


def _packed(_semantic: Any, op: str, instr: str, values: tuple[Any, ...]) -> tl.tensor:
    """``instr`` over pairs: operand k's two elements are $(2 + 2k), $(3 + 2k); the results $0, $1."""
    args = _operands(_semantic, op, values)
    regs = " ".join(f".reg .b64 in{k};" for k in range(len(args)))
    packs = " ".join(f"mov.b64 in{k}, {{${2 + 2 * k}, ${3 + 2 * k}}};" for k in range(len(args)))
    ins = ", ".join(f"in{k}" for k in range(len(args)))
    asm = f"{{ .reg .b64 out; {regs} {packs} {instr} out, {ins}; mov.b64 {{$0, $1}}, out; }}"
    constraints = "=r,=r," + ",".join(["r,r"] * len(args))
    return tl.inline_asm_elementwise(asm, constraints, args, dtype=tl.float32, is_pure=True, pack=2,
                                     _semantic=_semantic)


@register_compiler_impl("_mul_f32x2", *BLACKWELL)
def _mul_f32x2(_semantic: Any, a: Any, b: Any) -> tl.tensor:
    return _packed(_semantic, "_mul_f32x2", "mul.rn.f32x2", (a, b))


@register_compiler_impl("_sub_f32x2", *BLACKWELL)
def _sub_f32x2(_semantic: Any, a: Any, b: Any) -> tl.tensor:
    return _packed(_semantic, "_sub_f32x2", "sub.rn.f32x2", (a, b))


@register_compiler_impl("_fma_f32x2", *BLACKWELL)
def _fma_f32x2(_semantic: Any, a: Any, b: Any, c: Any) -> tl.tensor:
    return _packed(_semantic, "_fma_f32x2", "fma.rn.f32x2", (a, b, c))


@register_compiler_impl("_reduce_fadd2", *BLACKWELL)
def _reduce_fadd2(_semantic: Any, p0a: Any, p1a: Any, p0b: Any, p1b: Any) -> tuple[tl.tensor, tl.tensor]:
    """(p0a + p0b, p1a + p1b): the first elements of both sums in one register, the second in the other."""
    args = _operands(_semantic, "_reduce_fadd2", (p0a, p1a, p0b, p1b))
    asm = ("{ .reg .b64 x, y, s; mov.b64 x, {$2, $3}; mov.b64 y, {$4, $5}; add.rn.f32x2 s, x, y; "
           "mov.b64 {$0, $1}, s; }")
    return tl.inline_asm_elementwise(asm, "=r,=r,r,r,r,r", args, dtype=[tl.float32, tl.float32], is_pure=True,
                                     pack=1, _semantic=_semantic)


@register_compiler_impl("tanh_approx_fp32", *BLACKWELL)
def tanh_approx_fp32(_semantic: Any, x: Any) -> tl.tensor:
    (arg,) = _operands(_semantic, "tanh_approx_fp32", (x,))
    return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [arg], dtype=tl.float32, is_pure=True,
                                     pack=1, _semantic=_semantic)
