"""Version combinations of installed distributions known not to work together, as a declared table.

Why a table: pip cannot express "numpy < 2.4 only with Triton 3.6" (an environment marker cannot name
another package's version), so a package declares the widest bound that works for every supported
Triton and ``tritonx doctor`` names the combinations that are still known to break, with the fix.
Each entry was measured; add one per combination found (``tests/test_known_broken.py`` checks the table).
"""

from __future__ import annotations

import importlib.metadata
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .version import parse_version

_OPS: dict[str, Callable[[tuple[int, int, int], tuple[int, int, int]], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}


@dataclass(frozen=True)
class Condition:
    """``distribution`` installed at a version satisfying ``op version`` (releases compared, e.g. ``>= 2.4``)."""

    distribution: str
    op: str
    version: str

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"known_broken: unknown comparison {self.op!r} for {self.distribution}")

    def holds(self, installed: str | None) -> bool:
        return installed is not None and _OPS[self.op](parse_version(installed), parse_version(self.version))

    def __str__(self) -> str:
        return f"{self.distribution}{self.op}{self.version}"


@dataclass(frozen=True)
class KnownBroken:
    """When every condition holds, ``effect`` happens; ``fix`` is the one command that avoids it."""

    conditions: tuple[Condition, ...]
    effect: str
    fix: str


KNOWN_BROKEN: tuple[KnownBroken, ...] = (
    # Measured 2026-12-02 (utlx.matmul on CPU tensors): Triton 3.6's interpreter converts a one-element
    # array with int() (tensor.__index__), which numpy 2.4 refuses; numpy 2.3.5 works; Triton 3.8 squeezes first.
    KnownBroken(
        (Condition("triton", "<", "3.7"), Condition("numpy", ">=", "2.4")),
        "Triton's interpreter (TRITON_INTERPRET=1) fails on kernels that index with a tensor (loops over "
        "tl.cdiv, utlx's GEMMs): InterpreterError: TypeError('only 0-dimensional arrays can be converted to "
        "Python scalars')",
        "pip install 'numpy<2.4'",
    ),
)


def installed_versions(names: set[str]) -> dict[str, str | None]:
    """The installed version of each distribution (None when it is not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def found(versions: Mapping[str, str | None] | None = None,
          table: tuple[KnownBroken, ...] = KNOWN_BROKEN) -> list[dict[str, str]]:
    """The entries of ``table`` that this install matches: what is installed, the effect and the fix."""
    if versions is None:
        versions = installed_versions({c.distribution for entry in table for c in entry.conditions})
    hits = []
    for entry in table:
        if all(c.holds(versions.get(c.distribution)) for c in entry.conditions):
            installed = ", ".join(f"{c.distribution} {versions[c.distribution]}" for c in entry.conditions)
            hits.append({"installed": installed, "when": ", ".join(map(str, entry.conditions)),
                         "effect": entry.effect, "fix": entry.fix})
    return hits
