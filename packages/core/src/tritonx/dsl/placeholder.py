"""Placeholders: how an op that must be lowered later survives tracing, the TTIR passes and the TTGIR conversion.

Why: stock ``ir.builder`` creates no TTGIR op, and TTGIR ops created while tracing break
``convert-triton-to-tritongpu`` (their tensor operands get no layout). So an op lowered later is traced
as a ``tt.elementwise_inline_asm`` whose asm string names it and carries its static arguments as JSON.
That op is legal TTIR, passes every TTIR pass, is converted like any elementwise op (its tensors get
the default blocked layout), and its language's pass then replaces it (after
``convert-triton-to-tritongpu``, with Gluon's TTGIR builder, or at the start of TTIR for native ops).
It is emitted impure (nothing may move or merge it); the lowering marks it pure once replaced and a
canonicalizer run deletes it.

Encoding (asm string): ``<language>|<op>|<uid>|<json attrs>``. Operands are ``attrs["nh"]`` scalar
*handles* followed by *tensors*, which must share one shape (the op is elementwise to MLIR). It has one
result: the real type for a tensor or scalar result, else an i32 handle (a scalar, or a dummy tensor of
the tensors' shape). A tensor result without tensor operands gets a dummy operand of its shape
(``attrs["dummy"]``). Only the string format is read back, so any language may emit and lower its own.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..compat import dsl as compat

_uids = itertools.count()


def _json_default(value: Any) -> Any:
    """Static arguments that are not JSON types: ``tl`` dtypes by name, tuples as lists, enums by value."""
    name = getattr(value, "name", None)
    if hasattr(value, "primitive_bitwidth") and name is not None:
        return str(value)
    if hasattr(value, "value") and not callable(value.value):  # enum members
        return value.value
    raise TypeError(f"a static op argument must be a JSON value, a tl dtype or an enum, got {type(value).__name__}")


def encode(language: str, op: str, uid: int, attrs: dict[str, Any]) -> str:
    """The asm string of a placeholder."""
    payload = json.dumps(attrs, sort_keys=True, separators=(",", ":"), default=_json_default)
    return f"{language}|{op}|{uid}|{payload}"


def next_uid() -> int:
    """A process-unique id for a new placeholder (ops refer to each other by uid)."""
    return next(_uids)


def emit(semantic: Any, language: str, op: str, attrs: dict[str, Any] | None = None, handles: Sequence[Any] = (),
         tensors: Sequence[Any] = (), result: Any = None, pure: bool = False, uid: int | None = None) -> Any:
    """Emit placeholder ``op`` of ``language`` while tracing; returns the ``ir.value`` of its result.

    ``handles`` are scalar ``ir.value``s; ``tensors`` are ``tl.tensor``s of one shape; ``result`` is the
    ``tl`` type of a real result (a block or scalar type), or None for an i32 handle.
    """
    from triton.language import core as tl

    b = semantic.builder
    uid = next_uid() if uid is None else uid
    attrs = dict(attrs or {})
    attrs["nh"] = len(handles)
    operands = list(handles) + [t.handle for t in tensors]
    if tensors:
        shapes = {tuple(int(tl._unwrap_if_constexpr(s)) for s in t.shape) if t.type.is_block() else ()
                  for t in tensors}
        if len(shapes) > 1:
            raise ValueError(f"placeholder {language}.{op}: tensor operands must share one shape, got {sorted(shapes)}")
    if result is None:
        if tensors and tensors[0].type.is_block():
            result_ty = tl.block_type(tl.int32, list(tensors[0].shape)).to_ir(b)
        else:
            result_ty = b.get_int32_ty()
    else:
        result_ty = result.to_ir(b)
        if not tensors and result.is_block():
            # A tensor result needs a tensor operand (the op is elementwise): feed a constant of its shape.
            dummy_ty = tl.block_type(tl.int32, list(result.shape)).to_ir(b)
            operands.append(b.create_splat(dummy_ty, b.get_int32(0)))
            attrs["dummy"] = True
    asm = compat.create_inline_asm(b, encode(language, op, uid, attrs), "", operands, [result_ty], pure, 1)
    return asm.get_result(0)


@dataclass
class Placeholder:
    """One placeholder found in a module, decoded. Operands are read live (an earlier lowering may have
    replaced one)."""

    op: Any  # ir.operation
    language: str
    name: str
    uid: int
    attrs: dict[str, Any]

    def _operands(self) -> list[Any]:
        n = self.op.get_num_operands() - (1 if self.attrs.get("dummy") else 0)
        return [self.op.get_operand(i) for i in range(n)]

    @property
    def handles(self) -> list[Any]:
        return self._operands()[: self.attrs.get("nh", 0)]

    @property
    def tensors(self) -> list[Any]:
        return self._operands()[self.attrs.get("nh", 0):]

    @property
    def operands(self) -> list[Any]:
        """Handles, then tensors."""
        return self._operands()

    @property
    def result(self) -> Any:
        return self.op.get_result(0)

    def location(self) -> str:
        """The op's source location (``file:line:col``), or '' when unknown."""
        try:
            return str(self.result.get_loc())
        except Exception:  # location printing is best effort
            return ""

    def describe(self) -> str:
        """``<language>.<op>`` plus the source location, for error messages."""
        loc = self.location()
        return f"{self.language}.{self.name}" + (f" at {loc}" if loc else "")

    def mark_done(self, builder: Any) -> None:
        """Mark the placeholder pure, so the canonicalizer removes it once its result is unused."""
        self.result.set_attr("pure", builder.get_bool_attr(True))


def decode(op: Any, language: str | None = None) -> Placeholder | None:
    """The :class:`Placeholder` behind ``op`` (of ``language`` when given), or None."""
    if op.get_name() != "tt.elementwise_inline_asm":
        return None
    text = op.get_str_attr("asm_string")
    if not text or text.count("|") < 3:
        return None
    lang, name, uid, payload = text.split("|", 3)
    if (language is not None and lang != language) or not uid.isdigit():
        return None
    try:
        attrs = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(attrs, dict):
        return None
    return Placeholder(op=op, language=lang, name=name, uid=int(uid), attrs=attrs)


def collect(module: Any, language: str | None = None) -> list[Placeholder]:
    """Every placeholder of ``module`` (of ``language`` when given), definitions before their uses."""
    found: list[Placeholder] = []

    def visit(op: Any) -> None:
        ph = decode(op, language)
        if ph is not None:
            found.append(ph)

    module.walk(visit)
    return found
