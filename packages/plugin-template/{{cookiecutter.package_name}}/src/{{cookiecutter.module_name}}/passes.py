"""The plugin's Python pass: runs inside Triton's TTGIR stage, on Triton's own ``ir.module``.

Why a marker: it is the smallest effect that is visible in the TTGIR text a user can dump
(``compiled.asm["ttgir"]`` or ``tritonx pipeline``), so the tests can prove that the pass ran, where
it ran, and that it did not run when the plugin is off. Replace the body with your transformation.
"""

from __future__ import annotations

from typing import Any

from . import PLUGIN_NAME

#: Bool attribute set on every ``tt.func`` the pass visits.
VISITED_ATTR = f"{PLUGIN_NAME}.visited"
#: i32 module attribute: how many ``tt.load`` ops the kernel has when the pass runs.
NUM_LOADS_ATTR = f"{PLUGIN_NAME}.num_loads"


def mark_kernels(module: Any, ctx: Any) -> None:
    """Mark each kernel function and record the number of global loads on the module.

    ``module`` is ``triton._C.libtriton.ir.module``; ``ctx`` is the ``tritonx.PassContext`` of the
    compilation (unused here). Triton's Python bindings cannot set attributes on an arbitrary op, so
    functions are found by walking and then fetched by name, which gives an object that can.
    """
    from triton._C.libtriton import ir

    functions: list[str] = []
    loads = 0

    def visit(op: Any) -> None:
        nonlocal loads
        name = op.get_name()
        if name == "tt.func":
            functions.append(op.get_str_attr("sym_name"))
        elif name == "tt.load":
            loads += 1

    module.walk(visit)
    builder = ir.builder(module.context)
    for name in functions:
        module.get_function(name).set_attr(VISITED_ATTR, builder.get_bool_attr(True))
    module.set_attr(NUM_LOADS_ATTR, builder.get_int32_attr(loads))
