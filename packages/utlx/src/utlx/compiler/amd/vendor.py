"""What AMD adds to the lowering of a module (registered as the ``hip`` :class:`~..common.lowering.Vendor`).

* before: the layouts Triton's coalescing gives the pointers of each copy into LDS, probed on a clone
  (:mod:`.copy_probe`);
* plan: which copies go straight to LDS and which are staged through registers (:mod:`.copy_plan`);
* after: the module is marked as one whose TLX ops utlx lowered (:data:`AMD_TLX_ATTR`): the later AMD passes
  (:mod:`.passes`) act only on those.
"""

from __future__ import annotations

from typing import Any

from utlx.compiler.common.lowering import Lowering, Vendor, register_vendor
from utlx.compiler.common.placeholders import Placeholder

from . import copy_plan, copy_probe

#: Module attribute marking an AMD module whose TLX ops utlx lowered.
AMD_TLX_ATTR = "utlx.amd_tlx"


def prepare(module: Any, found: list[Placeholder], arch: str | None) -> tuple[list[Placeholder], dict[str, Any]]:
    layouts = copy_probe.probe(module, found) if copy_plan._has_amd_copies(found) else {}
    return found, {"copy_layouts": layouts}


def plan(low: Lowering, found: list[Placeholder], copy_layouts: dict) -> None:
    copy_plan._plan_amd_copies(low, found, copy_layouts)


def finish(low: Lowering, probe: bool) -> None:
    if not probe:
        low.module.set_attr(AMD_TLX_ATTR, low.builder.get_int32_attr(1))


register_vendor("hip", Vendor(prepare=prepare, plan=plan, finish=finish))
