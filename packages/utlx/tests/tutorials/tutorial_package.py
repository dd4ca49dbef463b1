"""Make Meta's tutorial files importable as ``triton.language.extra.tlx.tutorials.<name>``, as in its wheel.

Why: the tutorials' tests import ``from triton.language.extra.tlx.tutorials.hopper_fa_ws import attention``.
In Meta's wheel that name resolves because its ``tlx`` package ships the tutorials; here
``triton.language.extra.tlx`` is an alias of an implementation (this repo's utlx, or Meta's
``utlx_plugin``) that does not. Registering a package module of exactly that name, whose ``__path__`` is the
unpacked wheel's tutorials folder, lets the files be used unchanged. Nothing else of the wheel goes on
``sys.path`` (it ships a top-level ``utlx`` that would shadow this repo's).

Stdlib only: it is also loaded as a pytest plugin in the processes that run Meta's own build.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

PACKAGE = "triton.language.extra.tlx.tutorials"
PARENT = "triton.language.extra.tlx"


def register(tutorials: Path) -> ModuleType:
    """Import the TLX alias and register :data:`PACKAGE` with ``__path__ = [tutorials]`` (idempotent)."""
    importlib.import_module(PARENT)  # the implementation under test: must resolve before its subpackage
    existing = sys.modules.get(PACKAGE)
    if existing is not None and list(getattr(existing, "__path__", [])) == [str(tutorials)]:
        return existing
    pkg = ModuleType(PACKAGE, f"Meta's TLX tutorials, used as they are from {tutorials}")
    pkg.__path__ = [str(tutorials)]
    pkg.__package__ = PACKAGE
    pkg.__file__ = None
    sys.modules[PACKAGE] = pkg
    return pkg


def module_name(stem: str) -> str:
    """``hopper-persistent-gemm-ws-pingpong`` -> ``triton.language.extra.tlx.tutorials.hopper_persistent_...``."""
    return f"{PACKAGE}.{stem.replace('-', '_')}"


def load(stem: str) -> ModuleType:
    """Import one tutorial file (hyphenated names too: those are loaded from their path)."""
    name = module_name(stem)
    if name in sys.modules:
        return sys.modules[name]
    if "-" not in stem:
        return importlib.import_module(name)
    pkg = sys.modules[PACKAGE]
    path = Path(pkg.__path__[0]) / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load tutorial {stem!r} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def unload() -> None:
    """Forget the package and every tutorial module (their kernels and autotuner caches go with them)."""
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    parent = sys.modules.get(PARENT)
    if parent is not None and isinstance(getattr(parent, "tutorials", None), ModuleType) and \
            getattr(parent.tutorials, "__name__", "") == PACKAGE:
        delattr(parent, "tutorials")


@contextmanager
def tutorials_package(tutorials: Path) -> Iterator[ModuleType]:
    """:func:`register` for the duration of a block, then :func:`unload`."""
    try:
        yield register(tutorials)
    finally:
        unload()
