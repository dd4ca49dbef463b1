"""``tl.inline_asm_elementwise`` under the interpreter, for the PTX arithmetic Meta's Blackwell kernels inline.

Why: stock Triton's interpreter refuses every inline asm (``InterpreterBuilder.create_inline_asm`` raises). Meta's
tutorials inline packed fp32 arithmetic (``fma.rn.f32x2``, ``mul.f32x2``, ``add.f32x2``) and ``tanh.approx.f32``
in their own files. An asm block whose only compute instruction is one of :data:`OPS` (the ``mov.b64``
packing and ``.reg`` declarations around it move data only) is computed with numpy, per element, in float32 (a
packed op computes each lane alone, so ``pack`` changes nothing). Any other asm is refused with an error that
quotes its instructions: no silent guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
from triton.language import core as tl

from utlx.interpreter.errors import UtlxInterpreterError, kernel_location, where


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    # float64 holds a float32 product exactly: one rounding to float32, as a fused multiply-add does
    return (a.astype(np.float64) * b + c).astype(np.float32)


#: PTX instruction (without operands) -> (number of inputs, float32 body)
OPS: dict[str, tuple[int, Callable[..., np.ndarray]]] = {
    "fma.rn.f32x2": (3, _fma),
    "fma.rn.f32": (3, _fma),
    "mul.f32x2": (2, np.multiply),
    "mul.rn.f32x2": (2, np.multiply),
    "mul.f32": (2, np.multiply),
    "add.f32x2": (2, np.add),
    "add.rn.f32x2": (2, np.add),
    "add.f32": (2, np.add),
    "sub.f32x2": (2, np.subtract),
    "sub.rn.f32x2": (2, np.subtract),
    "tanh.approx.f32": (1, np.tanh),
    "ex2.approx.f32": (1, np.exp2),
    "ex2.approx.ftz.f32": (1, np.exp2),
}

_DATA_ONLY = re.compile(r"^(mov\.b(32|64)|\.reg)\b")


def instructions(asm: str) -> list[str]:
    """The instruction names of an asm block, in order (comments, scope braces and operands dropped)."""
    out = []
    for stmt in re.sub(r"//[^\n]*", "", asm).split(";"):
        stmt = stmt.strip().lstrip("{}").strip()
        name = re.match(r"[a-z][\w.]*", stmt)
        if name:
            out.append(name.group(0))
    return out


class _Call:
    """What ``create_inline_asm`` returns: ``get_result(i)``, as the IR op does."""

    def __init__(self, results: list[Any]) -> None:
        self._results = results

    def get_result(self, i: int) -> Any:
        return self._results[i]


def create_inline_asm(original: Callable[..., Any]) -> Callable[..., Any]:
    """``InterpreterBuilder.create_inline_asm`` that computes the asm blocks of :data:`OPS`."""

    def create(self: Any, asm: str, constraints: str, values: list[Any], types: list[Any], is_pure: bool,
               pack: int) -> Any:
        compute = [i for i in instructions(asm) if not _DATA_ONLY.match(i)]
        op = OPS.get(compute[0]) if len(compute) == 1 else None
        loc = where(kernel_location())
        if op is None:
            raise UtlxInterpreterError(
                f"inline_asm_elementwise: utlx's interpreter computes only asm blocks whose one compute instruction "
                f"is one of {', '.join(sorted(OPS))}; this one runs {compute}{loc}")
        if len(values) != op[0] or len(types) != 1:
            raise UtlxInterpreterError(
                f"inline_asm_elementwise: {compute[0]} takes {op[0]} input(s) and gives one result; the asm block "
                f"passes {len(values)} and asks for {len(types)}{loc}")
        ty = types[0]
        scalar = getattr(ty, "element_ty", ty)
        if scalar != tl.float32:
            raise UtlxInterpreterError(f"inline_asm_elementwise: {compute[0]} gives float32, the asm block asks for "
                                       f"{scalar}{loc}")
        data = op[1](*(np.asarray(v.data, dtype=np.float32) for v in values)).astype(np.float32)
        return _Call([type(values[0])(np.ascontiguousarray(data), scalar)])

    create.__wrapped__ = original  # type: ignore[attr-defined]
    return create
