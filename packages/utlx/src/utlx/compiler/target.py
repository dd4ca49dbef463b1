"""What the kernel being traced is compiled for, read from the code generator's options.

Why at trace time: target errors ("Hopper-only op on gfx942") must point at the kernel's source line,
which only the code generator knows; and the options carry ``num_warps``, which fixes the MMA layout.
The target itself is tritonx's :class:`~tritonx.Target` (one Target class for both packages);
:class:`KernelTarget` adds the kernel's warp count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tritonx import Target

# Shared memory a CTA may use (bytes): Hopper 227 KiB opt-in, MI300 64 KiB, MI350 160 KiB.
SMEM_LIMITS = {"cuda:90": 232448, "cuda:80": 166912, "cuda:89": 101376, "cuda:100": 232448, "cuda:120": 101376,
               "hip:gfx942": 65536, "hip:gfx950": 163840, "hip:gfx90a": 65536}


def smem_limit(name: str) -> int:
    """Shared memory one CTA may use on the target ``name`` (``"cuda:90"``), in bytes."""
    if name in SMEM_LIMITS:
        return SMEM_LIMITS[name]
    backend, _, arch = name.partition(":")
    return 232448 if backend == "cuda" and arch.isdigit() and int(arch) >= 90 else 65536


@dataclass(frozen=True)
class KernelTarget(Target):
    """A :class:`~tritonx.Target` plus the number of warps the kernel being traced runs with."""

    num_warps: int = 4

    @property
    def smem_limit(self) -> int:
        return smem_limit(self.name)


def from_semantic(_semantic: Any) -> KernelTarget:
    """The :class:`KernelTarget` of the kernel ``_semantic`` is tracing."""
    options = getattr(_semantic.builder, "options", None)
    backend = getattr(options, "backend_name", "cuda") or "cuda"
    arch: int | str = str(getattr(options, "arch", "") or "")
    if backend == "cuda":
        arch = arch[2:] if arch.startswith("sm") else arch
        arch = arch.rstrip("a")
        arch = int(arch) if arch.isdigit() else arch
    num_warps = int(getattr(options, "num_warps", 4) or 4)
    warp_size = int(getattr(options, "warp_size", 0) or (64 if backend == "hip" else 32))
    return KernelTarget(backend=backend, arch=arch, warp_size=warp_size, num_warps=num_warps)
