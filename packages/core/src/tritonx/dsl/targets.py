"""Which target a kernel is traced or lowered for, and which implementation of an op serves it.

Implementations are registered for a *target pattern*: ``"cuda:90"`` or ``"hip:gfx942"`` (one
architecture), ``"cuda"`` or ``"hip"`` (a backend) or ``"*"`` (any target). The most specific pattern
that matches wins, the way an overload set picks its best candidate, so an op can have a generic body
and one tuned for a single architecture. The target type is the model's (:class:`~tritonx.model.target.KernelTarget`,
re-exported here and as ``tritonx.dsl.KernelTarget``): what a Python pass gets as ``ctx.target`` too.
"""

from __future__ import annotations

from typing import Any

from ..errors import DslError
from ..model.target import KernelTarget, Target

__all__ = ["BACKENDS", "KernelTarget", "best_match", "check_pattern", "specificity"]

BACKENDS = ("cuda", "hip")


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
