"""What the kernel being traced is compiled for, read from the code generator's options.

Why at trace time: target errors ("Hopper-only op on gfx942") must point at the kernel's source line,
which only the code generator knows; and the options carry ``num_warps``, which fixes the MMA layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Shared memory a CTA may use (bytes): Hopper 227 KiB opt-in, MI300 64 KiB, MI350 160 KiB.
SMEM_LIMITS = {"cuda:90": 232448, "cuda:80": 166912, "cuda:89": 101376, "cuda:100": 232448, "cuda:120": 101376,
               "hip:gfx942": 65536, "hip:gfx950": 163840, "hip:gfx90a": 65536}


@dataclass(frozen=True)
class Target:
    """Backend (``cuda``/``hip``), architecture (``90`` or ``gfx942``) and the launch's warp shape."""

    backend: str
    arch: str
    num_warps: int
    warp_size: int

    @property
    def name(self) -> str:
        return f"{self.backend}:{self.arch}"

    @property
    def is_cuda(self) -> bool:
        return self.backend == "cuda"

    @property
    def is_hip(self) -> bool:
        return self.backend == "hip"

    @property
    def capability(self) -> int:
        return int(self.arch) if self.is_cuda and self.arch.isdigit() else 0

    @property
    def is_hopper(self) -> bool:
        return self.is_cuda and self.capability // 10 == 9

    @property
    def smem_limit(self) -> int:
        if self.name in SMEM_LIMITS:
            return SMEM_LIMITS[self.name]
        return 232448 if self.is_cuda and self.capability >= 90 else 65536


def from_semantic(_semantic: Any) -> Target:
    """The :class:`Target` of the kernel ``_semantic`` is tracing."""
    options = getattr(_semantic.builder, "options", None)
    backend = getattr(options, "backend_name", "cuda") or "cuda"
    arch = str(getattr(options, "arch", "") or "")
    if backend == "cuda":
        arch = arch[2:] if arch.startswith("sm") else arch
        arch = arch.rstrip("a")
    num_warps = int(getattr(options, "num_warps", 4) or 4)
    warp_size = int(getattr(options, "warp_size", 0) or (64 if backend == "hip" else 32))
    return Target(backend=backend, arch=arch, num_warps=num_warps, warp_size=warp_size)
