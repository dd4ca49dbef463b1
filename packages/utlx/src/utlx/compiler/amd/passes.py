"""Passes utlx adds to the AMD TTGIR stage (both ways in: the tritonx plugin and the standalone hook).

* :func:`canonicalize_pointers_pass` replaces ``tritonamdgpu-canonicalize-pointers``: it runs the stock pass,
  except in a module that already holds AMD buffer ops built by utlx. Why: that pass rewrites every pointer
  argument into base + offset form and only knows the ops it expects to meet; a buffer op a kernel wrote
  itself (``tlx.buffer_load`` and friends) makes it fail ("failed to legalize operation 'amdg.buffer_load'
  that was explicitly marked illegal"). Meta's fork has its own passes for this; Gluon kernels skip it.
  Kernels without such ops compile exactly as stock.
* :func:`dot_operand_conversions_pass` runs after ``tritongpu-reduce-data-duplication``, in modules of TLX
  kernels only. TLX kernels on AMD read their tiles from LDS into registers themselves and often keep them
  loop-carried (the tutorials' "alternating register sets": ``a = tlx.local_load(...)`` before the loop, the
  next tile loaded into ``a`` inside it). Stock Triton cannot give such values the MFMA operand layout (Meta's
  fork propagates it with its own pass), so each ``tl.dot`` converts its operands, and
  ``reduce-data-duplication`` turns every such conversion into an explicit LDS buffer (``local_alloc`` +
  ``local_load``) allocated next to the kernel's own buffers: kernels that fill LDS with their rings then
  need more than the device has (180224 bytes against gfx950's 163840 in ``v7_slice``). This pass turns
  those round trips back into ``convert_layout``: the same values, moved through the backend's scratch
  buffer, which the allocator overlaps with buffers not live at that point. Stock kernels are untouched.
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
from utlx.compiler.common import layout_ops
from utlx.compiler.common.lowering import restore_async_waits

from .vendor import AMD_TLX_ATTR

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


def is_amd_tlx_module(module: Any) -> bool:
    """Did utlx lower TLX ops of this AMD module (``lowering.AMD_TLX_ATTR``)?"""
    try:
        return bool(module.get_int_attr(AMD_TLX_ATTR))
    except Exception:  # no such attribute on this module
        return False


def dot_operand_conversions_pass(module: Any, ctx: Any = None) -> int:
    """tritonx Python pass after ``tritongpu-reduce-data-duplication`` (see the module doc); returns how many
    LDS round trips into MFMA operands it turned back into layout conversions."""
    if not is_amd_tlx_module(module):
        return 0
    defined: dict[int, Any] = {}
    uses: dict[int, int] = {}
    loads: list[Any] = []

    def visit(op: Any) -> None:
        for i in range(op.get_num_results()):
            defined[op.get_result(i).id()] = op
        for i in range(op.get_num_operands()):
            uses[op.get_operand(i).id()] = uses.get(op.get_operand(i).id(), 0) + 1
        if op.get_name() == "ttg.local_load":
            loads.append(op)

    module.walk(visit)
    gb = None
    rewritten = 0
    for load in loads:
        alloc = defined.get(load.get_operand(0).id())
        if alloc is None or alloc.get_name() != "ttg.local_alloc" or alloc.get_num_operands() != 1:
            continue
        src = alloc.get_operand(0)
        # read once, into an MFMA operand
        if uses.get(alloc.get_result(0).id()) != 1:
            continue
        ty = load.get_result(0).get_type()
        if "#ttg.dot_op" not in str(ty):
            continue
        if gb is None:
            gb = compat.make_gluon_builder(module.context)
        gb.set_insertion_point_after(load)
        load.get_result(0).replace_all_uses_with(gb.create_convert_layout(ty, src))
        rewritten += 1
    # the dead local_alloc/local_load pairs go with the stage's next canonicalizer
    return rewritten


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
