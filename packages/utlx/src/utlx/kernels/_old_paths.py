"""The kernels' import paths from before they were filed by vendor: ``utlx.kernels.hopper_*`` is
``utlx.kernels.nvidia.hopper_*`` and ``utlx.kernels.amd_*`` is ``utlx.kernels.amd.amd_*`` (the same module object).

Why: users' code and earlier docs import ``utlx.kernels.hopper_tma_persistent`` and the like, and a module path
is public. A meta-path finder answers those names only, lazily (importing ``utlx.kernels`` imports no kernel),
and hands back the real module, so a kernel is never executed twice and its JIT functions stay one object.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any

from utlx.language._alias import ExistingModuleLoader  # binds a name to a module that exists already

_PACKAGE = "utlx.kernels"
#: old module name prefix -> the vendor subpackage that holds it now
VENDOR_OF_PREFIX = {"hopper_": "nvidia", "amd_": "amd"}


def new_name(fullname: str) -> str | None:
    """``utlx.kernels.<vendor>.<name>`` for an old ``utlx.kernels.<name>`` of a vendor kernel, else None."""
    head, _, name = fullname.rpartition(".")
    if head != _PACKAGE:
        return None
    for prefix, vendor in VENDOR_OF_PREFIX.items():
        if name.startswith(prefix):
            return f"{_PACKAGE}.{vendor}.{name}"
    return None


class OldKernelPathFinder(importlib.abc.MetaPathFinder):
    """Answers ``utlx.kernels.hopper_*`` / ``utlx.kernels.amd_*`` with the module filed under its vendor."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        if new is None or importlib.util.find_spec(new) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, ExistingModuleLoader(new), origin=f"alias of {new}")


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, OldKernelPathFinder) for f in sys.meta_path):
        sys.meta_path.append(OldKernelPathFinder())


def module_attribute(name: str) -> ModuleType:
    """``from utlx.kernels import hopper_tma_persistent`` (an attribute of the package): the vendor module."""
    new = new_name(f"{_PACKAGE}.{name}")
    if new is None:
        raise AttributeError(f"module {_PACKAGE!r} has no attribute {name!r}")
    return importlib.import_module(new)
