"""What the kernel being traced is compiled for: tritonx's one target type, plus what utlx needs to know of it.

Why at trace time: target errors ("Hopper-only op on gfx942") must point at the kernel's source line, which only
the code generator knows; and the options carry ``num_warps``, which fixes the MMA layout. The target is
``tritonx.dsl.KernelTarget`` (a ``tritonx.Target`` plus the kernel's warp count): the same type from the public
API (``tritonx.compile_for("cuda:90", ...)``) through a Python pass's ``ctx.target`` to these bodies.
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


def smem_limit(name: str) -> int:
    """Shared memory one CTA may use on the target ``name`` (``"cuda:90"``), in bytes."""
    if name in SMEM_LIMITS:
        return SMEM_LIMITS[name]
    backend, _, arch = name.partition(":")
    return 232448 if backend == "cuda" and arch.isdigit() and int(arch) >= 90 else 65536


def from_semantic(_semantic: Any) -> KernelTarget:
    """The target of the kernel ``_semantic`` is tracing."""
    return KernelTarget.from_semantic(_semantic)


def target_of(module_text: str) -> str:
    """The ``ttg.target`` a converted module names (``"cuda:90"``, ``"hip:gfx942"``; '' before the conversion)."""
    m = re.search(r'ttg\.target = "([^"]+)"', module_text)
    return m.group(1) if m else ""
