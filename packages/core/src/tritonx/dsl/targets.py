"""Which target a kernel is traced or lowered for, and which implementation of an op serves it.

Implementations are registered for a *target pattern*: ``"cuda:90"`` or ``"hip:gfx942"`` (one
architecture), ``"cuda"`` or ``"hip"`` (a backend) or ``"*"`` (any target). The most specific pattern
that matches wins, the way an overload set picks its best candidate, so an op can have a generic body
and one tuned for a single architecture.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import DslError
from ..model.target import Target

BACKENDS = ("cuda", "hip")


@dataclass(frozen=True)
class KernelTarget(Target):
    """A :class:`tritonx.Target` plus the warp count of the kernel being compiled (what fixes layouts)."""

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


def check_pattern(pattern: str, where: str) -> str:
    """Validate a target pattern; returns it normalised."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise DslError(f"{where}: a target must be a non-empty string such as 'cuda', 'hip:gfx942' or '*'", op=where)
    pattern = pattern.strip()
    if pattern == "*":
        return pattern
    backend, _, arch = pattern.partition(":")
    if backend not in BACKENDS:
        raise DslError(f"{where}: unknown backend in target {pattern!r}; expected one of {', '.join(BACKENDS)} "
                       "(optionally ':<arch>', e.g. 'cuda:90', 'hip:gfx942') or '*'", op=where)
    if ":" in pattern and not arch:
        raise DslError(f"{where}: target {pattern!r} names no architecture after ':'", op=where)
    return pattern


def specificity(pattern: str, target: Target) -> int:
    """2 for an exact architecture, 1 for the backend, 0 for ``*``, -1 when ``pattern`` does not match."""
    if pattern == "*":
        return 0
    if pattern == target.backend:
        return 1
    if pattern == target.name:
        return 2
    return -1


def best_match(patterns: dict[str, Any], target: Target) -> tuple[str, Any] | None:
    """The entry of ``patterns`` (pattern -> anything) that serves ``target`` best, or None."""
    ranked = [(specificity(p, target), p) for p in patterns]
    ranked = [r for r in ranked if r[0] >= 0]
    if not ranked:
        return None
    _, pattern = max(ranked)
    return pattern, patterns[pattern]
