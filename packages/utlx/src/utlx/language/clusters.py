"""Thread-block cluster shapes as TLX writes them (``ctas_per_cga=(x, y, z)``): parsed and checked in one place.

The language tier owns this because both paths that give TLX its meaning need it: the fork surface (configs and
launches that ask for clusters) and the interpreter's cluster model; neither may import the other.
"""

from __future__ import annotations

import numbers
from typing import Any

__all__ = ["UtlxClusterLaunchError", "cluster_shape", "cluster_size"]


class UtlxClusterLaunchError(ValueError):
    """A launch or config asked for thread-block clusters stock Triton cannot launch, or a malformed one."""


def cluster_shape(value: Any, where: str) -> tuple[int, int, int]:
    """``ctas_per_cga`` as three positive ints; anything else is an error naming the argument."""
    items = tuple(value) if isinstance(value, (tuple, list)) else ()
    if len(items) != 3 or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1
                                  for d in items):
        raise UtlxClusterLaunchError(f"{where}: ctas_per_cga must be three positive integers (x, y, z), got "
                                     f"{value!r}")
    return (int(items[0]), int(items[1]), int(items[2]))


def cluster_size(dims: tuple[int, int, int]) -> int:
    return dims[0] * dims[1] * dims[2]
