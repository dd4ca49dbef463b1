"""What a seam is: one declared change to an attribute of stock Triton.

Why declared data rather than code that patches: a patch made by hand is invisible (no name, no reason, no
record of which Triton versions need it) and every author re-invents its idempotence marker. A :class:`Seam`
says where it applies, why, on which Triton versions, and how to build the replacement from the original;
:mod:`tritonx.seams.patching` is the one place that reads the original, writes the replacement, and puts the
original back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..compat.installed import SUPPORTED, TRITON_VERSION

#: A Triton minor version, as ``(major, minor)``.
Version = tuple[int, int]


class _Absent:
    """The ``original`` a seam's ``make`` receives when the owner has no such attribute of its own."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()


def _always() -> bool:
    return True


@dataclass(frozen=True)
class Seam:
    """One change to stock Triton, made once and (where ``reversible``) undone when no longer needed.

    Attributes:
        name: unique, prefixed by its owner (``"tritonx.compile-key"``, ``"utlx.config-init"``).
        reason: one line: why stock Triton needs this (shown by ``tritonx doctor``).
        where: zero-argument callable giving ``(owner, attribute)``; resolved only when the seam is installed,
            so declaring a seam imports nothing of Triton.
        make: ``make(original) -> replacement``; ``original`` is :data:`ABSENT` when the owner has no
            attribute of that name of its own (the seam adds one). None for a slot seam (see ``slot``).
        versions: the Triton versions it applies to, ``(first, last)`` inclusive; elsewhere it is not installed.
        needed: extra condition checked at install time (for a difference that is not a version: a method only
            Meta's fork has). False: nothing to install.
        reversible: whether :func:`tritonx.seams.uninstall` may put the original back.
        slot: a public setting of Triton that tritonx writes (``knobs.runtime.add_stages_inspection_hook``):
            not wrapped, written with :func:`tritonx.seams.write_slot`; listed as active while it holds a value.
    """

    name: str
    reason: str
    where: Callable[[], tuple[Any, str]]
    make: Callable[[Any], Any] | None = None
    versions: tuple[Version, Version] = SUPPORTED
    needed: Callable[[], bool] = _always
    reversible: bool = True
    slot: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or "." not in self.name.strip(". "):
            raise TypeError(f"seam name must be '<owner>.<name>' (e.g. 'myplugin.config-init'), got {self.name!r}")
        if not isinstance(self.reason, str) or not self.reason.strip() or "\n" in self.reason.strip():
            raise TypeError(f"seam {self.name!r}: reason must be one non-empty line")
        if not callable(self.where):
            raise TypeError(f"seam {self.name!r}: where must be a callable returning (owner, attribute)")
        if self.slot == (self.make is not None):
            raise TypeError(f"seam {self.name!r}: give make (a wrapper) or slot=True (a setting), exactly one")
        lo, hi = self.versions
        if not (len(lo) == len(hi) == 2 and lo <= hi):
            raise TypeError(f"seam {self.name!r}: versions must be ((major, minor), (major, minor)), first <= last, "
                            f"got {self.versions!r}")

    @property
    def owner_name(self) -> str:
        """The plugin (or ``tritonx``) that declared it: the part of the name before the first dot."""
        return self.name.split(".", 1)[0]

    def applies(self, version: Version | None = None) -> bool:
        """Does this seam apply to Triton ``version`` (default: the installed one)?"""
        lo, hi = self.versions
        return lo <= (version or TRITON_VERSION[:2]) <= hi

    def version_text(self) -> str:
        """``"3.6-3.9"`` or ``"3.6"``: how doctor shows the versions."""
        lo, hi = self.versions
        first, last = f"{lo[0]}.{lo[1]}", f"{hi[0]}.{hi[1]}"
        return first if first == last else f"{first}-{last}"
