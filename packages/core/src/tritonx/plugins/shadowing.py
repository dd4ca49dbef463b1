"""A plugin's top-level package also shipped by another installed distribution (one shadows the other).

Why: two wheels that both install a top-level ``utlx`` (this repo's ``utlx`` and Meta's ``triton-utlx``)
share one directory name in site-packages; whichever comes first on ``sys.path`` (or was unpacked last)
is what ``import utlx`` gives, silently. This module names the distributions that own a top-level name
(``importlib.metadata``: their RECORD or top_level.txt) and which one the import system picks, without
importing it.

    owners(module)                       -> distributions that ship ``module`` (the slow, complete scan)
    shadowing(module, distribution, ...) -> Shadowing | None: the others, and whose files an import gets
    for_plugins()                        -> one Shadowing per plugin entry point whose package is shadowed
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ENTRY_POINT_GROUP = "tritonx.plugins"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Shadowing:
    """``module`` is shipped by ``distribution`` and by ``others`` (name, version); an import gets ``imported_by``."""

    module: str
    distribution: str
    others: tuple[tuple[str, str], ...]
    imported_from: str | None
    imported_by: str | None

    def message(self) -> str:
        others = ", ".join(f"{name} {version}" for name, version in self.others)
        got = (f"`import {self.module}` gives {self.imported_by}'s ({self.imported_from})" if self.imported_by
               else f"`import {self.module}` finds nothing")
        return (f"the top-level package {self.module!r} of {self.distribution} is also installed by {others}: "
                f"one shadows the other and {got}; keep one (pip uninstall the other)")

    def to_dict(self) -> dict[str, object]:
        return {"module": self.module, "distribution": self.distribution,
                "others": [f"{n} {v}" for n, v in self.others], "imported_from": self.imported_from,
                "imported_by": self.imported_by, "message": self.message()}


def owners(module: str) -> list[str]:
    """Every installed distribution that ships the top-level ``module`` (scans all of them: ~0.1 s)."""
    return sorted(set(metadata.packages_distributions().get(module, [])))


def _origin(module: str) -> str | None:
    """Where ``import module`` gets (or got) its files from, without importing it."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        return getattr(loaded, "__file__", None)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None else None


def _ships_file(dist: metadata.Distribution, module: str, origin: str) -> bool:
    """Whether ``origin`` is one of ``dist``'s installed files (the package ``module``'s)."""
    target = Path(origin).resolve()
    for f in dist.files or ():
        if f.parts and f.parts[0] == module and Path(dist.locate_file(f)).resolve() == target:
            return True
    return False


def shadowing(module: str, distribution: str, candidates: Iterable[str] | None = None,
              running: bool = False) -> Shadowing | None:
    """The other distributions shipping ``module`` beside ``distribution``, or None when there are none.

    ``candidates``: only these distribution names are looked up (fast: what an import-time check uses);
    None scans every installed distribution (:func:`owners`). ``running``: the caller is ``distribution``'s
    own ``module`` being imported, so the import got ``distribution``'s code (two wheels unpacked into one
    folder both list its files: the files cannot tell).
    """
    names = list(candidates) if candidates is not None else owners(module)
    others: list[metadata.Distribution] = []
    for name in names:
        if _norm(name) == _norm(distribution):
            continue
        try:
            others.append(metadata.distribution(name))
        except metadata.PackageNotFoundError:
            continue
    if not others:
        return None
    origin = _origin(module)
    imported_by = None
    if running:
        imported_by = distribution
    elif origin is not None:
        imported_by = next((d.metadata["Name"] for d in others if _ships_file(d, module, origin)), distribution)
    return Shadowing(module, distribution, tuple((d.metadata["Name"], d.version) for d in others), origin,
                     imported_by)


def for_plugins() -> list[Shadowing]:
    """Each installed plugin whose entry point's top-level package another distribution ships too."""
    out: list[Shadowing] = []
    seen: set[tuple[str, str]] = set()
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(ep, "dist", None), "name", None)
        module = ep.value.split(":")[0].split(".")[0].strip()
        if dist is None or (module, dist) in seen:
            continue
        seen.add((module, dist))
        found = shadowing(module, dist)
        if found is not None:
            out.append(found)
    return out
