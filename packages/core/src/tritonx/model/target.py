"""Compilation targets written the way kernel engineers say them: ``cuda:90``, ``hip:gfx942``.

One type from the public API to the lowerings (issue 30): ``tritonx.compile_for("cuda:90", ...)`` parses a
:class:`Target`; a compile's target reaches Python passes as ``PassContext.target`` (a
:class:`KernelTarget`: the target plus the kernel's warp count, read from the backend options Triton compiles
with) and ``tritonx.dsl`` lowerings get that same object. ``str()`` of a target is its text (``"cuda:90"``),
and a target compares equal to that text, so code written when ``PassContext.target`` was a string keeps
working.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

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

    def __eq__(self, other: object) -> bool:
        """Equal to a target of the same type and fields, or to its own text (``Target.parse("cuda:90") ==
        "cuda:90"``: passes written when ``PassContext.target`` was that string compare as they did)."""
        if isinstance(other, str):
            return self.name == other
        if isinstance(other, Target):
            return type(self) is type(other) and _fields(self) == _fields(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)  # equal targets (and a target and its text) share a name


def _fields(target: Target) -> tuple[Any, ...]:
    return tuple(getattr(target, f.name) for f in dataclasses.fields(target))


@dataclass(frozen=True, eq=False)
class KernelTarget(Target):
    """A :class:`Target` plus the warp count of the kernel being compiled (what fixes layouts).

    What a compile is for, read from the backend options Triton compiles with: the code generator (trace
    time, :meth:`from_semantic`) and the passes (``PassContext.target``) read the same options, so the op
    implementations chosen while tracing and those chosen while lowering agree.
    """

    num_warps: int = 4

    @classmethod
    def from_options(cls, options: Any) -> KernelTarget:
        """The target of a compile, from the backend options Triton hands the code generator and passes."""
        backend = getattr(options, "backend_name", None) or ("hip" if hasattr(options, "waves_per_eu") else "cuda")
        arch: int | str = str(getattr(options, "arch", "") or "")
        if backend == "cuda":
            arch = arch[2:] if arch.startswith("sm") else arch
            arch = arch.rstrip("a")
            arch = int(arch) if arch.isdigit() else arch
        num_warps = int(getattr(options, "num_warps", 4) or 4)
        warp_size = int(getattr(options, "warp_size", 0) or (64 if backend == "hip" else 32))
        return cls(backend=backend, arch=arch, warp_size=warp_size, num_warps=num_warps)

    @classmethod
    def from_semantic(cls, semantic: Any) -> KernelTarget:
        """The target of the kernel ``semantic`` is tracing."""
        return cls.from_options(getattr(semantic.builder, "options", None))

    @classmethod
    def of_compile(cls, target: Any, options: Any) -> KernelTarget:
        """The target of one compile: from its backend options when there are some (what the code generator
        and the stages compile for), else from the ``GPUTarget`` the backend was made for."""
        if options is not None:
            return cls.from_options(options)
        t = Target.parse(target)
        return cls(backend=t.backend, arch=t.arch, warp_size=t.warp_size)
