"""The plugin's kernel-callable ops: ``import {{ cookiecutter.module_name }}.language as ops`` in a kernel module.

Each op is declared once with ``tritonx.dsl``: its signature (the annotations are the argument checks),
an implementation per target and its meaning under Triton's CPU interpreter (``TRITON_INTERPRET=1``).
The plugin's pipeline (``plugin.py``) activates the language; a kernel calling an op while the plugin
is off fails to compile with an error saying how to enable it.
"""

from __future__ import annotations

from typing import Any

from tritonx import dsl

from . import PLUGIN_NAME, __version__

#: The language (named like the plugin): prefixes its ops in messages, keys them into Triton's cache.
lang = dsl.Language(PLUGIN_NAME, version=__version__)
{%- if cookiecutter.variant == "python" %}


@lang.op(result=dsl.like("x"))
def rotate_left(
    x: dsl.Tensor(dtypes=("int32", "uint32")),
    n: dsl.Constexpr(int, check=lambda n: 0 <= n < 32, expect="0 <= n < 32"),
):
    """Rotate every 32-bit element of ``x`` left by ``n`` bits: one funnel-shift instruction per element."""


@rotate_left.emit("cuda")
def _rotate_left_ptx(ctx: dsl.TraceContext, x: Any, n: int) -> Any:
    # shf.l.wrap.b32 d, lo, hi, n: the high word of ({hi, lo} << n); with lo = hi = x, x rotated left.
    return ctx.inline_asm(f"shf.l.wrap.b32 $0, $1, $1, {n};", "=r,r", [x], x.dtype)


@rotate_left.emit("hip")
def _rotate_left_amdgcn(ctx: dsl.TraceContext, x: Any, n: int) -> Any:
    # v_alignbit_b32 d, hi, lo, s: the low word of ({hi, lo} >> s); rotating right by 32 - n is left by n.
    return ctx.inline_asm(f"v_alignbit_b32 $0, $1, $1, {(32 - n) % 32}", "=v,v", [x], x.dtype)


@rotate_left.interpret
def _rotate_left_cpu(ctx: dsl.InterpretContext, x: Any, n: int) -> Any:
    import numpy as np

    bits = x.view(np.uint32)
    return ((bits << np.uint32(n)) | (bits >> np.uint32((32 - n) % 32))).view(x.dtype)
{%- else %}


@lang.op(result=dsl.like("x"))
def square(x: dsl.Tensor(dtypes="float")):
    """``x * x``, built as the dialect's ``{{ cookiecutter.plugin_name }}.square`` op.

    The native library's custom op ``SQUARE_CUSTOM_OP`` (Triton's plugin ABI) builds the op at the start
    of TTIR; the library's ``{{ cookiecutter.plugin_name }}_from_square`` conversion pass lowers it to
    ``arith.mulf`` before TTGIR.
    """


#: The custom op the library declares (``native/Plugin.cpp``); Triton makes it an ``ir.builder`` method.
SQUARE_CUSTOM_OP = f"create_{PLUGIN_NAME}_square"
square.native("*", SQUARE_CUSTOM_OP)


@square.interpret
def _square_cpu(ctx: dsl.InterpretContext, x: Any) -> Any:
    return x * x
{%- endif %}
