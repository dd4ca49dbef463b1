"""Where the installed Triton is and which version it is, found without importing ``triton``.

The checks run at interpreter start-up, before anything may import triton (importing it on 3.7/3.8
freezes ``TRITON_PLUGIN_PATHS``), so the package is located through its import spec and the version
read from its ``__init__.py``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass

from ..compat.version import declared_version


@dataclass(frozen=True)
class TritonInstall:
    """The installed Triton package: its directory, version and ``libtriton.so``."""

    root: str
    version: str

    @property
    def libtriton(self) -> str:
        return os.path.join(self.root, "_C", "libtriton.so")

    @property
    def bundled_plugins(self) -> str:
        """Directory of the plugins every wheel ships (``libTritonPluginsTestLib.so``...)."""
        return os.path.join(self.root, "plugins")


def _version_from_source(root: str) -> str | None:
    try:
        with open(os.path.join(root, "__init__.py"), encoding="utf-8") as f:
            return declared_version(f.read())
    except OSError:
        return None


def find_triton() -> TritonInstall | None:
    """The Triton this interpreter would import (None when it has none)."""
    module = sys.modules.get("triton")
    if module is not None and getattr(module, "__file__", None):
        root = os.path.dirname(os.path.abspath(module.__file__))
        return TritonInstall(root, str(getattr(module, "__version__", None) or _version_from_source(root) or "0"))
    try:
        spec = importlib.util.find_spec("triton")  # a top-level spec lookup imports nothing
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = os.path.abspath(next(iter(spec.submodule_search_locations)))
    version = _version_from_source(root)
    if version is None:
        try:
            from importlib.metadata import version as dist_version

            version = dist_version("triton")
        except Exception:
            version = "0"
    return TritonInstall(root, version)
