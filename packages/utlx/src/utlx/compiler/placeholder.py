"""TLX ops as placeholder ops that survive Triton's TTIR pipeline and TTIR -> TTGIR conversion.

Why placeholders: stock ``ir.builder`` cannot create TTGIR ops, and TTGIR ops created during tracing
break ``convert-triton-to-tritongpu`` (their tensor operands get no source materialization). So while a
kernel is traced, each TLX op becomes a ``tt.elementwise_inline_asm`` whose asm string names the op and
carries its static parameters as JSON. That op is legal TTIR, passes every TTIR pass, is converted like
any elementwise op (its tensors get the default blocked layout), and is then replaced by real TTGIR ops
in :mod:`utlx.compiler.lowering`, right after the conversion.

Encoding (asm string): ``utlx|<op>|<uid>|<json attrs>``. Operands are ``attrs["nh"]`` scalar handles
(the i32 results of other placeholders, or plain scalars such as indices) followed by tensors, which
must all share one shape (an op constraint); differently shaped tensors travel through a separate
``stash`` placeholder referenced by uid. Every placeholder has exactly one result: an i32 "handle" for
memory-descriptor-like values, the real tensor type for tensor results, or a dummy otherwise. Side
effects are kept by emitting the op impure; the lowering marks it pure once replaced so that DCE
removes it.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

import triton.language as tl

PREFIX = "utlx|"
_uids = itertools.count()
#: uid of the most recently emitted placeholder (for ops that reference another placeholder by uid).
last_uid = -1


def _builder(sem: Any) -> Any:
    return sem.builder


def emit(sem: Any, op: str, attrs: dict[str, Any] | None = None, handles: list[Any] = (),
         tensors: list[Any] = (), result: Any = None, pure: bool = False) -> Any:
    """Emit placeholder ``op`` and return the ``ir.value`` of its single result.

    ``handles`` are scalar ``ir.value``s; ``tensors`` are ``tl.tensor``s of one shape; ``result`` is the
    ``tl`` block type of a real tensor result. Without ``result`` the op yields an i32 handle (scalar),
    or, when tensors are present, a dummy i32 tensor of their shape (an op constraint).
    """
    import triton.language as tl

    global last_uid
    b = _builder(sem)
    uid = next(_uids)
    last_uid = uid
    attrs = dict(attrs or {})
    attrs["nh"] = len(handles)
    operands = list(handles) + [t.handle for t in tensors]
    if result is None:
        if tensors:
            result_ty = tl.block_type(tl.int32, list(tensors[0].shape)).to_ir(b)
        else:
            result_ty = b.get_int32_ty()
    else:
        result_ty = result.to_ir(b)
        if not tensors and result.is_block():
            # A tensor result needs a tensor operand: feed a constant of the result's shape.
            dummy_ty = tl.block_type(tl.int32, list(result.shape)).to_ir(b)
            operands.append(b.create_splat(dummy_ty, b.get_int32(0)))
            attrs["dummy"] = True
    text = f"{PREFIX}{op}|{uid}|{json.dumps(attrs, sort_keys=True, separators=(',', ':'))}"
    asm = b.create_inline_asm(text, "", operands, [result_ty], pure, 1)
    return asm.get_result(0)


@dataclass
class Placeholder:
    """One placeholder op found in a module, decoded."""

    op: Any  # ir.operation
    name: str
    uid: int
    attrs: dict[str, Any]

    def _operands(self) -> list[Any]:
        # Read live: earlier lowerings may have replaced an operand (replace_all_uses_with).
        n = self.op.get_num_operands() - (1 if self.attrs.get("dummy") else 0)
        return [self.op.get_operand(i) for i in range(n)]

    @property
    def handles(self) -> list[Any]:
        return self._operands()[: self.attrs.get("nh", 0)]

    @property
    def tensors(self) -> list[Any]:
        return self._operands()[self.attrs.get("nh", 0):]

    @property
    def result(self) -> Any:
        return self.op.get_result(0)

    def describe(self) -> str:
        """``utlx.<op>`` plus the source location, for error messages."""
        loc = ""
        try:
            loc = f" at {self.result.get_loc()}"
        except Exception:  # location printing is best effort
            loc = ""
        return f"utlx.{self.name}{loc}"


def decode(op: Any) -> Placeholder | None:
    """The :class:`Placeholder` for ``op``, or ``None`` when ``op`` is not a utlx placeholder."""
    if op.get_name() != "tt.elementwise_inline_asm":
        return None
    text = op.get_str_attr("asm_string")
    if not text or not text.startswith(PREFIX):
        return None
    _, name, uid, payload = text.split("|", 3)
    return Placeholder(op=op, name=name, uid=int(uid), attrs=json.loads(payload))


def collect(module: Any) -> list[Placeholder]:
    """All placeholders of ``module`` in an order where definitions come before their uses."""
    found: list[Placeholder] = []

    def visit(op: Any) -> None:
        ph = decode(op)
        if ph is not None:
            found.append(ph)

    module.walk(visit)
    return found


def dtype_of_name(name: str) -> Any:
    """The ``tl`` type a placeholder attribute names (``str(dtype)``: ``fp16``, or ``pointer<fp16>``)."""
    if name.startswith("pointer<") and name.endswith(">"):
        return tl.pointer_type(dtype_of_name(name[len("pointer<"):-1]))
    return tl.dtype(name)
