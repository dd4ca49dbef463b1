"""Passes utlx adds to the AMD TTGIR stage (both ways in: the tritonx plugin and the standalone hook).

* :func:`canonicalize_pointers_pass` replaces ``tritonamdgpu-canonicalize-pointers``: it runs the stock pass,
  except in a module that already holds AMD buffer ops built by utlx. Why: that pass rewrites every pointer
  argument into base + offset form and only knows the ops it expects to meet; a buffer op a kernel wrote
  itself (``tlx.buffer_load`` and friends) makes it fail ("failed to legalize operation 'amdg.buffer_load'
  that was explicitly marked illegal"). Meta's fork has its own passes for this; Gluon kernels skip it.
  Kernels without such ops compile exactly as stock.
* :func:`end_of_ttgir_pass` runs after the stage's last ``symbol-dce``: it puts the kernel's async-copy wait
  counts back once more (on AMD, ``tritonamdgpu-convert-buffer-ops`` recomputes every wait from async tokens
  after the pipeliner, and TLX waits carry none: without this each ``async_load_wait_group(n)`` became a
  wait for everything), runs AMD's warp-pipeline pass when the kernel has ``warp_pipeline_stage`` borders
  (stock runs it only for Gluon kernels; Meta's fork puts it last in the stage so that the cleanup passes do
  not strip the priority markers), then the ``dump_layout`` / ``assert_same_layout`` reporter
  (``layout_ops.report_markers``).

Both return at once for modules without utlx ops.
"""

from __future__ import annotations

from typing import Any

from utlx import compat

from . import layout_ops
from .lowering import restore_async_waits

#: The AMD buffer ops a TLX kernel can build itself (``amd_ops``).
BUFFER_OPS = ("amdg.buffer_load", "amdg.buffer_store", "amdg.buffer_atomic_rmw", "amdg.buffer_load_to_local")


def has_ops(module: Any, names: tuple[str, ...]) -> bool:
    """Does ``module`` contain an op named in ``names``?"""
    found: list[bool] = []

    def visit(op: Any) -> None:
        if not found and op.get_name() in names:
            found.append(True)

    module.walk(visit)
    return bool(found)


def has_warp_pipeline_borders(module: Any) -> bool:
    """Does ``module`` hold warp-pipeline stage borders (the marker ops ``create_warp_pipeline_border`` makes)?"""
    found: list[bool] = []

    def visit(op: Any) -> None:
        if not found and op.get_str_attr(compat.WARP_PIPELINE_BORDER_ATTR):
            found.append(True)

    module.walk(visit)
    return bool(found)


def canonicalize_pointers_pass(module: Any, ctx: Any = None) -> None:
    """tritonx Python pass in place of ``tritonamdgpu-canonicalize-pointers`` (see the module doc)."""
    from triton._C.libtriton import ir

    if has_ops(module, BUFFER_OPS):
        return
    adder = compat.amd_pass_adder("add_canonicalize_pointers")
    pm = ir.pass_manager(module.context)
    adder(pm)
    compat.run_passes(pm, module, "tritonamdgpu-canonicalize-pointers")


def run_warp_pipeline(module: Any) -> bool:
    """Split loops at the kernel's warp-pipeline borders (AMD ``add_warp_pipeline``, Triton 3.7+)."""
    from triton._C.libtriton import ir

    adder = compat.amd_pass_adder("add_warp_pipeline")
    if adder is None or not has_warp_pipeline_borders(module):
        return False
    pm = ir.pass_manager(module.context)
    adder(pm)
    compat.run_passes(pm, module, "utlx-warp-pipeline")
    return True


def end_of_ttgir_pass(module: Any, ctx: Any = None) -> None:
    """tritonx Python pass after the TTGIR stage's last ``symbol-dce`` (see the module doc)."""
    restore_async_waits(module)
    run_warp_pipeline(module)
    layout_ops.report_markers(module)
