"""``triton.language.extra.tlx`` as a package: the alias itself and its submodules.

The alias of the top-level name lives in the top-level ``utlx_tlx_alias`` module, so the ``.pth`` shipped in
the wheel can install it at start-up without importing utlx. Its submodules are answered here, once utlx is
imported (which resolving the alias does): each name of Meta's ``tlx`` package maps onto the utlx module
that holds the same names, by identity, so ``from triton.language.extra.tlx.barrier import
alloc_barriers`` gives utlx's op and the interpreter's patching of utlx modules reaches it.

Why a finder at the FRONT of ``sys.meta_path`` for submodules: the alias module is utlx itself, whose
``__path__`` is utlx's folder, so the ordinary path finder would otherwise load, for example,
``utlx/compiler`` a second time under the name ``triton.language.extra.tlx.compiler``. The front finder
only answers while ``triton.language.extra.tlx`` IS utlx: a real module of that name (Meta's fork) keeps
its own submodules.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any

from utlx_tlx_alias import ALIAS, TARGET, TlxAliasFinder
from utlx_tlx_alias import install as _install_top_level

#: Submodule of Meta's ``tlx`` package (3.8.0.post16, plus ``warp_spec`` of its plugin) -> utlx module.
TLX_SUBMODULES: dict[str, str] = {
    "async_task_utils": "utlx.language.tasks",
    "barrier": "utlx.language.barrier",
    "compiler": "utlx.compiler",
    "dynamic_launch": "utlx.language.dynamic_launch",
    "mem_ops": "utlx.language.mem_ops",
    "mma_ops": "utlx.language.mma_ops",
    "mxfp8_utils": "utlx.language.mxfp8_utils",
    "types": "utlx.language.types",
    "utility": "utlx.language.utility",
    "warp_ops": "utlx.language.warp_ops",
    "warp_pipeline": "utlx.language.warp_pipeline",
    "warp_spec": "utlx.language.warp_spec",
}

#: Modules of Meta's fork outside ``tlx`` that its TLX tutorials import -> the utlx module standing in for each.
#: Answered only while the alias is utlx and after every other finder failed (a real module wins).
FORK_MODULES: dict[str, str] = {
    "triton.language.extra.cuda.inline_ptx_lib": "utlx.language.inline_ptx_lib",
    "triton.language.extra.subtile_ops": "utlx.language.subtile_ops",
}

#: Submodules also bound as attributes of the alias (``tlx.barrier``), as importing Meta's package binds them.
#: ``compiler`` and ``warp_spec`` are only reachable by importing them, as there.
ATTRIBUTE_SUBMODULES = tuple(name for name in TLX_SUBMODULES if name not in ("compiler", "warp_spec"))

_PREFIX = ALIAS + "."


def alias_is_utlx() -> bool:
    """True while ``triton.language.extra.tlx`` resolves to utlx (no real module of that name exists)."""
    return sys.modules.get(ALIAS) is not None and sys.modules.get(ALIAS) is sys.modules.get(TARGET)


def target_of(fullname: str) -> str | None:
    """The utlx module behind ``triton.language.extra.tlx.<sub>[.<rest>]``, or None when it has none."""
    if not fullname.startswith(_PREFIX):
        return None
    first, _, rest = fullname[len(_PREFIX):].partition(".")
    base = TLX_SUBMODULES.get(first)
    if base is None:
        return None
    return f"{base}.{rest}" if rest else base


class ExistingModuleLoader(importlib.abc.Loader):
    """Binds an alias name to an already importable module (same object, nothing re-executed).

    The import system stamps the alias's spec onto the module; ``exec_module`` puts the module's own spec
    back, so ``utlx.language.barrier.__spec__.name`` stays its real name (``importlib.reload`` and
    ``find_spec`` rely on it).
    """

    def __init__(self, target: str) -> None:
        self.target = target
        self._own_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        if self._own_spec is not None:
            module.__spec__ = self._own_spec


class TlxSubmoduleFinder(importlib.abc.MetaPathFinder):
    """Answers ``triton.language.extra.tlx.<sub>`` with the utlx module of :data:`TLX_SUBMODULES`."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_PREFIX) or not alias_is_utlx():
            return None
        name = target_of(fullname)
        if name is None:
            first = fullname[len(_PREFIX):].partition(".")[0]
            if importlib.util.find_spec(f"{TARGET}.{first}") is not None:
                # a utlx module that is not one of Meta's tlx submodules (``inductor``: torch 2.14 probes
                # ``tlx.inductor.registry``, Meta's TorchTLX): the path finder would run utlx's file a second
                # time under the alias name, a second module object whose state splits from utlx's own
                raise ModuleNotFoundError(f"No module named {fullname!r} (utlx maps only Meta's tlx submodules "
                                          f"onto its own; utlx.{first} is not one)", name=fullname)
            return None
        if importlib.util.find_spec(name) is None:
            return None
        real = importlib.import_module(name)
        return importlib.machinery.ModuleSpec(fullname, ExistingModuleLoader(name), origin=f"alias of {name}",
                                              is_package=hasattr(real, "__path__"))


class ForkModuleFinder(importlib.abc.MetaPathFinder):
    """Answers the fork-only modules of :data:`FORK_MODULES` (placed at the END of ``sys.meta_path``)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        name = FORK_MODULES.get(fullname)
        if name is None:
            return None
        if ALIAS not in sys.modules:
            # Resolve the alias first: a real ``tlx`` (Meta's fork) that ships these modules wins over utlx.
            try:
                importlib.import_module(ALIAS)
            except ImportError:
                return None
        if not alias_is_utlx():
            return None
        return importlib.machinery.ModuleSpec(fullname, ExistingModuleLoader(name), origin=f"alias of {name}")


def bind_submodules(module: ModuleType) -> None:
    """Bind ``tlx.barrier``, ``tlx.mem_ops``, ... on the alias target, as Meta's package has them."""
    for name in ATTRIBUTE_SUBMODULES:
        if not hasattr(module, name):
            setattr(module, name, importlib.import_module(TLX_SUBMODULES[name]))


def install() -> None:
    """Install the top-level alias (at the end of ``sys.meta_path``) and the submodule finder (at the
    front); idempotent."""
    _install_top_level()
    if not any(isinstance(f, TlxSubmoduleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TlxSubmoduleFinder())
    if not any(isinstance(f, ForkModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(ForkModuleFinder())


__all__ = ["ALIAS", "FORK_MODULES", "TARGET", "TLX_SUBMODULES", "ForkModuleFinder", "TlxAliasFinder",
           "TlxSubmoduleFinder", "alias_is_utlx",
           "bind_submodules", "install", "target_of"]
