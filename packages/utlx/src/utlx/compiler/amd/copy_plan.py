"""Which AMD asynchronous copies go straight to LDS and which are staged through registers.

Why a planner: a copy into LDS can be direct only where the target has a direct-to-LDS copy stock Triton lowers
(gfx950), Triton's alignment analysis allows at least 4 bytes per lane and the buffer's layout allows it; the
decision needs every placeholder of the module (views, pinned layouts, allocations), so it runs once before the
lowerings, as the AMD vendor's planning step (:func:`utlx.compiler.common.lowering.register_vendor`).
"""

from __future__ import annotations

from typing import Any

import triton.language as tl

from utlx import compat
from utlx.compiler.common import layouts
from utlx.compiler.common.downgrade import downgrade
from utlx.compiler.common.lowering import Lowering, kernel_name
from utlx.compiler.common.placeholders import Placeholder

from . import copy_probe


def _has_amd_copies(found: list[Placeholder]) -> bool:
    return any(ph.name in copy_probe.PROBED_OPS for ph in found)

#: Lanes of a gfx9 wave (one direct-to-LDS copy writes WAVE x bytes-per-lane contiguous bytes of LDS).
WAVE = 64


def _lane_bytes(copy: Any, elem_bytes: int) -> int:
    """Bytes per lane of a direct-to-LDS copy as the backend will emit it (see compat)."""
    if compat.DIRECT_TO_LDS_NARROWS_TO_PADDING:
        return 4
    return copy.vector * elem_bytes if copy is not None else 16


def _plan_amd_copies(low: Lowering, found: list[Placeholder], probed: dict[int, Any]) -> None:
    """Give each AMD copy its probed layout and decide which asynchronous copies go straight to LDS.

    A copy into LDS is direct when the target has direct-to-LDS copies stock Triton lowers (gfx950), Triton's
    analysis allows at least 4 bytes per lane, and (3.6) its buffer's layout is not a padded layout with
    permuted bases; otherwise it is staged through registers (same values, synchronous) with a warning.
    """
    copies = [ph for ph in found if ph.name in copy_probe.PROBED_OPS]
    for index, ph in enumerate(copies):
        if index in probed:
            low.copy_layouts[id(ph)] = probed[index]
    alloc_of = layouts.alloc_of_views(found)
    allocs = {ph.uid: ph for ph in found if ph.name == "local_alloc"}
    # offsets pinned by require_layout to a layout stock can build: the copy is built in that layout (the
    # kernel's choice of per-lane vector, as in the fork), whatever coalescing would pick
    pins = {ph.result.id(): bool(ph.attrs.get("layout")) for ph in found if ph.name == "require_layout"}
    kernel = kernel_name(low.module)
    for ph in found:
        if ph.name not in layouts.ASYNC_COPY_OPS:
            continue
        copy = low.copy_layouts.get(id(ph))
        pin = pins.get(ph.tensors[0].id()) if ph.name == "buffer_load_to_local" else None
        if pin:
            copy = None
        alloc = allocs.get(alloc_of.get(ph.handles[0].id(), -1))
        spec = alloc.attrs.get("layout") if alloc is not None else None
        elem_bytes = max(1, tl.dtype(alloc.attrs["dtype"] if alloc is not None else ph.attrs.get("dtype", "fp16"))
                         .primitive_bitwidth // 8)
        reason = None
        if pin is False:
            reason = ("its offsets were pinned to a layout stock Triton cannot build, and in the layout the compiler "
                      "picks instead the lanes do not write consecutive LDS addresses")
        elif low.target != "hip:gfx950":
            reason = (f"{low.target} has no direct-to-LDS copy that stock Triton lowers (CDNA3 moves 4 bytes per "
                      "lane and stock enables them on gfx950 and gfx1250 only)")
        elif copy is not None and copy.vector * elem_bytes < 4:
            reason = (f"Triton's alignment analysis allows {copy.vector} element(s) ({copy.vector * elem_bytes} "
                      "bytes) per lane; a direct-to-LDS copy moves 4 or 16")
        elif spec and spec.get("kind") == "padded" and spec.get("offset_bases") is not None \
                and not compat.DIRECT_TO_LDS_INTO_PERMUTED_PADDED:
            reason = f"Triton {compat.TRITON_VERSION_STR} cannot copy straight into a padded layout with permuted bases"
        elif spec and spec.get("kind") == "padded" and min(p[0] for p in spec["pairs"]) * elem_bytes < \
                WAVE * _lane_bytes(copy, elem_bytes):
            # One wave writes WAVE x lane-bytes contiguous bytes per copy, which a padding interval may not split.
            # From 3.8 the backend narrows the copy to fit (down to 4 bytes per lane); before, it keeps its width.
            run = WAVE * _lane_bytes(copy, elem_bytes)
            reason = (f"its buffer's padded layout pads every {min(p[0] for p in spec['pairs'])} elements, inside "
                      f"the {run} contiguous bytes one wave writes per direct-to-LDS copy (pad every "
                      f"{run // elem_bytes} elements or more)")
        if reason is None:
            low.copy_routes[id(ph)] = "direct"
            if alloc is not None and copy is not None:
                low.alloc_orders.setdefault(alloc.uid, list(copy.order))
        else:
            low.copy_routes[id(ph)] = "staged"
            downgrade(ph.name, f"in kernel '{kernel}' ({ph.describe()}) staged through registers: {reason}",
                      target=str(low.target or ""))
