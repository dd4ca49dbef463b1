"""The two passes a language runs: native ops at the start of TTIR, TTGIR lowerings after the conversion.

* :func:`materialize_native` (TTIR, right after ``inline``): each placeholder of an op implemented by a
  native custom op becomes that op, built by the plugin library's callback through Triton's plugin ABI.
  The dialect op then lives through the TTIR passes until the plugin's own conversion pass lowers it.
  The callback gets ``[*tensor arguments, stand_in]``: it builds its op from the leading operands and
  writes it into ``operands[0]`` (Triton's convention; 3.8+ return it to Python), and replaces the uses
  of ``stand_in`` (the placeholder) with it, because Triton 3.7's binding drops the value.
* :func:`lower_placeholders` (TTGIR, right after ``convert-triton-to-tritongpu``): every tensor now has a
  layout, so ``@op.lower`` implementations build TTGIR ops with Gluon's ``GluonOpBuilder`` and the
  stock TTGIR pipeline treats them like its own.

Both return at once when the module has no placeholder of the language, so kernels that do not use
it compile byte-identically to stock Triton.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..compat import dsl as compat
from ..errors import DslError
from ..integration.context import PassContext
from . import placeholder
from .placeholder import Placeholder
from .protocols import LanguageView
from .targets import KernelTarget

#: attrs key holding how a placeholder of the per-op mode is lowered: "lower" or "native"
STAGE_KEY = "$stage"
#: attrs keys: names of the scalar (handle) and tensor operands, static arguments
HANDLE_NAMES, TENSOR_NAMES, STATIC_ARGS = "$h", "$t", "$a"
#: attrs key: ``{argument: [dtype name, shape]}`` of the tensor arguments as traced
TYPES = "$ty"


@dataclass
class LowerContext:
    """Handed to ``@op.lower`` implementations, with the builder already placed at the op.

    Attributes:
        op: the op's full name; placeholder: the placeholder being replaced.
        builder: Gluon's ``GluonOpBuilder`` (TTGIR ops), insertion point right after the placeholder.
        target: the compile target; operands: ``{argument: ir.value}`` of the tensor arguments (converted,
            so they carry layouts); static: ``{argument: value}`` of the other arguments.
        result_type: the converted ``ir.type`` of the op's result (None for an op without result).
    """

    op: str
    placeholder: Placeholder
    builder: Any
    target: KernelTarget
    operands: dict[str, Any]
    static: dict[str, Any]
    result_type: Any = None
    pass_context: PassContext | None = field(default=None, repr=False)

    def dtype(self, argument: str) -> Any:
        """The ``tl`` element type of tensor ``argument`` as traced."""
        from triton.language import core as tl

        return tl.dtype(self.placeholder.attrs[TYPES][argument][0])

    def shape(self, argument: str) -> list[int]:
        """The shape of tensor ``argument`` as traced ([] for a scalar)."""
        return list(self.placeholder.attrs[TYPES][argument][1])

    def error(self, message: str) -> DslError:
        return DslError(f"{self.op}: {message} [target {self.target.name}] ({self.placeholder.describe()})", op=self.op,
                        target=self.target.name)

    def convert_layout(self, value: Any, type: Any = None) -> Any:
        """``ttg.convert_layout`` of ``value`` to ``type`` (default: the op's result type)."""
        return self.builder.create_convert_layout(type if type is not None else self.result_type, value)


@dataclass
class ModuleContext:
    """Handed to a language's own module lowering (``Language(lowering=...)``)."""

    language: LanguageView
    target: KernelTarget
    pass_context: PassContext | None = None


def _named_operands(ph: Placeholder) -> dict[str, Any]:
    names = list(ph.attrs.get(HANDLE_NAMES, [])) + list(ph.attrs.get(TENSOR_NAMES, []))
    return dict(zip(names, ph.operands, strict=False))


def lower_placeholders(language: LanguageView, module: Any, ctx: PassContext) -> int:
    """Lower ``language``'s TTGIR placeholders in ``module``; returns how many were lowered."""
    found = [ph for ph in placeholder.collect(module, language.name) if ph.attrs.get(STAGE_KEY) != "native"]
    if not found:
        return 0
    target = ctx.target  # the compile's KernelTarget, as the code generator's options made it
    if language.module_lowering is not None:
        language.module_lowering(module, found, ModuleContext(language, target, ctx))
        return len(found)
    gb = compat.gluon_builder(module.context, getattr(ctx.options, "arch", None))
    for ph in found:
        op = language.get(ph.name)
        impl = op.implementation("lower", target, ph.describe())
        gb.set_insertion_point_after(ph.op)
        compat.set_builder_loc(gb, ph.result)
        has_result = op.result is not None
        lctx = LowerContext(op=op.full_name, placeholder=ph, builder=gb, target=target, operands=_named_operands(ph),
                            static=dict(ph.attrs.get(STATIC_ARGS, {})),
                            result_type=ph.result.get_type() if has_result else None, pass_context=ctx)
        value = impl(lctx, **lctx.operands, **lctx.static)
        if has_result:
            if value is None:
                raise lctx.error("its lowering returned no value, but the op has a result")
            ph.result.replace_all_uses_with(value)
        ph.mark_done(gb)
    compat.run_canonicalizer(module, f"tritonx-dsl-{language.name}-cleanup")
    return len(found)


def materialize_native(language: LanguageView, module: Any, ctx: PassContext) -> int:
    """Turn ``language``'s native-op placeholders into the plugin's dialect ops; returns how many."""
    from triton._C.libtriton import ir

    found = [ph for ph in placeholder.collect(module, language.name) if ph.attrs.get(STAGE_KEY) == "native"]
    if not found:
        return 0
    target = ctx.target  # the compile's KernelTarget, as the code generator's options made it
    builder = ir.builder(module.context)
    for ph in found:
        op = language.get(ph.name)
        custom = op.implementation("native", target, ph.describe())
        create = _custom_op(op.full_name, custom, target)
        builder.set_insertion_point_after(ph.op)
        compat.set_builder_loc(builder, ph.result)
        value = create(builder, [*ph.operands, ph.result])
        if value is not None and value.id() != ph.result.id():
            ph.result.replace_all_uses_with(value)
        ph.mark_done(builder)
    compat.run_canonicalizer(module, f"tritonx-dsl-{language.name}-native")
    left = [ph for ph in placeholder.collect(module, language.name) if ph.attrs.get(STAGE_KEY) == "native"]
    if left:
        ph = left[0]
        raise DslError(
            f"{language.name}.{ph.name}: the native custom op did not take over the op's result "
            f"({ph.describe()}): its callback must build the op from the leading operands, write it into operands[0] "
            "and replace the uses of the last operand (a stand-in) with it: Triton 3.7 drops the value written to "
            "operands[0]", op=ph.name)
    return len(found)


def _custom_op(op_name: str, custom: str, target: KernelTarget) -> Callable[..., Any]:
    method = compat.custom_op_method(custom)
    if method is None:
        raise DslError(
            f"{op_name}: native custom op {custom!r} is not loaded into Triton [target {target.name}]: load the "
            "plugin library that declares it before Triton starts (TRITONX_NATIVE_PLUGINS=<library>; "
            "tritonx.load_native(path) on Triton 3.9)", op=op_name, target=target.name)
    return method
