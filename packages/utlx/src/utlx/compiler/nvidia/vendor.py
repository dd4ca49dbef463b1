"""What NVIDIA adds to the lowering of a module (registered as the ``cuda`` :class:`~..common.lowering.Vendor`).

* before: the stock descriptor-encoding pass where TMA ops are present (TMA ops verify that descriptor and buffer
  layouts match, and descriptors get their layout from that pass, normally run later: run it while the frontend's
  anchor loads still show how each descriptor is used); then the cp.async widths Triton's alignment analysis
  allows, measured on a clone (:mod:`.copy_width`), so that no copy reaches the LLVM lowering too narrow;
* plan: which ``alloc_barriers`` a later async-proxy fence already covers (:mod:`.init_fence`), and where the
  members of each tensor-memory ``storage_alias_spec`` live (:mod:`.blackwell.alias`);
* after: barriers that retire every warpgroup's wgmma reads of a ring before its bytes are reused (:mod:`.retire`).
"""

from __future__ import annotations

from typing import Any

from utlx import compat
from utlx.compiler.common import placeholders
from utlx.compiler.common.lowering import Lowering, Vendor, kernel_name, lower_found, register_vendor
from utlx.compiler.common.placeholders import Placeholder
from utlx.compiler.common.target import target_of

from . import copy_width, init_fence, partition_layouts, retire
from .blackwell import alias

TMA_OPS = ("async_descriptor_load", "async_descriptor_store")


def prepare(module: Any, found: list[Placeholder], arch: str | None) -> tuple[list[Placeholder], dict[str, Any]]:
    from triton._C.libtriton import ir

    if any(ph.name in TMA_OPS for ph in found):
        pm = ir.pass_manager(module.context)
        compat.add_descriptor_encoding_pass(pm)
        compat.run_passes(pm, module, "utlx-descriptor-encoding")
        found = placeholders.collect(module)
    staged: set[int] = set()
    loads = {ph.uid: ph.describe() for ph in found if ph.name == "async_load"}
    if loads:
        # One uid per traced op; loop unrolling in make_ttir can copy a placeholder, so uids may repeat.
        uids = [ph.uid for ph in found if ph.name == "async_load"]
        target = target_of(str(module))
        widths = copy_width.probe(module, uids, lambda m: lower_found(m, placeholders.collect(m), arch, probe=True,
                                                                      target=target))
        staged = copy_width.narrow_copies(widths, kernel_name(module), loads)
    return found, {"staged": staged}


def plan(low: Lowering, found: list[Placeholder], copy_layouts: dict) -> None:
    low.unfenced = init_fence.covered_fences(low.module, found)
    alias.plan(low, found)  # where each member of a tensor-memory storage_alias_spec lives


def finish(low: Lowering, probe: bool) -> None:
    if not probe:
        # Another warpgroup's wgmma may still read a ring the allocator hands to the epilogue (retire.py).
        retire.insert_retire_barriers(low.module, low.builder, list(low.mma_allocs.values()), low.full_mma_waits)


def settle(low: Lowering, probe: bool) -> None:
    tasks = low.vendor.get("relayout")
    if tasks:
        # Tasks on fewer warps than the kernel hold tensors laid out for the kernel's warps (partition_layouts.py).
        partition_layouts.relayout_partitions(low.module, tasks)


register_vendor("cuda", Vendor(prepare=prepare, plan=plan, finish=finish, settle=settle))
