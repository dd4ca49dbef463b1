"""Load a native plugin library into the running Triton, the way the installed version allows.

Always :func:`~tritonx.native.check.check_native` first: Triton aborts the process on a library it
cannot load. Then, by version (see :mod:`tritonx.compat.native`):

* 3.6: no native plugins; refused by the ``triton_support`` check.
* 3.7/3.8: libtriton reads ``TRITON_PLUGIN_PATHS`` only when first imported. Before that, the path is
  appended to the variable; after it, loading is impossible and the error says to use
  ``TRITONX_NATIVE_PLUGINS`` (read at interpreter start-up) instead. A library start-up already
  loaded is simply returned.
* 3.9: ``passes.plugin.extend_with(path)`` (and ``ir.extend_dialects_with`` for dialects) at any time.
"""

from __future__ import annotations

import os
import sys

from ..compat.native import TRITON_PLUGIN_PATHS, native_loading
from ..errors import PluginLoadError
from ..settings import settings
from .check import check_native
from .info import NativePluginInfo
from .installation import find_triton
from .registry import NativeRegistry


def _libtriton_imported() -> bool:
    return "triton._C.libtriton" in sys.modules


def load_native(path: str | os.PathLike[str], *, registry: NativeRegistry) -> NativePluginInfo:
    """Check and load one native plugin library into ``registry`` (a runtime's); return what it declares.

    Raises :class:`PluginLoadError` naming the failed check, or ``check="load"`` when the library is
    fine but the installed Triton cannot take it now. ``tritonx.load_native`` passes the current runtime's.
    """
    path = os.path.abspath(os.path.expanduser(os.fspath(path)))
    existing = registry.get(path)
    if existing is not None:
        return existing
    info = check_native(path)
    triton = find_triton()
    assert triton is not None  # check_native's triton_support check guarantees it
    loading = native_loading(triton.version)
    if loading.reads_environment:
        if _libtriton_imported():
            raise PluginLoadError(
                f"native plugin {path}: Triton {triton.version} reads {TRITON_PLUGIN_PATHS} only when it is first "
                f"imported, and triton is already imported, so it cannot be loaded now. Declare it before the "
                f"interpreter starts: TRITONX_NATIVE_PLUGINS={path} python ... (tritonx checks it at start-up "
                f"and hands it to Triton)",
                path=path,
                check="load",
            )
        settings.add_triton_plugin_path(path)
    elif loading.runtime_loading:
        from ..compat import libtriton

        lib = libtriton()
        for dotted in loading.load_calls(bool(info.dialects), bool(info.ops)):
            target = lib
            try:
                for part in dotted.split("."):
                    target = getattr(target, part)
                target(path)
            except Exception as exc:
                message = f"native plugin {path}: {dotted}() of Triton {triton.version} failed: {exc}"
                raise PluginLoadError(message, path=path, check="load") from exc
    else:  # pragma: no cover - check_native refuses unsupported versions first
        raise PluginLoadError(loading.unsupported_reason(), path=path, check="triton_support")
    registry.register(info)
    return info
