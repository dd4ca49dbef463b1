"""What the kernel being traced is compiled for: tritonx's one target type, plus what utlx needs to know of it.

Why at trace time: target errors ("Hopper-only op on gfx942") must point at the kernel's source line, which only
the code generator knows; and the options carry ``num_warps``, which fixes the MMA layout. The target is
``tritonx.dsl.KernelTarget`` (a ``tritonx.Target`` plus the kernel's warp count): the same type from the public
API (``tritonx.compile_for("cuda:90", ...)``) through a Python pass's ``ctx.target`` to these bodies and to the
lowering, which gets the pass context's object (:func:`target_of` reads a module's own ``ttg.target`` into that
type when the lowering runs outside a pass). No target text is taken apart here: core's ``Target`` does it.
"""

from __future__ import annotations

import re
from typing import Any

from tritonx import Target
from tritonx.dsl import KernelTarget

__all__ = ["KernelTarget", "Target", "from_semantic", "smem_limit", "target_of"]

# Shared memory a CTA may use (bytes): Hopper/Blackwell 227 KiB opt-in, MI300 64 KiB, MI350 160 KiB.
SMEM_LIMITS = {"cuda:90": 232448, "cuda:80": 166912, "cuda:89": 101376, "cuda:100": 232448, "cuda:103": 232448,
               "cuda:120": 101376, "hip:gfx942": 65536, "hip:gfx950": 163840, "hip:gfx90a": 65536}


def smem_limit(target: Target | str) -> int:
    """Shared memory one CTA may use on ``target`` (a target, or its text as a placeholder records it), in bytes."""
    name = str(target)
    if name in SMEM_LIMITS:
        return SMEM_LIMITS[name]
    try:
        parsed = Target.parse(target)
    except ValueError:  # no (or no known) target recorded: the smallest budget of the supported GPUs
        return 65536
    return 232448 if parsed.is_cuda and parsed.capability >= 90 else 65536


def from_semantic(_semantic: Any) -> KernelTarget:
    """The target of the kernel ``_semantic`` is tracing."""
    return KernelTarget.from_semantic(_semantic)


def target_of(module_text: str) -> Target | None:
    """The target a converted module names in its ``ttg.target`` (``"cuda:90"``, ``"hip:gfx942"``), as tritonx's
    target type; None before the conversion (no ``ttg.target`` yet)."""
    m = re.search(r'ttg\.target = "([^"]+)"', module_text)
    return Target.parse(m.group(1)) if m else None
