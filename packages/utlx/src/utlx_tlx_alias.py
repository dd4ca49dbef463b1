"""Make ``import triton.language.extra.tlx as tlx`` give utlx when nothing else provides that module.

A top-level module (not inside ``utlx``) so the ``utlx-tlx-alias.pth`` line can install the finder at
interpreter start-up without importing utlx or triton: the alias then works before any ``import utlx``.

Why a meta-path finder appended at the END of ``sys.meta_path`` (not a ``sys.modules`` entry): a real
``triton.language.extra.tlx`` (Meta's fork, or another plugin) is found by the ordinary finders first and
wins; we only answer when every other finder has said no, and we never import anything eagerly.
Submodules (``triton.language.extra.tlx.barrier``, ...) are answered by ``utlx.language._alias``, which
``import utlx`` installs: keeping this file small and stable matters, because an editable install copies
it into site-packages once.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

ALIAS = "triton.language.extra.tlx"
TARGET = "utlx"


class _AliasLoader(importlib.abc.Loader):
    """Gives the alias the ``utlx`` module object itself; ``exec_module`` puts back utlx's own spec, which
    the import system replaced with the alias's."""

    def __init__(self) -> None:
        self._own_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(TARGET)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        if self._own_spec is not None:
            module.__spec__ = self._own_spec


class TlxAliasFinder(importlib.abc.MetaPathFinder):
    """Answers only for :data:`ALIAS`, and only after every earlier finder failed."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != ALIAS:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(), origin=f"alias of {TARGET}")


def install() -> None:
    """Append the finder once (idempotent)."""
    if not any(isinstance(f, TlxAliasFinder) for f in sys.meta_path):
        sys.meta_path.append(TlxAliasFinder())
