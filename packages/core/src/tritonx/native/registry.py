"""The native plugin libraries this process has loaded, and the passes they add.

Two ways in: start-up (``TRITONX_NATIVE_PLUGINS``, handled by :mod:`tritonx._startup` before triton
is imported) and :func:`tritonx.native.load.load_native`. Each runtime owns one
:class:`NativeRegistry`, which pushes the passes of every library it records into the runtime's
pass-name table (:meth:`tritonx.engine.names.PassNames.add_natives`), so pipelines accept and resolve the
native passes by name. Callers are handed the registry they act on (``Runtime.natives``).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from ..compat.native import NativeLoading, loads_at_run_time, native_loading
from ..engine.names import NativePass, PassNames
from ..errors import PluginLoadError
from ..settings import settings
from .info import NativePluginInfo
from .installation import find_triton


def _startup_module() -> Any | None:
    return sys.modules.get("tritonx._startup")


class NativePassAdder:
    """Adds one native plugin pass to a pass manager: ``adder(pm, args)`` with ``args`` a list of str."""

    def __init__(self, info: NativePluginInfo, pass_name: str, attribute: str, fn: Any) -> None:
        self.info = info
        self.pass_name = pass_name
        self.attribute = attribute
        self._fn = fn

    def __call__(self, pm: Any, args: Sequence[str] = ()) -> None:
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise TypeError(
                f"native pass {self.pass_name!r} of plugin {self.info.plugin_name!r}: args must be a list of str, "
                f"got {args!r}"
            )
        self._fn(pm, list(args))

    def __repr__(self) -> str:
        return f"<native pass {self.pass_name!r} of {self.info.plugin_name} ({self.info.path}) via {self.attribute}>"


class NativeRegistry:
    """Native libraries loaded in this process (as one runtime knows them) and their passes."""

    def __init__(self, names: PassNames | None = None) -> None:
        self._lock = threading.RLock()
        self._loaded: dict[str, NativePluginInfo] = {}
        self._synced = False
        self._names = names

    def sync(self) -> None:
        """Take in what start-up accepted (once). On 3.9 this also loads them if libtriton's import hook
        has not yet (libtriton was imported before start-up ran, for example under ``python -c``)."""
        with self._lock:
            if self._synced:
                return
            self._synced = True
            startup = _startup_module()
            if startup is None and settings.native_plugins:
                # The .pth did not run (not installed, or python -S): do the start-up work now.
                from .. import _startup as startup  # runs the checks on first import

            if startup is None:
                return
            run_time = loads_at_run_time(startup.mechanism)
            if run_time and startup.has_pending():
                from ..compat import libtriton

                startup.apply_pending(libtriton())
            applied = getattr(startup, "applied", {})
            for result in getattr(startup, "results", []):
                if not result.get("ok"):
                    continue
                if run_time and applied.get(result["path"], "") is not None:
                    continue  # extend_with failed (warned) or never ran
                info = NativePluginInfo.from_dict(result["info"])
                if info.path not in self._loaded:
                    self._record(info)

    def register(self, info: NativePluginInfo) -> None:
        """Record a library as loaded (by :func:`tritonx.native.load.load_native`)."""
        with self._lock:
            self._record(info)

    def _record(self, info: NativePluginInfo) -> None:
        self._loaded[info.path] = info
        if self._names is not None:
            self._names.add_natives(self._passes_of(info))

    def _passes_of(self, info: NativePluginInfo) -> Iterator[NativePass]:
        """What the names table gets for one library: each pass, its spellings, and how to find its adder."""
        triton = find_triton()
        if triton is None:
            return
        loading = native_loading(triton.version)
        for pass_name in info.pass_names:
            attribute = loading.pass_attribute(pass_name)
            resolve = functools.partial(_adder, info, pass_name, attribute, loading)
            yield NativePass(pass_name, (attribute, f"passes.plugin.{attribute}"), resolve)

    def get(self, path: str | os.PathLike[str]) -> NativePluginInfo | None:
        self.sync()
        with self._lock:
            return self._loaded.get(os.path.abspath(os.path.expanduser(os.fspath(path))))

    def loaded_natives(self) -> list[NativePluginInfo]:
        """Every native plugin library loaded in this process, in load order."""
        self.sync()
        with self._lock:
            return list(self._loaded.values())

    def native_passes(self) -> list[str]:
        """Names of the passes the loaded native plugins declare (what pipelines may insert by name)."""
        names: list[str] = []
        for info in self.loaded_natives():
            names.extend(n for n in info.pass_names if n not in names)
        return names

    def find_pass(self, name: str) -> NativePassAdder | None:
        """The adder of the pass ``name`` declared by a loaded native plugin, or None if none declares it.

        Raises :class:`PluginLoadError` (check ``load``) when a loaded plugin declares the pass but Triton
        has no binding for it, which means Triton never loaded the library.
        """
        for info in self.loaded_natives():
            for native in self._passes_of(info):
                if name in (native.name, *native.aliases):
                    return native.resolve()
        return None


def _adder(info: NativePluginInfo, pass_name: str, attribute: str, loading: NativeLoading) -> NativePassAdder:
    """The adder of one declared native pass; raises naming the plugin when Triton has no binding for it."""
    from ..compat import libtriton

    fn = getattr(libtriton().passes.plugin, attribute, None)
    if fn is None:
        hint = (
            "Triton 3.7/3.8 load native plugins only when triton is first imported: name it in "
            "TRITONX_NATIVE_PLUGINS before the interpreter starts"
            if loading.reads_environment
            else "its loading through passes.plugin.extend_with failed or never ran"
        )
        raise PluginLoadError(
            f"native plugin {info.plugin_name!r} ({info.path}) declares pass {pass_name!r} but Triton "
            f"has no passes.plugin.{attribute}: the library is not loaded in Triton; {hint}",
            path=info.path,
            check="load",
        )
    return NativePassAdder(info, pass_name, attribute, fn)

