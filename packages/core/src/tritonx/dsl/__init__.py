"""Kernel-callable DSL ops on stock Triton: declare them, lower them per target, interpret them, key them.

The third level of extension (after passes and native dialects): new operations a ``@triton.jit``
kernel calls like ``tl`` builtins, without touching Triton. A language module::

    import triton.language as tl
    from tritonx import dsl

    lang = dsl.Language("my_plugin")

    @lang.op(result=dsl.like("x"))
    def rotate_left(x: dsl.Tensor(dtypes=("int32", "uint32")),
                    n: dsl.Constexpr(int, check=lambda n: 0 <= n < 32, expect="0 <= n < 32")):
        \"\"\"Rotate each element of ``x`` left by ``n`` bits.\"\"\"

    @rotate_left.emit("cuda")
    def _(ctx, x, n):
        return ctx.inline_asm(f"shf.l.wrap.b32 $0, $1, $1, {n};", "=r,r", [x], x.dtype)

    @rotate_left.interpret
    def _(ctx, x, n):
        u = x.view("uint32")
        return ((u << n) | (u >> (32 - n))).view(x.dtype)

and kernels ``import my_plugin.language as mp`` and call ``mp.rotate_left(v, 8)`` once the language is
active (``lang.plugin()`` as the plugin's entry point, or ``tritonx.activate(lang.pipeline())``).
See ``docs/extending.md``.

A language with value classes of its own (utlx) runs its ops under Triton's interpreter itself; the
``interpret*`` / ``is_interpreter_semantic`` helpers are tritonx's one reading of that private Triton API,
public so that such a language keeps no copy of it.
"""

from __future__ import annotations

from ..compat.dsl import grid_index as interpreter_program_id
from ..compat.dsl import interpreter as interpreter_module
from ..compat.dsl import interpreter_semantic, interpreter_tensor, interpreting, is_interpreter_semantic
from ..compat.dsl import np_dtype as interpreter_np_dtype
from .interpret import InterpretContext
from .language import Language, LanguagePass
from .lowering import LowerContext, ModuleContext
from .op import Op, Result, like
from .params import ANY, ArgSpec, Constexpr, Tensor, describe_value, unwrap
from .placeholder import Placeholder, collect, decode, next_uid
from .placeholder import emit as emit_placeholder
from .targets import KernelTarget
from .trace import TraceContext

__all__ = [
    "ANY",
    "ArgSpec",
    "Constexpr",
    "InterpretContext",
    "KernelTarget",
    "Language",
    "LanguagePass",
    "LowerContext",
    "ModuleContext",
    "Op",
    "Placeholder",
    "Result",
    "Tensor",
    "TraceContext",
    "collect",
    "decode",
    "describe_value",
    "emit_placeholder",
    "interpreter_module",
    "interpreter_np_dtype",
    "interpreter_program_id",
    "interpreter_semantic",
    "interpreter_tensor",
    "interpreting",
    "is_interpreter_semantic",
    "like",
    "next_uid",
    "unwrap",
]
