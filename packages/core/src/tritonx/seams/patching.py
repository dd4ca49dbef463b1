"""The one place that writes to stock Triton's attributes: installs, records and undoes :class:`Seam` s.

Why one place: Triton is process-global, so a change to it must be made once however many runtimes,
plugins or imports ask for it, and must be visible (``tritonx doctor``) and undoable. Every installed seam is
recorded here with the original it replaced; the replacement carries ``__tritonx_seam__`` (its name) and
``__wrapped__`` (the original) so wrapper chains stay walkable and a second copy of this module (a reload)
finds the seam already in place instead of wrapping it twice.
"""

from __future__ import annotations

import threading
import types
from dataclasses import dataclass
from typing import Any

from ..errors import TritonxError
from .model import ABSENT, Seam

#: Attribute naming the seam a replacement belongs to.
MARK = "__tritonx_seam__"

_lock = threading.RLock()


class SeamError(TritonxError):
    """A seam could not be installed or undone (the message names the seam and the Triton attribute)."""


@dataclass
class _Record:
    seam: Seam
    owner: Any
    attribute: str
    original: Any  # ABSENT when the owner had no attribute of its own of that name
    replacement: Any


#: Installed seams by name, in installation order.
_installed: dict[str, _Record] = {}
#: Slot seams tritonx wrote, with the value written last.
_slots: dict[str, tuple[Seam, Any]] = {}


def _where(seam: Seam) -> tuple[Any, str]:
    try:
        owner, attribute = seam.where()
    except Exception as exc:  # Triton moved the attribute: say which seam lost its place
        raise SeamError(f"seam {seam.name!r}: its place in Triton cannot be found ({type(exc).__name__}: {exc})") \
            from exc
    return owner, attribute


def _describe(owner: Any, attribute: str) -> str:
    """``triton.compiler.code_generator.CodeGenerator.visit_With``: the attribute's full name, for reports."""
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__qualname__}.{attribute}"
    if isinstance(owner, types.ModuleType):
        return f"{owner.__name__}.{attribute}"
    return f"{type(owner).__module__}.{type(owner).__qualname__}().{attribute}"


def _carries(fn: Any, name: str) -> bool:
    """Is the seam ``name`` anywhere in this chain of wrappers (someone may have wrapped ours)?"""
    for _ in range(32):
        if fn is None:
            return False
        if getattr(fn, MARK, None) == name:
            return True
        fn = getattr(fn, "__wrapped__", None)
    return False


def _mark(replacement: Any, name: str, original: Any) -> None:
    try:
        setattr(replacement, MARK, name)
        if original is not ABSENT and "__wrapped__" not in getattr(replacement, "__dict__", {}):
            replacement.__wrapped__ = original
    except (AttributeError, TypeError):  # a built-in object: the record alone identifies it
        pass


def install(seam: Seam) -> bool:
    """Install ``seam`` once; True when it is in place, False when it does not apply here.

    Idempotent: asking again (another runtime, a second enable, a reload of the asking module) changes
    nothing. Not applied: outside ``seam.versions``, or ``seam.needed()`` is False.
    """
    if seam.slot:
        raise SeamError(f"seam {seam.name!r} is a slot: write it with tritonx.seams.write_slot")
    with _lock:
        if seam.name in _installed:
            return True
        if not seam.applies():
            return False
        owner, attribute = _where(seam)
        own = attribute in vars(owner)
        current = vars(owner)[attribute] if own else getattr(owner, attribute, ABSENT)
        if _carries(current, seam.name):  # installed by an earlier copy of this module: adopt it
            _installed[seam.name] = _Record(seam, owner, attribute, getattr(current, "__wrapped__", ABSENT), current)
            return True
        if not seam.needed():
            return False
        assert seam.make is not None  # (checked by Seam)
        replacement = seam.make(current)
        _mark(replacement, seam.name, current)
        setattr(owner, attribute, replacement)
        _installed[seam.name] = _Record(seam, owner, attribute, current if own else ABSENT, replacement)
        return True


def uninstall(seam: Seam | str) -> bool:
    """Put back what ``seam`` replaced; True when it is gone (or was never installed).

    False when something was put over the replacement since (another wrapper, a test's monkeypatch): then
    both are left as they are, and the seam stays recorded as installed.
    """
    name = seam if isinstance(seam, str) else seam.name
    with _lock:
        record = _installed.get(name)
        if record is None:
            return True
        if not record.seam.reversible:
            raise SeamError(f"seam {name!r} cannot be undone ({_describe(record.owner, record.attribute)})")
        if vars(record.owner).get(record.attribute, ABSENT) is not record.replacement:
            return False
        if record.original is ABSENT:
            delattr(record.owner, record.attribute)
        else:
            setattr(record.owner, record.attribute, record.original)
        del _installed[name]
        return True


def is_installed(name: str) -> bool:
    return name in _installed


def original(name: str) -> Any:
    """What the installed seam ``name`` replaced (:data:`ABSENT` when it added the attribute)."""
    record = _installed.get(name)
    if record is None:
        raise SeamError(f"seam {name!r} is not installed")
    return record.original


def in_place(name: str) -> bool:
    """Does Triton's attribute still lead to the installed seam (itself, or a wrapper around it)?"""
    record = _installed.get(name)
    if record is None:
        return False
    current = vars(record.owner).get(record.attribute, ABSENT)
    return current is record.replacement or _carries(current, name)


def write_slot(seam: Seam, value: Any) -> None:
    """Write ``value`` into the Triton setting of slot seam ``seam`` (None empties it)."""
    if not seam.slot:
        raise SeamError(f"seam {seam.name!r} wraps an attribute: install it with tritonx.seams.install")
    owner, attribute = _where(seam)
    with _lock:
        setattr(owner, attribute, value)
        _slots[seam.name] = (seam, value)


def release_slot(seam: Seam, value: Any) -> None:
    """Put ``value`` (the setting as it was before tritonx or a plugin wrote it) back into the setting of slot
    seam ``seam`` and stop listing the slot as active. For settings where "empty" is a value of the setting's
    own (a string tag, a class), not None."""
    if not seam.slot:
        raise SeamError(f"seam {seam.name!r} wraps an attribute: uninstall it with tritonx.seams.uninstall")
    owner, attribute = _where(seam)
    with _lock:
        setattr(owner, attribute, value)
        _slots.pop(seam.name, None)


def read_slot(seam: Seam) -> Any:
    """The value now in the Triton setting of slot seam ``seam``."""
    owner, attribute = _where(seam)
    return getattr(owner, attribute)


def active() -> list[Seam]:
    """The seams in effect now: installed ones, then slots holding the value tritonx wrote (not None)."""
    with _lock:
        out = [r.seam for r in _installed.values()]
        for seam, value in _slots.values():
            if value is not None and read_slot(seam) is value:
                out.append(seam)
        return out


def place_of(seam: Seam) -> str:
    """``"CodeGenerator.visit_With"``: the Triton attribute a seam changes (for reports)."""
    record = _installed.get(seam.name)
    if record is not None:
        return _describe(record.owner, record.attribute)
    return _describe(*_where(seam))
