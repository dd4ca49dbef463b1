"""Compilation targets written the way kernel engineers say them: ``cuda:90``, ``hip:gfx942``."""

from __future__ import annotations

from dataclasses import dataclass

_WARP = {"cuda": 32, "hip": 64}


@dataclass(frozen=True)
class Target:
    """A GPU target: backend (``cuda``/``hip``) and arch (``90`` or ``gfx942``)."""

    backend: str
    arch: int | str
    warp_size: int

    @classmethod
    def parse(cls, spec: str | Target | object) -> Target:
        """Parse ``"cuda:90"``/``"hip:gfx942"``, a :class:`Target` or a Triton ``GPUTarget``."""
        if isinstance(spec, Target):
            return spec
        if hasattr(spec, "backend") and hasattr(spec, "arch"):
            return cls(spec.backend, spec.arch, getattr(spec, "warp_size", _WARP.get(spec.backend, 32)))
        if not isinstance(spec, str) or ":" not in spec:
            raise ValueError(f"target must look like 'cuda:90' or 'hip:gfx942', got {spec!r}")
        backend, _, arch = spec.partition(":")
        backend = backend.strip().lower()
        if backend not in _WARP:
            raise ValueError(f"unknown backend {backend!r} in target {spec!r}: expected 'cuda' or 'hip'")
        if backend == "cuda":
            if not arch.isdigit():
                raise ValueError(f"CUDA arch must be a compute capability like 90, got {arch!r} in {spec!r}")
            return cls("cuda", int(arch), 32)
        if not arch.startswith("gfx"):
            raise ValueError(f"HIP arch must look like 'gfx942', got {arch!r} in {spec!r}")
        return cls("hip", arch, 64)

    @property
    def name(self) -> str:
        """``"cuda:90"`` / ``"hip:gfx942"``."""
        return f"{self.backend}:{self.arch}"

    @property
    def is_cuda(self) -> bool:
        return self.backend == "cuda"

    @property
    def is_hip(self) -> bool:
        return self.backend == "hip"

    @property
    def capability(self) -> int:
        """The CUDA compute capability (``90``); 0 for HIP targets."""
        return int(self.arch) if self.is_cuda and str(self.arch).isdigit() else 0

    @property
    def is_hopper(self) -> bool:
        return self.is_cuda and self.capability // 10 == 9

    def to_triton(self):
        """The ``triton.backends.compiler.GPUTarget`` for this target."""
        from triton.backends.compiler import GPUTarget

        return GPUTarget(self.backend, self.arch, self.warp_size)

    def __str__(self) -> str:
        return self.name
