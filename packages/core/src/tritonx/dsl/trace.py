"""What a trace-time implementation (``@op.emit``) gets: the semantic, the builder, the target, helpers.

Why trace time: most small ops are one instruction on values the kernel already has (a special
register, a bit trick, a fence). Emitting plain TTIR while the kernel is traced needs no lowering
pass, survives every TTIR and TTGIR pass and reaches the assembly as written, on every Triton version.
``tt.elementwise_inline_asm`` is the usual vehicle: elementwise over tensors (one instruction per
element, ``pack`` elements per asm call) and scalar-capable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..compat import dsl as compat
from ..errors import DslError
from . import placeholder
from .targets import KernelTarget


@dataclass
class TraceContext:
    """Handed to ``@op.emit`` implementations as their first argument.

    Attributes:
        op: the op's full name (``myplugin.rotate_left``), for messages.
        semantic: Triton's semantic object (``semantic.add(x, y)``, ``semantic.to_tensor(3)``...).
        target: what the kernel is compiled for.
    """

    op: str
    semantic: Any
    target: KernelTarget
    language: str = ""

    @property
    def builder(self) -> Any:
        """Triton's ``ir.builder`` (TTIR ops only)."""
        return self.semantic.builder

    def error(self, message: str, *, argument: str | None = None) -> DslError:
        """A :class:`DslError` naming this op (and ``argument``); raise it: Triton adds the source line."""
        prefix = f"{self.op}: argument '{argument}' " if argument else f"{self.op}: "
        return DslError(f"{prefix}{message} [target {self.target.name}]", op=self.op, argument=argument,
                        target=self.target.name)

    def inline_asm(self, asm: str, constraints: str, args: Sequence[Any], dtype: Any, *, pure: bool = True,
                   pack: int = 1) -> Any:
        """One ``tt.elementwise_inline_asm``: ``asm`` over ``args`` (tensors of one shape, or scalars).

        The result has ``dtype`` and the shape of the tensor arguments (a scalar when there are none).
        ``pure=False`` keeps an op with side effects (a fence, a barrier) where it is written.
        """
        from triton.language import core as tl

        args = [self.semantic.to_tensor(a) if not isinstance(a, tl.tensor) else a for a in args]
        block = next((a for a in args if a.type.is_block()), None)
        if block is not None:
            args = [a if a.type.is_block() else self.semantic.broadcast_impl_shape(a, block.shape) for a in args]
        ty = tl.block_type(dtype, list(block.shape)) if block is not None else dtype
        handles = [a.handle for a in args]
        op = compat.create_inline_asm(self.builder, asm, constraints, handles, [ty.to_ir(self.builder)], pure, pack)
        return tl.tensor(op.get_result(0), ty)

    def placeholder(self, name: str, attrs: dict[str, Any] | None = None, handles: Sequence[Any] = (),
                    tensors: Sequence[Any] = (), result: Any = None, pure: bool = False) -> Any:
        """Emit a placeholder of this language (see :mod:`tritonx.dsl.placeholder`); returns its ``ir.value``.

        For languages that lower their ops together (``Language(lowering=...)``): handles are scalar
        ``ir.value``s, tensors ``tl.tensor``s of one shape, ``result`` the ``tl`` type of a real result.
        """
        return placeholder.emit(self.semantic, self.language, name, attrs, handles, tensors, result, pure)
